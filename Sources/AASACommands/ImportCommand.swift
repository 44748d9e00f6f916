import AASACore
import AASAClient
import AASATransport
import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `aasa import`: the association files live on domains today, fetched as Apple's bot fetches
/// them and written into site folders or through a server's write API (docs/import.md).
package struct ImportCommand: ParsableCommand {
    package init() {}

    static package let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import the association files live on domains into site folders or a server's write API.",
        discussion: """
        For each domain, apple-app-site-association (at /.well-known/, else at the legacy root path), \
        assetlinks.json, apple-developer-merchantid-domain-association and webauthn are fetched over \
        HTTPS as Apple's bot (AASA-Bot/1.0.0), TLS verified; redirects are followed (at most 3, HTTPS \
        only) and reported. Each file ends imported, unchanged, exists, invalid, absent or failed; \
        nothing that does not validate is written. Exit status: 0 when no file is invalid or failed, \
        1 otherwise, 2 bad usage (no destination or both, a missing DIR, an --admin that cannot be \
        reached or refuses the token). See docs/import.md.
        """
    )

    @Argument(help: "Host names (no scheme, no path); or give --domains.")
    var hosts: [String] = []

    @Option(help: ArgumentHelp("A domains file in aasa monitor's format: one domain a line, # comments, connect=ADDR:PORT honoured, app= ignored.", valueName: "file"))
    var domains: String?

    @Option(help: ArgumentHelp("Write into this config directory, DIR/HOST/FILE (DIR must exist).", valueName: "dir"))
    var to: String?

    @Option(help: ArgumentHelp("Write through this server's admin API: http://HOST:PORT, https://HOST:PORT or ADDR:PORT.", valueName: "url"))
    var admin: String?

    @Option(name: .customLong("token-file"), help: ArgumentHelp("With --admin: the API token's file (default: AASA_TOKEN_FILE).", valueName: "file"))
    var tokenFile: String?

    @Flag(help: "Overwrite a file the destination holds with other bytes (else: exists).")
    var replace = false

    @Flag(name: .customLong("dry-run"), help: "Write nothing; report what would happen.")
    var dryRun = false

    @Option(help: ArgumentHelp("Trust the CAs in this PEM file besides the system store (origins and --admin).", valueName: "file"))
    var cacert: String?

    @Option(help: ArgumentHelp("Connect to ADDR:PORT instead of each domain's address on 443; SNI and Host stay the domain.", valueName: "addr:port"))
    var connect: String?

    @Option(help: ArgumentHelp("Seconds for each file: connect, handshake, response, redirects (default: 10).", valueName: "seconds"))
    var timeout: Double = 10

    @Option(help: ArgumentHelp("Domains fetched at a time (default: 16).", valueName: "n"))
    var parallel: Int = 16

    @Option(help: "Output format.")
    var format: OutputFormat = .text

    /// Requests to the write API, which answers at once or not at all.
    static let adminTimeoutSeconds = 30.0

    package func run() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be more than 0 and at most 3600") }
        guard (1...1024).contains(parallel) else { throw ValidationError("--parallel must be from 1 to 1024") }
        if let cacert, (try? InputFiles.read(cacert, limit: 16 * 1024 * 1024)) == nil {
            throw ValidationError("--cacert \(cacert): cannot read the file")
        }
        let list = try domainList()
        var settings = Importer.Settings(destination: try destination(first: list.first?.host))
        settings.replace = replace
        settings.dryRun = dryRun
        settings.caFile = cacert
        settings.timeoutSeconds = timeout
        settings.parallel = parallel

        let progress = Locked(Importer.Progress())
        let line = isatty(2) == 1 ? ProgressLine(total: list.count, progress: progress) : nil
        let domains = Importer(settings: settings).run(list, progress: progress)
        line?.stop()
        switch format {
        case .text: FileHandleOutput.standardOutput.write(ImportReport.text(domains))
        case .json: FileHandleOutput.standardOutput.write(ImportReport.json(domains))
        }
        if domains.contains(where: { $0.files.contains { $0.result.fails } }) { throw ExitCode(1) }
    }

    /// The domains from the arguments or the file; any bad one (a wildcard, a URL) is bad usage,
    /// reported with its line, before anything is fetched.
    func domainList() throws -> [Importer.Domain] {
        let connectTo = try connect.map { [try CheckCommand.address($0)] }
        switch (hosts.isEmpty, domains) {
        case (true, nil):
            throw ValidationError("give the domains: HOST... or --domains FILE")
        case (false, .some):
            throw ValidationError("give HOST... or --domains FILE, not both")
        case (false, nil):
            var seen = Set<String>()
            return try hosts.compactMap { text in
                if text.hasPrefix("*.") {
                    throw ValidationError("\(text): a wildcard cannot be fetched; import its base name (a *. site's file is served from the base name, which is where iOS fetches it)")
                }
                let host = try CheckCommand.hostName(text)
                return seen.insert(host).inserted ? Importer.Domain(host: host, connectTo: connectTo) : nil
            }
        case (true, .some(let path)):
            let bytes: [UInt8]
            do { bytes = try InputFiles.read(path, limit: 64 * 1024 * 1024) } catch { throw ValidationError("--domains: \(error)") }
            let (list, problems) = DomainList.parse(String(decoding: bytes, as: UTF8.self))
            if !problems.isEmpty {
                let lines = problems.map { "\(path):\($0.line): \($0.message)" }
                throw ValidationError("--domains: \(counted(problems.count, "bad line")), nothing imported:\n" + lines.joined(separator: "\n"))
            }
            guard !list.isEmpty else { throw ValidationError("--domains \(path): no domain in the file") }
            return try list.map { d in
                guard let c = d.connect else { return Importer.Domain(host: d.host, connectTo: connectTo) }
                do { return Importer.Domain(host: d.host, connectTo: [try CheckCommand.address(c)]) } catch {
                    throw ValidationError("\(path):\(d.line): connect=\(c) does not resolve")
                }
            }
        }
    }

    /// `--to DIR` or `--admin URL`, exactly one; the admin listener is asked once before any
    /// domain is fetched, so a wrong URL or token stops the run rather than failing every file.
    func destination(first host: String?) throws -> ImportDestination {
        switch (to, admin) {
        case (nil, nil):
            throw ValidationError("give where to write: --to DIR (site folders) or --admin URL (a server's write API)")
        case (.some, .some):
            throw ValidationError("give one destination: --to DIR or --admin URL, not both")
        case (.some(let dir), nil):
            if tokenFile != nil { throw ValidationError("--token-file goes with --admin") }
            guard InputFiles.isDirectory(dir) else { throw ValidationError("--to \(dir): no such directory (it must exist; the site folders in it are made as needed)") }
            var d = dir
            while d.count > 1, d.hasSuffix("/") { d.removeLast() }
            return .folders(d)
        case (nil, .some(let text)):
            let base: HTTPURL
            do { base = try AdminClient.baseURL(text) } catch { throw ValidationError("--admin: \(error)") }
            let token = try AdminOptions.token(file: tokenFile)
            var configuration = HTTPSClient.Configuration(timeoutSeconds: ImportCommand.adminTimeoutSeconds, caFile: cacert,
                                                          userAgent: "aasa/\(aasaVersion)")
            configuration.caFileKeepsSystemStore = true
            // A stored file may be larger than the write limit (a row written with SQL).
            configuration.maxBodyBytes = 32 * 1024 * 1024
            let client: AdminClient
            do { client = try AdminClient(base: base, token: token, configuration: configuration) } catch {
                throw ValidationError("--cacert: \(error)")
            }
            try ImportCommand.probe(client, host: host ?? "example.com", sentToken: token != nil)
            return .api(client)
        }
    }

    /// One read of the write API: no answer, or a refusal of the token (`401`, `403`), is bad usage.
    static func probe(_ client: AdminClient, host: String, sentToken: Bool) throws {
        let response: HTTPResponse
        do throws(HTTPClientError) { response = try client.get(SiteName(host)!, .aasa) } catch {
            throw ValidationError("--admin: cannot reach the admin listener at \(client.base): \(error.message.escapingControlCharacters)")
        }
        guard response.status == 401 || response.status == 403 else { return }
        var message = "--admin: the write API at \(client.base) answers \(response.head.statusText)\(ImportDestination.said(response))"
        if response.status == 401, !sentToken { message += " (no token was sent: give --token-file FILE or set AASA_TOKEN_FILE)" }
        throw ValidationError(message.escapingControlCharacters)
    }
}

/// The progress line on a terminal (stderr only when it is one): domains done of all, files
/// imported and failed, time elapsed; redrawn each second and after each domain, erased at the end.
final class ProgressLine: Sendable {
    private let total: Int
    private let progress: Locked<Importer.Progress>
    private let started = monotonicMilliseconds()
    private let running = Locked(true)
    private let thread: Locked<pthread_t?> = Locked(nil)

    init(total: Int, progress: Locked<Importer.Progress>) {
        self.total = total
        self.progress = progress
        let t = startThread { [self] in
            while running.withLock({ $0 }) {
                draw()
                for _ in 0..<4 where running.withLock({ $0 }) { usleep(250_000) }
            }
        }
        thread.withLock { $0 = t }
    }

    private func draw() {
        let p = progress.withLock { $0 }
        let seconds = (monotonicMilliseconds() - started) / 1000
        FileHandleOutput.standardError.write("\r\u{1b}[K\(p.done)/\(total) domains, \(p.imported) imported, \(p.failed) failed, \(seconds) s")
    }

    func stop() {
        running.withLock { $0 = false }
        if let t = thread.withLock({ $0 }) { pthread_join(t, nil) }
        FileHandleOutput.standardError.write("\r\u{1b}[K")
    }
}
