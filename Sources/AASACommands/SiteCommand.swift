import AASACore
import AASAClient
import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `aasa site put|get|rm|ls`: a site's files written, read and deleted through the admin
/// listener's write API, and the sites listed from its `/status` (docs/platforms.md, "aasa site").
package struct SiteCommand: ParsableCommand {
    package init() {}

    static package let configuration = CommandConfiguration(
        commandName: "site",
        abstract: "Write, read and delete a site's files through a server's admin API, and list its sites.",
        discussion: """
        HOST is a site name: a host name (example.com) or a wildcard site (*.example.org). FILE is \
        apple-app-site-association (the default), assetlinks.json, apple-developer-merchantid-domain-association \
        or webauthn, or their short names aasa, assetlinks, merchantid, webauthn. Exit status: 0 done, \
        1 the server refused (a 422 prints the findings as aasa validate does; 404, 401, 412, ... print \
        the server's message), 2 bad usage or no answer from the server (refused, unresolved, TLS, time-out).
        """,
        subcommands: [Put.self, Get.self, Remove.self, List.self]
    )

    /// `aasa site` alone is bad usage (exit 2), not a request for help.
    package func run() throws {
        throw ValidationError("give a subcommand: put, get, rm or ls")
    }
}

/// Where the admin listener is and how to reach it, shared by every `site` subcommand.
struct AdminOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The admin listener: http://HOST:PORT, https://HOST:PORT (a path after it is kept as a prefix) or ADDR:PORT (default: AASA_ADMIN, else http://127.0.0.1:9090).", valueName: "url"))
    var admin: String?

    @Option(name: .customLong("token-file"), help: ArgumentHelp("A file holding the API token: its first line that is not blank or a # comment, NAME:TOKEN or TOKEN (default: AASA_TOKEN_FILE).", valueName: "file"))
    var tokenFile: String?

    @Option(help: ArgumentHelp("Trust the CAs in this PEM file instead of the system store (an https:// admin listener with a private CA).", valueName: "file"))
    var cacert: String?

    @Option(help: ArgumentHelp("Seconds for each request: connect, handshake and answer (default 30).", valueName: "seconds"))
    var timeout: Double = 30

    /// The variables `--admin` and `--token-file` fall back to; an empty one counts as unset.
    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let s = String(cString: value)
        return s.isEmpty ? nil : s
    }

    /// What `serve --admin` takes to mean "no admin listener": nothing to talk to.
    static let off: Set<String> = ["off", "none"]

    /// The admin listener's base URL, as given or from the environment.
    func baseURL() throws -> HTTPURL {
        let (text, source) = admin.map { ($0, "--admin") } ?? AdminOptions.environment("AASA_ADMIN").map { ($0, "AASA_ADMIN") }
            ?? ("http://127.0.0.1:9090", "--admin")
        if AdminOptions.off.contains(text.lowercased()) {
            throw ValidationError("the admin listener is off (\(source)=\(text)): give --admin URL, the address serve's --admin listens on")
        }
        do { return try AdminClient.baseURL(text) } catch { throw ValidationError("\(source): \(error)") }
    }

    /// The token from `--token-file` or `AASA_TOKEN_FILE`, nil when neither names a file.
    func token() throws -> String? { try AdminOptions.token(file: tokenFile) }

    /// The token from `file` (`--token-file`), else from `AASA_TOKEN_FILE`, nil when neither
    /// names a file; `aasa import --admin` reads it the same way.
    static func token(file: String?) throws -> String? {
        let (path, source) = file.map { ($0, "--token-file") } ?? AdminOptions.environment("AASA_TOKEN_FILE").map { ($0, "AASA_TOKEN_FILE") } ?? ("", "")
        if path.isEmpty { return nil }
        let bytes: [UInt8]
        do { bytes = try InputFiles.read(path, limit: 1024 * 1024) } catch { throw ValidationError("\(source): \(error)") }
        do {
            return try AdminToken.token(fromFileText: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw ValidationError("\(source) \(path): \(error)")
        }
    }

    /// A client for the admin listener; `authorized` reads the token (`ls` needs none).
    func client(authorized: Bool) throws -> (AdminClient, sentToken: Bool) {
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0") }
        let base = try baseURL()
        let token = authorized ? try token() : nil
        if let cacert, (try? InputFiles.read(cacert, limit: 16 * 1024 * 1024)) == nil {
            throw ValidationError("--cacert \(cacert): cannot read the file")
        }
        var configuration = HTTPSClient.Configuration(timeoutSeconds: timeout, caFile: cacert, userAgent: "aasa/\(aasaVersion)")
        // A stored file may exceed the write limit (a row written with SQL), and a /status page
        // with rejected files lists their findings.
        configuration.maxBodyBytes = 32 * 1024 * 1024
        do {
            return (try AdminClient(base: base, token: token, configuration: configuration), token != nil)
        } catch {
            throw ValidationError("--cacert: \(error)")
        }
    }
}

