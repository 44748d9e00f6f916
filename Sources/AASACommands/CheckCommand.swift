import AASACore
import ArgumentParser
import AASATransport
import AASAClient

package struct CheckCommand: ParsableCommand {
    package init() {}

    static package let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check live hosts as Apple's CDN sees them, then the copy the CDN holds.",
        discussion: """
        Eight checks per host, in order: resolve, tls, status, content-type, size, validate, app, \
        cdn; each pass, warn, fail or skip. Hosts are checked concurrently, on a pool. After the \
        validate line come its findings, compiler style, with the URL as the file name. Control \
        characters a peer sent are printed escaped (\\u{1b}). Exit status: 0 when no check of any \
        host fails (warnings allowed), 1 otherwise, 2 bad usage.
        """
    )

    @Argument(help: "Host names (no scheme, no path).")
    package var hosts: [String]

    @Option(help: "An app ID that must be listed for applinks; repeatable.")
    package var app: [String] = []

    @Option(help: "Connect to ADDR:PORT instead of the host's address on 443; SNI and Host stay the host (curl's --connect-to).")
    package var connect: String?

    @Option(help: "Trust the CAs in this PEM file instead of the system store (also for --cdn-base).")
    package var cacert: String?

    @Flag(name: .customLong("no-cdn"), help: "Do not ask Apple's CDN for its copy.")
    var noCDN = false

    @Option(name: .customLong("cdn-base"), help: "The CDN's base URL (default: https://app-site-association.cdn-apple.com).")
    package var cdnBase: String?

    @Option(help: "Seconds for each exchange: connect, handshake and response (default: 10).")
    package var timeout: Double?

    @Option(help: "Output format.")
    package var format: OutputFormat = .text

    package func run() throws {
        var options = SiteCheck.Options()
        options.apps = app
        options.caFile = cacert
        let timeout = self.timeout ?? 10
        options.timeoutSeconds = timeout
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0") }
        if let connect { options.connectTo = [try CheckCommand.address(connect)] }
        if noCDN {
            options.cdnBase = nil
        } else if let cdnBase {
            do { options.cdnBase = try HTTPURL(cdnBase) } catch { throw ValidationError("--cdn-base: \(error)") }
        }
        if let cacert, (try? InputFiles.read(cacert, limit: 16 * 1024 * 1024)) == nil {
            throw ValidationError("--cacert \(cacert): cannot read the file")
        }
        let names = try hosts.map(CheckCommand.hostName)

        let reports = SiteCheck(options: options).run(names)
        switch format {
        case .text:
            FileHandleOutput.standardOutput.write(CheckCommand.text(reports))
        case .json:
            var w = JSONWriter()
            w.beginObject()
            w.key("hosts")
            w.beginArray()
            for r in reports {
                w.beginObject()
                w.key("host"); w.value(r.host)
                w.key("url"); w.value(r.url)
                w.key("ok"); w.value(r.ok)
                w.key("checks")
                CheckLine.write(r.checks, to: &w)
                w.key("diagnostics")
                w.write(r.diagnostics)
                w.key("cdn")
                w.beginObject()
                w.key("status"); w.value(r.cdn.status)
                w.key("failureReason"); w.value(r.cdn.failureReason)
                w.key("sameAsOrigin")
                if let same = r.cdn.sameAsOrigin { w.value(same) } else { w.null() }
                w.endObject()
                w.endObject()
            }
            w.endArray()
            w.endObject()
            FileHandleOutput.standardOutput.write(w.output + "\n")
        }
        if reports.contains(where: { !$0.ok }) { throw ExitCode(1) }
    }

    /// One line per check; after `validate`, one line per finding, compiler style with the URL
    /// as the file name; then the summary. Every line passes through
    /// ``Swift/String/escapingControlCharacters``: messages quote what a peer sent (a
    /// `Location`, the CDN's `Apple-Failure-Reason`), which must not reach a terminal raw.
    static package func text(_ reports: [HostReport]) -> String {
        var text = ""
        func line(_ s: String) { text += s.escapingControlCharacters + "\n" }
        for r in reports {
            for c in r.checks {
                line("\(r.host): \(c.name): \(c.status.rawValue): \(c.message)")
                guard c.name == "validate" else { continue }
                for d in r.diagnostics {
                    line("\(r.url):\(d.line):\(d.column): \(d.severity.rawValue): \(d.message) [\(d.code.rawValue)]")
                }
                if r.unlistedDiagnostics > 0 { line("\(r.url): note: \(counted(r.unlistedDiagnostics, "more finding", "more findings")) not shown") }
            }
        }
        let failed = reports.reduce(0) { $0 + $1.checks.count { $0.status == .fail } }
        let warned = reports.reduce(0) { $0 + $1.checks.count { $0.status == .warn } }
        line("\(failed) failed, \(counted(warned, "warning")) in \(counted(reports.count, "host"))")
        return text
    }

    /// `ADDR:PORT` with an IP literal (`[::1]:8443`), or `NAME:PORT` resolved now.
    static package func address(_ text: String) throws -> SocketAddress {
        if let address = try? SocketAddress(parsing: text) { return address }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
            throw ValidationError("--connect: expected ADDR:PORT, got \(text)")
        }
        do {
            return try Resolver.addresses(of: String(text[..<colon]), port: port)[0]
        } catch {
            throw ValidationError("--connect: \(error)")
        }
    }

    /// A host as a device has it: lower case, no trailing dot; a URL or a port is bad usage.
    static package func hostName(_ text: String) throws -> String {
        if text.contains("/") || text.contains(":") {
            throw ValidationError("\(text): give a host name only, such as example.com (use --connect for another address or port)")
        }
        let host = URLParts.normalizeHost(text)
        guard SiteName.isHostName(Substring(host)) else { throw ValidationError("\(text) is not a host name") }
        return host
    }
}
