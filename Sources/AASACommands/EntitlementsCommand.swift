import AASACore
import ArgumentParser
import AASATransport
import AASAClient

package struct EntitlementsCommand: ParsableCommand {
    package init() {}

    static package let configuration = CommandConfiguration(
        commandName: "entitlements",
        abstract: "Check an app's associated-domains entitlements against the files that must back them.",
        discussion: """
        FILE is an .entitlements property list (XML) or a provisioning profile (.mobileprovision); \
        or give the strings with --entitlement. Each is checked for syntax, then against the file \
        in --config DIR (the site the server would serve; for *.example.com the file of \
        example.com, as iOS fetches it) or on the live host with --live (as aasa check fetches it, \
        without the CDN). Results: ok, invalid-entitlement, no-file, invalid-file, no-service, \
        app-not-listed, or with --live unreachable (DNS, connect, TLS, time-out). Exit status: 0 when every entitlement is ok, 1 otherwise, 2 bad usage or \
        an unreadable FILE.
        """
    )

    @Argument(help: "An .entitlements or .mobileprovision file.")
    package var file: String?

    @Option(help: "An entitlement string, such as applinks:example.com?mode=developer; repeatable.")
    package var entitlement: [String] = []

    @Option(help: "The app ID that every entitlement's file must list.")
    package var app: String

    @Option(help: "A config directory: the files the server would serve.")
    package var config: String?

    @Flag(help: "Fetch each file from its live host instead.")
    var live = false

    @Option(help: "With --live: connect to ADDR:PORT instead; SNI and Host stay the host.")
    package var connect: String?

    @Option(help: "With --live: trust the CAs in this PEM file instead of the system store.")
    package var cacert: String?

    @Option(help: "With --live: seconds for each exchange (default: 10).")
    package var timeout: Double?

    @Option(help: "Output format.")
    package var format: OutputFormat = .text

    package func validate() throws {
        guard (file == nil) != entitlement.isEmpty else { throw ValidationError("give FILE or --entitlement (one of them)") }
        guard (config == nil) == live else { throw ValidationError("give --config DIR or --live (one of them)") }
        if !live, connect != nil || cacert != nil { throw ValidationError("--connect and --cacert go with --live") }
        if let cacert, (try? InputFiles.read(cacert, limit: 16 * 1024 * 1024)) == nil {
            throw ValidationError("--cacert \(cacert): cannot read the file")
        }
        guard timeout ?? 10 > 0 else { throw ValidationError("--timeout must be more than 0") }
    }

    package func run() throws {
        let strings = try file.map(readEntitlements) ?? entitlement
        var rows: [(text: String, domain: AssociatedDomain?, parseError: AssociatedDomain.ParseError?, verdict: EntitlementVerdict)] = []
        var domains: [(String, AssociatedDomain)] = []
        for text in strings {
            do {
                domains.append((text, try AssociatedDomain(parsing: text)))
            } catch {
                rows.append((text, nil, error, EntitlementVerdict(.invalidEntitlement, error.message)))
            }
        }
        let judged = live ? try judgeLive(domains) : try judgeConfig(domains)
        rows += judged.map { ($0.0, $0.1, nil, $0.2) }
        // In the order the entitlements were given.
        let order = Dictionary(strings.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        rows.sort { order[$0.text, default: 0] < order[$1.text, default: 0] }

        switch format {
        case .text:
            // Messages may quote a live host's answer: control characters are escaped.
            FileHandleOutput.standardOutput.write(rows.map { "\($0.text): \($0.verdict.result.rawValue): \($0.verdict.message)".escapingControlCharacters + "\n" }.joined())
        case .json:
            var w = JSONWriter()
            w.beginObject()
            w.key("app"); w.value(app)
            w.key("results")
            w.beginArray()
            for row in rows {
                w.beginObject()
                w.key("entitlement"); w.value(row.text)
                w.key("service"); w.value(row.domain?.service.rawValue ?? row.parseError?.service)
                w.key("host"); w.value(row.domain?.hostPattern ?? row.parseError?.host)
                w.key("mode"); w.value(row.domain?.mode ?? row.parseError?.mode)
                w.key("result"); w.value(row.verdict.result.rawValue)
                w.key("message"); w.value(row.verdict.message)
                w.endObject()
            }
            w.endArray()
            w.endObject()
            FileHandleOutput.standardOutput.write(w.output + "\n")
        }
        if rows.contains(where: { $0.verdict.result != .ok }) { throw ExitCode(1) }
    }

    /// The associated-domains strings of FILE: a plist, or a CMS-signed profile around one.
    private func readEntitlements(_ path: String) throws -> [String] {
        func unreadable(_ message: String) -> ExitCode {
            FileHandleOutput.standardError.write("aasa: \(path): \(message)\n")
            return ExitCode(2)
        }
        var bytes: [UInt8]
        do { bytes = try InputFiles.read(path, limit: 16 * 1024 * 1024) } catch { throw unreadable("\(error)") }
        // A DER SEQUENCE: a provisioning profile.
        if bytes.first == 0x30 {
            do { bytes = try ProvisioningProfile.content(ofDER: bytes) } catch { throw unreadable("\(error)") }
        }
        do {
            guard let strings = try PropertyList.associatedDomains(in: try PropertyList.parse(bytes)) else {
                throw unreadable("no \(PropertyList.associatedDomainsKey) key: the app has no Associated Domains entitlement")
            }
            return strings
        } catch let error as PropertyList.ParseError {
            throw unreadable("not a property list this tool reads: \(error)")
        }
    }

    /// Each entitlement against the site the server would serve for its host.
    private func judgeConfig(_ domains: [(String, AssociatedDomain)]) throws -> [(String, AssociatedDomain, EntitlementVerdict)] {
        guard let config else { return [] }
        let (_, index) = try InputFiles.siteIndex(config: config)
        return domains.map { text, domain in
            let host = domain.fileHost
            // The server's lookup: exact, then wildcard, and a wildcard folder also serves its base
            // name when that has no folder of its own (docs/serving.md, "Config directory").
            guard let file = index.lookup(host)?.value else {
                let place = "\(config)/\(host)/apple-app-site-association"
                let why = domain.isWildcard ? "; iOS fetches the file for *.\(host) from \(host) itself (TN3155)" : ""
                return (text, domain, EntitlementVerdict(.noFile, "no site in \(config) serves \(host)\(why): create \(place)"))
            }
            let aasa: AASAFile
            do {
                aasa = AASAFile(bytes: try InputFiles.read(file))
            } catch {
                return (text, domain, EntitlementVerdict(.noFile, "\(error)"))
            }
            return (text, domain, EntitlementVerdict.judge(domain, app: app, file: aasa, source: file))
        }
    }

    /// Each entitlement against its live host, fetched as `aasa check` does, without the CDN.
    private func judgeLive(_ domains: [(String, AssociatedDomain)]) throws -> [(String, AssociatedDomain, EntitlementVerdict)] {
        var options = SiteCheck.Options()
        options.cdnBase = nil
        options.caFile = cacert
        options.timeoutSeconds = timeout ?? 10
        if let connect { options.connectTo = [try CheckCommand.address(connect)] }
        var hosts: [String] = []
        for (_, d) in domains where !hosts.contains(d.fileHost) { hosts.append(d.fileHost) }
        let reports = Dictionary(uniqueKeysWithValues: zip(hosts, SiteCheck(options: options).run(hosts)))
        return domains.map { text, domain in
            let report = reports[domain.fileHost]!
            // Developer mode fetches straight from the server and accepts a certificate the
            // system does not trust, as long as it is valid (docs/aasa-reference.md §4.3).
            let untrustedIsFine = domain.mode?.hasPrefix("developer") == true && report.certificateIsOnlyUntrusted
            if let failed = report.checks.first(where: {
                ["resolve", "tls", "status"].contains($0.name) && $0.status == .fail && !($0.name == "tls" && untrustedIsFine)
            }) {
                // No HTTP answer (or a certificate a device refuses): the host cannot be reached,
                // which says nothing of whether it has the file.
                let cause = report.unreachableCause ?? (failed.name == "tls" ? "tls" : nil)
                if let cause {
                    return (text, domain, EntitlementVerdict(.unreachable, "\(report.url) cannot be reached (\(cause)): \(failed.name): \(failed.message)"))
                }
                return (text, domain, EntitlementVerdict(.noFile, "\(report.url): \(failed.name): \(failed.message)"))
            }
            guard let file = report.file else {
                let failed = report.checks.first { $0.status == .fail }
                return (text, domain, EntitlementVerdict(.noFile, "\(report.url): \(failed.map { "\($0.name): \($0.message)" } ?? "not read")"))
            }
            return (text, domain, EntitlementVerdict.judge(domain, app: app, file: file, source: report.url))
        }
    }
}