/// What the subcommands share: reading HOST, FILE and `--if-match`, and reporting an answer
/// that says no or no answer at all.
extension SiteCommand {
    /// No HTTP answer: the server cannot be reached, or its answer broke off. Exit 2, as for bad
    /// usage: the caller learned nothing the server decided.
    static func unreachable(_ command: String, _ client: AdminClient, _ error: HTTPClientError) -> ExitCode {
        let what = error.phase == .response && !error.isTimeout ? "no complete answer from" : "cannot reach"
        FileHandleOutput.standardError.write("aasa \(command): \(what) the admin listener at \(client.base): \(error.message.escapingControlCharacters)\n")
        return ExitCode(2)
    }

    /// An answer that says no: its status and the JSON error's message (the start of the body
    /// when it has none) on stderr, exit 1. A 401 says whether a token was sent at all.
    static func refused(_ command: String, _ subject: String, _ response: HTTPResponse, sentToken: Bool) -> ExitCode {
        var message = "\(subject): \(response.head.statusText)"
        if let error = AdminAnswer.errorMessage(response.body) {
            message += ": " + error
        } else if !response.body.isEmpty {
            message += ": " + String(decoding: response.body.prefix(200), as: UTF8.self)
        }
        if response.status == 401, !sentToken {
            message += " (no token was sent: give --token-file FILE or set AASA_TOKEN_FILE)"
        }
        FileHandleOutput.standardError.write("aasa \(command): \(message.escapingControlCharacters)\n")
        return ExitCode(1)
    }

    /// A site name as the server takes it: lower case, no trailing dot; `%2A.` (the form in
    /// a path) is read as `*.`.
    static func site(_ text: String) throws -> SiteName {
        var name = text.lowercased()
        if name.hasPrefix("%2a.") { name = "*." + name.dropFirst(4) }
        while name.hasSuffix(".") { name.removeLast() }
        guard let site = SiteName(name) else {
            throw ValidationError("\(text) is not a site name: give a host name such as example.com (IDN as punycode, no scheme, port or path), or *.example.org for a wildcard site")
        }
        return site
    }

    /// An association file by its name or its short name (`validate --kind`'s).
    static func file(_ text: String) throws -> AssociationFileKind {
        guard let kind = AssociationFileKind.allCases.first(where: { $0.fileName == text || $0.rawValue == text }) else {
            let names = AssociationFileKind.allCases.map(\.fileName).joined(separator: ", ")
            throw ValidationError("\(text) is not an association file: give one of \(names) (or aasa, assetlinks, merchantid, webauthn)")
        }
        return kind
    }

    /// `--if-match`: an entity tag as the server sent it (`"3f5a…"`), the bare version that
    /// `put` and `/status` print (quoted here), or `*`.
    static func entityTag(_ text: String?) throws -> String? {
        guard let text else { return nil }
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw ValidationError("--if-match: an entity tag is visible ASCII with no spaces, such as the version put prints")
        }
        if text == "*" || text.hasPrefix("\"") || text.hasPrefix("W/\"") { return text }
        return "\"" + text + "\""
    }
}

