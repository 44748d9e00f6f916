import Foundation
import Testing
@testable import aasa

/// What `--help` and the completion scripts tell a user, checked against what the commands do.
@Suite struct CommandHelpTests {
    /// Each option of a command's help with its text, joined across wrapped lines.
    private func options(_ command: String) throws -> [String: String] {
        let help = try AASABinary.run([command, "--help"]).stdout
        var entries: [String: String] = [:]
        var current: String?
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  -") {
                let name = line.split(separator: " ").first { $0.hasPrefix("--") }.map(String.init) ?? String(line)
                current = name
                entries[name] = String(line)
            } else if let name = current, line.hasPrefix("      ") {
                entries[name]! += " " + line.trimmingCharacters(in: .whitespaces)
            } else {
                current = nil
            }
        }
        return entries
    }

    /// The mentions of a default in an option's help: "default" as a word, not in an option's
    /// own name (`--default-cert <default-cert>`).
    private func defaults(in text: String) -> Int {
        text.replacingOccurrences(of: "default-cert", with: "").matches(of: /\bdefault\b/).count
    }

    /// The text of a shell function of the completion script, `_aasa_serve() {` to its `}`.
    private func function(_ command: String, in script: String) -> Substring? {
        guard let start = script.range(of: "\n_aasa_\(command.replacingOccurrences(of: "-", with: "_"))() {\n") else { return nil }
        return script[start.upperBound...].split(separator: "\n}\n", maxSplits: 1, omittingEmptySubsequences: false).first
    }

    @Test func serveHelpNamesEveryVariableTheServerReadsAndNoTestKnob() throws {
        let help = try AASABinary.run(["serve", "--help"]).stdout
        let named = Set(help.matches(of: /AASA_[A-Z0-9_]+/).map { String($0.output) })
        let documented = ServeVariable.allCases.filter { $0.flag != nil }
        #expect(named == Set(documented.map(\.rawValue)), "the help names \(named.sorted()); serve reads \(documented.map(\.rawValue))")
        for knob in ServeVariable.allCases where knob.flag == nil {
            #expect(!help.contains(knob.rawValue), "\(knob.rawValue) is the tests' knob")
        }
        // Each variable stands for an option of that name.
        let flags = try options("serve")
        for variable in documented {
            #expect(flags[variable.flag!] != nil, "\(variable.rawValue): no option \(variable.flag!)")
        }
    }

    @Test func theVariablesTheHelpNamesIncludeThoseOfHTTP2WatchPollingMetricsPerClientLimitsAndOrderRate() throws {
        let help = try AASABinary.run(["serve", "--help"]).stdout
        for name in ["AASA_HTTP2", "AASA_WATCH", "AASA_POLL_INTERVAL", "AASA_METRICS_SITES", "AASA_MAX_CONNECTIONS_PER_CLIENT", "AASA_ACME_ORDER_RATE"] {
            #expect(help.contains(name), "\(name)")
        }
    }

    @Test func aVariableThatDoesNotParseIsAUsageErrorThatNamesIt() throws {
        for (variable, value, message) in [("AASA_WORKERS", "abc", "AASA_WORKERS must be a whole number, got abc"),
                                           ("AASA_WORKERS", "0", "AASA_WORKERS must be at least 1, got 0"),
                                           ("AASA_METRICS_SITES", "lots", "AASA_METRICS_SITES must be a whole number, got lots"),
                                           ("AASA_CACHE_MAX_AGE", "-1", "AASA_CACHE_MAX_AGE must be 0 or more, got -1"),
                                           ("AASA_HTTP2", "maybe", "AASA_HTTP2 must be on or off, got maybe"),
                                           ("AASA_DEV", "maybe", "AASA_DEV must be on or off, got maybe"),
                                           ("AASA_LOG_FORMAT", "xml", "AASA_LOG_FORMAT must be text or json, got xml"),
                                           ("AASA_WATCH", "fanotify", "AASA_WATCH must be auto, inotify or poll, got fanotify"),
                                           ("AASA_HTTP", "nonsense", "AASA_HTTP: expected ADDR:PORT, got nonsense")] {
            var arguments = ["serve", "--admin", "off"]
            if variable != "AASA_HTTP" { arguments += ["--http", "127.0.0.1:0"] }
            // A variable that is not read lets the server start: give it a few seconds, not the default 300.
            let r = try AASABinary.run(arguments, environment: [variable: value, "AASA_CDN_WATCH": "off"], timeout: 5)
            #expect(r.status == 2, "\(variable)=\(value): \(r.stderr)")
            #expect(r.stderr.contains("Error: \(message)"), "\(variable)=\(value): \(r.stderr)")
        }
        // The same value given as a flag names the flag.
        let flag = try AASABinary.run(["serve", "--http", "127.0.0.1:0", "--admin", "off", "--workers", "0"], timeout: 5)
        #expect(flag.stderr.contains("Error: --workers must be at least 1, got 0"), "\(flag.stderr)")
    }

    @Test func anErrorAboutAValueAVariableGaveNamesTheVariable() throws {
        let certs = try TemporaryDirectory()
        let config = AASABinary.packageRoot.appendingPathComponent("config").path
        let http = ["serve", "--config", config, "--http", "127.0.0.1:0", "--admin", "off"]
        let acme = ["serve", "--config", config, "--certs", certs.url.path, "--https", "127.0.0.1:0", "--admin", "off", "--acme"]
        for (arguments, environment, message) in [
            (http, ["AASA_CDN_WATCH": "on", "AASA_CDN_BASE": "ftp://cdn.example"], "Error: AASA_CDN_BASE: "),
            (http, ["AASA_CDN_WATCH": "on", "AASA_CDN_CACERT": "/nonexistent/ca.pem"], "Error: AASA_CDN_CACERT: cannot read /nonexistent/ca.pem"),
            (http, ["AASA_ACME": "1", "AASA_CDN_WATCH": "off"], "Error: AASA_ACME needs --certs DIR"),
            (acme, ["AASA_ACME_DIRECTORY": "http://ca.example/dir", "AASA_CDN_WATCH": "off"], "Error: AASA_ACME_DIRECTORY must be an https:// URL"),
            (acme, ["AASA_ACME_EAB_KID": "kid", "AASA_ACME_EAB_HMAC_KEY": "not base64url!", "AASA_CDN_WATCH": "off"],
             "Error: AASA_ACME_EAB_HMAC_KEY must be base64url"),
        ] {
            let r = try AASABinary.run(arguments, environment: environment, timeout: 5)
            #expect(r.status == 2, "\(environment): \(r.stderr)")
            #expect(r.stderr.contains(message), "\(environment): \(r.stderr)")
        }
        // Given as flags, the same values are named by their flags.
        let flag = try AASABinary.run(http + ["--cdn-watch", "on", "--cdn-base", "ftp://cdn.example"], timeout: 5)
        #expect(flag.stderr.contains("Error: --cdn-base: "), "\(flag.stderr)")
    }

    @Test func everyOptionShowsItsDefaultAtMostOnce() throws {
        for command in ["serve", "validate", "match", "check", "entitlements", "health", "dev-certs"] {
            for (name, text) in try options(command) {
                #expect(defaults(in: text) <= 1, "aasa \(command) \(name): \(text)")
            }
        }
    }

    @Test func optionsWithADefaultShowIt() throws {
        let expected: [String: [String]] = [
            "serve": ["--config", "--certs", "--https", "--http", "--admin", "--default-cert", "--workers", "--max-connections",
                      "--max-connections-per-client", "--http2", "--log-format", "--cache-max-age", "--metrics-sites", "--watch",
                      "--poll-interval", "--shutdown-grace", "--drain-delay", "--acme-directory", "--acme-challenge", "--acme-order-rate",
                      "--cdn-watch", "--cdn-base", "--cdn-interval", "--cdn-rate"],
            "check": ["--cdn-base", "--timeout", "--format"],
            "entitlements": ["--timeout", "--format"],
            "validate": ["--format", "--kind"],
            "match": ["--domain", "--format"],
            "health": ["--admin"],
            "dev-certs": ["--config", "--out"],
        ]
        for (command, names) in expected {
            let help = try options(command)
            for name in names {
                #expect(defaults(in: help[name] ?? "") == 1, "aasa \(command) \(name): \(help[name] ?? "(missing)")")
            }
        }
        // Written as the person reading it would write it: 10 seconds, not 10.0.
        #expect(try options("check")["--timeout"]?.contains("(default: 10)") == true)
    }

    /// The options whose values form a fixed set, with the values in the order completion offers them.
    private static let fixedValues: [(command: String, option: String, values: [String])] = [
        ("serve", "--log-format", ["text", "json"]),
        ("serve", "--http2", ["on", "off"]),
        ("serve", "--watch", ["auto", "inotify", "poll"]),
        ("serve", "--cdn-watch", ["on", "off"]),
        ("serve", "--acme-challenge", ["tls-alpn-01", "http-01"]),
        ("validate", "--format", ["text", "json", "github", "sarif", "gitlab"]),
        ("validate", "--kind", ["aasa", "assetlinks", "merchantid", "webauthn"]),
        ("match", "--format", ["text", "json"]),
        ("check", "--format", ["text", "json"]),
        ("entitlements", "--format", ["text", "json"]),
    ]

    /// The completion script for `shell`, written to a file the shell can source.
    private func completionScript(_ shell: String, in directory: TemporaryDirectory) throws -> String {
        try directory.write("aasa.\(shell)", try AASABinary.run(["--generate-completion-script", shell]).stdout)
    }

    @Test func optionsWithAFixedSetOfValuesCompleteThemInBash() throws {
        let dir = try TemporaryDirectory()
        let script = try completionScript("bash", in: dir)
        for (command, option, values) in Self.fixedValues {
            // What bash does on TAB after `aasa COMMAND OPTION `: the words, the cursor on an empty
            // one, and the function the script registered for aasa.
            let line = "aasa \(command) \(option) "
            let r = try Shell.run("/bin/bash", ["-c", """
                source '\(script)'
                COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(aasa \(command) \(option) ''); COMP_CWORD=3
                _aasa aasa '' \(option)
                printf '%s\\n' "${COMPREPLY[@]}"
                """])
            #expect(r.stdout.split(separator: "\n").map(String.init) == values, "\(line)<TAB>: \(r.stdout)\(r.stderr)")
        }
    }

    @Test func optionsWithAFixedSetOfValuesCompleteThemInFish() throws {
        let dir = try TemporaryDirectory()
        let script = try completionScript("fish", in: dir)
        for (command, option, values) in Self.fixedValues {
            let line = "aasa \(command) \(option) "
            let r = try Shell.run("/usr/bin/fish", ["-c", "source '\(script)'; complete -C '\(line)'"])
            let offered = r.stdout.split(separator: "\n").map { String($0.prefix { $0 != "\t" }) }
            #expect(offered == values, "\(line)<TAB>: \(r.stdout)\(r.stderr)")
        }
    }

    @Test func optionsWithAFixedSetOfValuesCompleteThemInZsh() throws {
        let script = try AASABinary.run(["--generate-completion-script", "zsh"]).stdout
        for (command, option, values) in Self.fixedValues {
            let body = try #require(function(command, in: script), "\(command)")
            let name = option.dropFirst(2).replacingOccurrences(of: "-", with: "_")
            let array = "local -ar ___\(name)=(" + values.map { "'\($0)'" }.joined(separator: " ") + ")"
            #expect(body.contains(array), "aasa \(command) \(option)")
            #expect(body.contains("{__aasa_complete \"${___\(name)[@]}\"}"), "aasa \(command) \(option)")
        }
    }

    @Test func theValuesAFlagTakesAreCheckedBeforeAnythingStarts() throws {
        let r = try AASABinary.run(["serve", "--http", "127.0.0.1:0", "--admin", "off", "--http2", "maybe"], timeout: 5)
        #expect(r.status == 2)
        #expect(r.stderr.contains("Error: The value 'maybe' is invalid for '--http2 <http2>'. Please provide one of 'on' and 'off'."), "\(r.stderr)")
        // The words the variables take are read on the command line too, as they always were.
        for word in ["1", "true", "yes", "ON"] {
            #expect(Switch(argument: word) == .on)
        }
    }
}
