import AASACore
import AASAClient
import ArgumentParser

/// `aasa cert put|get|rm|ls`: certificates written, read and deleted through the admin
/// listener's write API, and listed from its `/status` (docs/platforms.md, "aasa cert").
package struct CertCommand: ParsableCommand {
    package init() {}

    static package let configuration = CommandConfiguration(
        commandName: "cert",
        abstract: "Write, read and delete certificates through a server's admin API, and list its certificates.",
        discussion: """
        NAME is letters, digits, '.', '-' and '_' (at most 200, not starting with '.'). The server checks a \
        certificate before it stores it: the chain parses, holds certificates only, its leaf has not expired \
        and names a DNS host, and the key belongs to the leaf. Exit status: 0 done, 1 the server refused \
        (its reason is printed), 2 bad usage or no answer from the server.
        """,
        subcommands: [Put.self, Get.self, Remove.self, List.self]
    )

    package func run() throws {
        throw ValidationError("give a subcommand: put, get, rm or ls")
    }

    static func name(_ text: String) throws -> String {
        guard !text.isEmpty, text.utf8.count <= 200, !text.hasPrefix("."),
              text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2E || $0 == 0x2D || $0 == 0x5F }) else {
            throw ValidationError("\(text.escapingControlCharacters) is not a certificate name: letters, digits, '.', '-' and '_', at most 200, not starting with '.'")
        }
        return text
    }

    /// A PEM file given on the command line, as text.
    static func pem(_ path: String, _ flag: String) throws -> String {
        do {
            return String(decoding: try InputFiles.read(path == "-" ? "/dev/stdin" : path, limit: 1024 * 1024), as: UTF8.self)
        } catch {
            throw ValidationError("\(flag): \(error)")
        }
    }

    static func describe(_ entry: AdminAnswer.CertificateEntry) -> String {
        "\(entry.name) \(entry.notAfter) \(entry.dnsNames.joined(separator: ","))\(entry.source.map { " " + $0 } ?? "")".escapingControlCharacters + "\n"
    }
}

extension CertCommand {
    struct Put: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "put",
            abstract: "Store a certificate and its key: new handshakes for its names get it at once.",
            discussion: """
            Prints NAME: 201 created (or 200 replaced), then the names it covers and when it expires. \
            A certificate the server refuses (422: a key that does not belong to the leaf, an expired \
            leaf, a key inside the chain file, ...) prints the server's reason and exits 1.
            """
        )

        @Argument(help: "The certificate's name.")
        var name: String

        @Option(help: ArgumentHelp("The PEM chain, leaf first (certificates only); - for standard input.", valueName: "pemfile"))
        var chain: String

        @Option(help: ArgumentHelp("The leaf's PEM private key (PKCS #8, SEC 1 or PKCS #1).", valueName: "pemfile"))
        var key: String

        @Option(name: .customLong("if-match"), help: ArgumentHelp("Store only if the stored chain has this version (else 412).", valueName: "etag"))
        var ifMatch: String?

        @OptionGroup var options: AdminOptions

        func run() throws {
            let name = try CertCommand.name(name)
            guard !(chain == "-" && key == "-") else { throw ValidationError("--chain and --key cannot both read standard input") }
            let chainText = try CertCommand.pem(chain, "--chain")
            let keyText = try CertCommand.pem(key, "--key")
            let ifMatch = try SiteCommand.entityTag(ifMatch)
            let (client, sentToken) = try options.client(authorized: true)
            let response: HTTPResponse
            do throws(HTTPClientError) {
                response = try client.putCertificate(name, chain: chainText, key: keyText, ifMatch: ifMatch)
            } catch {
                throw SiteCommand.unreachable("cert put", client, error)
            }
            guard response.status == 200 || response.status == 201 else {
                throw SiteCommand.refused("cert put", "certificate \(name)", response, sentToken: sentToken)
            }
            let entry = AdminAnswer.certificate(response.body)
            let what = response.status == 201 ? "created" : "replaced"
            var line = "\(name): \(response.status) \(what)"
            if let entry { line += ", \(entry.dnsNames.joined(separator: ", ")), until \(entry.notAfter)" }
            FileHandleOutput.standardOutput.write(line.escapingControlCharacters + "\n")
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Print the server's JSON for a certificate: name, dnsNames, notAfter and the chain (never the key)."
        )

        @Argument(help: "The certificate's name.")
        var name: String

        @OptionGroup var options: AdminOptions

        func run() throws {
            let name = try CertCommand.name(name)
            let (client, sentToken) = try options.client(authorized: true)
            let response: HTTPResponse
            do throws(HTTPClientError) { response = try client.getCertificate(name) } catch { throw SiteCommand.unreachable("cert get", client, error) }
            guard response.status == 200 else { throw SiteCommand.refused("cert get", "certificate \(name)", response, sentToken: sentToken) }
            FileHandleOutput.standardOutput.write(response.body)
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Delete a certificate (never the admin listener's own: 409)."
        )

        @Argument(help: "The certificate's name.")
        var name: String

        @Option(name: .customLong("if-match"), help: ArgumentHelp("Delete only if the stored chain has this version (else 412).", valueName: "etag"))
        var ifMatch: String?

        @OptionGroup var options: AdminOptions

        func run() throws {
            let name = try CertCommand.name(name)
            let ifMatch = try SiteCommand.entityTag(ifMatch)
            let (client, sentToken) = try options.client(authorized: true)
            let response: HTTPResponse
            do throws(HTTPClientError) { response = try client.deleteCertificate(name, ifMatch: ifMatch) } catch { throw SiteCommand.unreachable("cert rm", client, error) }
            guard (200..<300).contains(response.status) else { throw SiteCommand.refused("cert rm", "certificate \(name)", response, sentToken: sentToken) }
            FileHandleOutput.standardOutput.write("\(name): \(response.status) deleted\n")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls",
            abstract: "List the server's certificates: NAME NOTAFTER DNSNAMES SOURCE, one a line.",
            discussion: "In byte order of name, from the admin listener's /status (no token needed), page by page; DNSNAMES are comma-separated."
        )

        @OptionGroup var options: AdminOptions

        func run() throws {
            let (client, _) = try options.client(authorized: false)
            var after: String?
            var pages = 0
            while true {
                let response: HTTPResponse
                do throws(HTTPClientError) { response = try client.certificates(after: after) } catch { throw SiteCommand.unreachable("cert ls", client, error) }
                guard response.status == 200 else { throw SiteCommand.refused("cert ls", "/status", response, sentToken: false) }
                guard let page = AdminAnswer.certificatePage(response.body) else {
                    FileHandleOutput.standardError.write("aasa cert ls: \(client.base) answered /status with something other than its JSON\n")
                    throw ExitCode(1)
                }
                FileHandleOutput.standardOutput.write(page.certificates.map(CertCommand.describe).joined())
                pages += 1
                guard let next = page.next else { return }
                // A peer's `next` must move forward; a million certificates is past any store.
                guard next > (after ?? ""), pages < 1_000_000 / AdminClient.statusPageSize else {
                    FileHandleOutput.standardError.write("aasa cert ls: /status kept announcing more certificates; stopped\n")
                    throw ExitCode(1)
                }
                after = next
            }
        }
    }
}