extension SiteCommand {
    struct Put: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "put",
            abstract: "Store a site's file: the server validates it, then serves it at once.",
            discussion: """
            The file is read from --file PATH, or from standard input (--file -, or no --file with \
            input piped in). Without FILE the kind comes from the --file name when it is an association \
            file's name, else apple-app-site-association. Prints HOST/FILE: 201 created (or 200 replaced), \
            version V. A file with errors is refused (422): its findings are printed as aasa validate \
            prints them, PATH:LINE:COLUMN: error|warning: MESSAGE [CODE], then the summary line, and \
            the exit status is 1.
            """
        )

        @Argument(help: "The site: example.com, or *.example.org.")
        var host: String

        @Argument(help: "The association file (default: by the --file name, else apple-app-site-association).")
        var file: String?

        @Option(name: .customLong("file"), help: ArgumentHelp("The file to send; - for standard input.", valueName: "path"))
        var path: String?

        @Option(name: .customLong("if-match"), help: ArgumentHelp("Store only if the stored file has this version (else 412); * for any existing one.", valueName: "etag"))
        var ifMatch: String?

        @OptionGroup var options: AdminOptions

        /// The kind a local file's name says (`config/example.com/assetlinks.json`), if any.
        static func kind(named path: String) -> AssociationFileKind? {
            let name = path.split(separator: "/").last.map(String.init) ?? path
            return AssociationFileKind.allCases.first { $0.fileName == name }
        }

        func run() throws {
            let site = try SiteCommand.site(host)
            let source = path
            let kind = try file.map(SiteCommand.file) ?? source.flatMap(Put.kind(named:)) ?? .aasa
            let ifMatch = try SiteCommand.entityTag(ifMatch)
            let subject = "\(site)/\(kind.fileName)"
            let body: [UInt8]
            let fromStandardInput = source == nil || source == "-"
            if source == nil, isatty(0) == 1 {
                throw ValidationError("give the file with --file PATH, or pipe it in (--file - reads standard input)")
            }
            do {
                body = try InputFiles.read(fromStandardInput ? "/dev/stdin" : source!, limit: 16 * 1024 * 1024)
            } catch {
                throw ValidationError("\(fromStandardInput ? "standard input" : "--file"): \(error)")
            }
            let (client, sentToken) = try options.client(authorized: true)

            let response: HTTPResponse
            do throws(HTTPClientError) { response = try client.put(site, kind, body: body, ifMatch: ifMatch) } catch { throw SiteCommand.unreachable("site put", client, error) }
            switch response.status {
            case 200, 201:
                let version = AdminAnswer.version(response.body) ?? response["ETag"].map { $0.trimmingQuotes } ?? "unknown"
                let what = response.status == 201 ? "created" : "replaced"
                FileHandleOutput.standardOutput.write("\(subject): \(response.status) \(what), version \(version)\n".escapingControlCharacters(keepingFinalNewline: true))
            case 422:
                guard let findings = AdminAnswer.findings(response.body) else {
                    throw SiteCommand.refused("site put", subject, response, sentToken: sentToken)
                }
                let label = fromStandardInput ? subject : source!
                var text = ""
                for f in findings {
                    text += ValidationReport.line(path: label, line: f.line, column: f.column, severity: f.severity.escapingControlCharacters,
                                                  message: f.message.escapingControlCharacters, code: f.code.escapingControlCharacters)
                }
                text += ValidationReport.summary(errors: findings.count { $0.severity == "error" }, warnings: findings.count { $0.severity == "warning" }, files: 1)
                FileHandleOutput.standardOutput.write(text)
                FileHandleOutput.standardError.write("aasa site put: \(subject): the server refused the file (422); nothing was stored\n")
                throw ExitCode(1)
            default:
                throw SiteCommand.refused("site put", subject, response, sentToken: sentToken)
            }
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Print a site's stored file, byte for byte."
        )

        @Argument(help: "The site: example.com, or *.example.org.")
        var host: String

        @Argument(help: "The association file (default: apple-app-site-association).")
        var file: String?

        @OptionGroup var options: AdminOptions

        func run() throws {
            let site = try SiteCommand.site(host)
            let kind = try file.map(SiteCommand.file) ?? .aasa
            let (client, sentToken) = try options.client(authorized: true)
            let response: HTTPResponse
            do throws(HTTPClientError) { response = try client.get(site, kind) } catch { throw SiteCommand.unreachable("site get", client, error) }
            guard response.status == 200 else { throw SiteCommand.refused("site get", "\(site)/\(kind.fileName)", response, sentToken: sentToken) }
            FileHandleOutput.standardOutput.write(response.body)
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Delete a site's file, or without FILE the site and all its files.",
            discussion: "A site with no file left is gone: the server answers 404 for it, as for any unknown host."
        )

        @Argument(help: "The site: example.com, or *.example.org.")
        var host: String

        @Argument(help: "The association file to delete (default: the whole site).")
        var file: String?

        @Option(name: .customLong("if-match"), help: ArgumentHelp("Delete only if the stored file has this version (else 412).", valueName: "etag"))
        var ifMatch: String?

        @OptionGroup var options: AdminOptions

        func run() throws {
            let site = try SiteCommand.site(host)
            let kind = try file.map(SiteCommand.file)
            let ifMatch = try SiteCommand.entityTag(ifMatch)
            let (client, sentToken) = try options.client(authorized: true)
            let subject = kind.map { "\(site)/\($0.fileName)" } ?? "\(site)"
            let response: HTTPResponse
            do throws(HTTPClientError) { response = try client.delete(site, kind, ifMatch: ifMatch) } catch { throw SiteCommand.unreachable("site rm", client, error) }
            guard (200..<300).contains(response.status) else { throw SiteCommand.refused("site rm", subject, response, sentToken: sentToken) }
            FileHandleOutput.standardOutput.write("\(subject): \(response.status) deleted\(kind == nil ? " (the site and all its files)" : "")\n")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls",
            abstract: "List the server's sites: HOST STATE FILE=STATE..., one site a line.",
            discussion: """
            In byte order of host, from the admin listener's /status (no token needed), page by page. \
            STATE is serving, rejected or stale; each file of the site follows as NAME=STATE, fields \
            separated by one space (awk '$2 != "serving"' lists the sites that need attention).
            """
        )

        @Option(help: "Only sites in this state: serving, rejected or stale.")
        var state: String?

        @OptionGroup var options: AdminOptions

        func run() throws {
            if let state, !["serving", "rejected", "stale"].contains(state) {
                throw ValidationError("--state: expected serving, rejected or stale, got \(state)")
            }
            let (client, _) = try options.client(authorized: false)
            var after: String?
            var listed = 0
            var bound: Int?
            while true {
                let response: HTTPResponse
                do throws(HTTPClientError) { response = try client.status(after: after, state: state) } catch { throw SiteCommand.unreachable("site ls", client, error) }
                guard response.status == 200 else { throw SiteCommand.refused("site ls", "/status", response, sentToken: false) }
                guard let page = AdminAnswer.statusPage(response.body) else {
                    FileHandleOutput.standardError.write("aasa site ls: \(client.base) answered /status with something other than its JSON\n")
                    throw ExitCode(1)
                }
                var text = ""
                for site in page.sites {
                    text += ([site.host, site.state] + site.files.map { "\($0.name)=\($0.state)" }).joined(separator: " ").escapingControlCharacters + "\n"
                }
                FileHandleOutput.standardOutput.write(text)
                listed += page.sites.count
                // A peer's `next` must move forward, and the sites listed stay near the count the
                // first page announced (sites added meanwhile aside): a server that keeps saying
                // "more" cannot keep this loop going.
                if bound == nil { bound = (page.total ?? 0) + 10 * AdminClient.statusPageSize }
                guard let next = page.next else { return }
                guard next > (after ?? ""), listed <= bound! else {
                    FileHandleOutput.standardError.write("aasa site ls: /status kept announcing more sites after \(listed); stopped\n")
                    throw ExitCode(1)
                }
                after = next
            }
        }
    }
}

extension String {
    fileprivate var trimmingQuotes: String {
        var s = Substring(self)
        if s.hasPrefix("W/") { s = s.dropFirst(2) }
        if s.hasPrefix("\""), s.hasSuffix("\""), s.count >= 2 { s = s.dropFirst().dropLast() }
        return String(s)
    }

    fileprivate func escapingControlCharacters(keepingFinalNewline: Bool) -> String {
        guard keepingFinalNewline, hasSuffix("\n") else { return escapingControlCharacters }
        return String(dropLast()).escapingControlCharacters + "\n"
    }
}
