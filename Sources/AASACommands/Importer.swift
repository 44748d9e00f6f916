import AASACore
import AASAClient
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// `aasa import`'s work (docs/import.md): each domain's four association files fetched as
/// Apple's bot fetches them, validated, and written where they go.
package struct Importer: Sendable {
    /// One domain to import: its host, and where to connect instead of resolving it.
    package struct Domain: Sendable {
        package var host: String
        package var connectTo: [SocketAddress]?

        package init(host: String, connectTo: [SocketAddress]?) {
            self.host = host
            self.connectTo = connectTo
        }
    }

    package struct Settings: Sendable {
        package var destination: ImportDestination
        package var replace = false
        package var dryRun = false
        package var caFile: String?
        package var timeoutSeconds: Double = 10
        /// Domains at a time.
        package var parallel = 16

        package init(destination: ImportDestination) {
            self.destination = destination
        }
    }

    /// How far a run is, for the progress line.
    package struct Progress: Sendable {
        package var done = 0
        package var imported = 0
        package var failed = 0
    }

    package let settings: Settings

    package init(settings: Settings) {
        self.settings = settings
    }

    /// Imports every domain on a pool of ``Settings/parallel`` threads, a domain's four files
    /// fetched at once (a domain that never answers costs one time-out, not four); the results
    /// come back in the domains' order. `progress` is told after each domain.
    package func run(_ domains: [Domain], progress: Locked<Progress>) -> [ImportedDomain] {
        let results = Locked<[ImportedDomain?]>(Array(repeating: nil, count: domains.count))
        let next = Locked(0)
        let threads = (0..<min(settings.parallel, domains.count)).map { _ in
            startThread { [self] in
                while let i = next.withLock({ n -> Int? in n < domains.count ? { n += 1; return n - 1 }() : nil }) {
                    let domain = importDomain(domains[i])
                    results.withLock { $0[i] = domain }
                    progress.withLock { p in
                        p.done += 1
                        p.imported += domain.files.count { $0.result == .imported }
                        p.failed += domain.files.count { $0.result == .failed }
                    }
                }
            }
        }
        for t in threads { pthread_join(t, nil) }
        return results.withLock { $0.map { $0! } }
    }

    /// The four files of one domain, each on a thread of its own.
    func importDomain(_ domain: Domain) -> ImportedDomain {
        let kinds = AssociationFileKind.allCases
        let files = Locked<[ImportedFile?]>(Array(repeating: nil, count: kinds.count))
        let others = kinds.indices.dropFirst().map { i in
            startThread { [self] in
                let file = importFile(kinds[i], of: domain)
                files.withLock { $0[i] = file }
            }
        }
        let first = importFile(kinds[0], of: domain)
        files.withLock { $0[0] = first }
        for t in others { pthread_join(t, nil) }
        return ImportedDomain(host: domain.host, files: files.withLock { $0.map { $0! } })
    }

    /// Fetch, validate, compare with what is there, write.
    func importFile(_ kind: AssociationFileKind, of domain: Domain) -> ImportedFile {
        var options = AssociationFetch.Options()
        options.caFile = settings.caFile
        options.connectTo = domain.connectTo
        options.timeoutSeconds = settings.timeoutSeconds
        let fetched = AssociationFetch(options: options).fetch(kind, from: domain.host)
        var file = ImportedFile(kind: kind, result: .failed, url: fetched.url, redirects: fetched.redirects)
        let body: [UInt8]
        switch fetched.outcome {
        case .absent(let why):
            file.result = .absent
            file.note = why
            return file
        case .failed(let why):
            file.note = why
            return file
        case .found(let b, _):
            body = b
        }
        file.bytes = body.count
        var notes: [String] = []
        if fetched.fromLegacyPath {
            notes.append("found only at the legacy \(AssociationFileKind.legacyAASAPath): Apple's CDN reads \(kind.urlPath), which the destination serves it at")
        }
        if !fetched.redirects.isEmpty {
            notes.append("after \(counted(fetched.redirects.count, "redirect")) (\(fetched.redirects.joined(separator: " → "))), which Apple's CDN does not follow: the destination serves it on \(domain.host) itself")
        }

        let validated = AssociationFile(kind: kind, bytes: body)
        file.diagnostics = validated.diagnostics.map(AdminAnswer.Finding.init)
        file.unlisted = validated.unlistedCount
        guard validated.isValid else {
            file.result = .invalid
            file.detail = "\(counted(validated.errorCount, "error")), \(counted(validated.warningCount, "warning"))"
            file.note = notes.isEmpty ? nil : notes.joined(separator: "; ")
            return file
        }
        file.detail = "\(grouped(body.count)) bytes" + (Importer.contents(validated).map { ": " + $0 } ?? "")
        if validated.warningCount > 0 { file.detail! += ", \(counted(validated.warningCount, "warning"))" }

        let destination = settings.destination
        let place = destination.place(domain.host, kind)
        let held: ImportDestination.Held?
        do { held = try destination.held(domain.host, kind) } catch {
            file.result = .failed
            file.note = (notes + [error.message]).joined(separator: "; ")
            return file
        }
        func finish(_ result: ImportResult, _ note: String?) -> ImportedFile {
            file.result = result
            let all = notes + (note.map { [$0] } ?? [])
            file.note = all.isEmpty ? nil : all.joined(separator: "; ")
            return file
        }
        if let held, held.bytes == body {
            file.version = held.version
            return finish(.unchanged, "\(place) already holds these bytes")
        }
        if let held, !settings.replace {
            file.version = held.version
            return finish(.exists, "\(place) holds another version (\(held.version)); --replace overwrites it")
        }
        if settings.dryRun {
            return finish(.imported, "--dry-run: not written to \(place)" + (held == nil ? "" : " (it would replace version \(held!.version))"))
        }
        switch destination.write(domain.host, kind, body, replace: settings.replace) {
        case .written(let version):
            file.version = version
            return finish(.imported, held == nil ? nil : "replaced version \(held!.version)")
        case .exists:
            return finish(.exists, "\(place) was written meanwhile (the server answered 412 to If-None-Match: *); --replace overwrites it")
        case .refused(let findings):
            file.diagnostics = findings
            file.unlisted = 0
            file.detail = "\(counted(findings.count { $0.severity == "error" }, "error")), \(counted(findings.count { $0.severity == "warning" }, "warning"))"
            return finish(.invalid, "the server refused the file (422)")
        case .failed(let why):
            return finish(.failed, why)
        }
    }

    /// What a valid file holds, in a few words: an AASA file's services, a statement count, an
    /// origin count; nil for Apple Pay's opaque file.
    static func contents(_ file: AssociationFile) -> String? {
        switch file.kind {
        case .aasa:
            return SiteCheck.services(file.aasa?.document)
        case .assetLinks:
            return JSONParser.parse(file.bytes).value?.arrayValue.map { counted($0.count, "statement") }
        case .webAuthn:
            return JSONParser.parse(file.bytes).value?["origins"]?.arrayValue.map { counted($0.count, "origin") }
        case .merchantID:
            return nil
        }
    }
}
