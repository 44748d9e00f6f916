import ChildProcess
import Foundation
import Testing

/// The GitHub Action (action.yml) and the pre-commit hook (.pre-commit-hooks.yaml) at the
/// repository root, read as GitHub and pre-commit read them (YAML, through Python's PyYAML).
@Suite struct CIIntegrationTests {
    /// The YAML file at the repository root as JSON.
    private static func load(_ file: String) throws -> Any {
        let script = "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))"
        let r = try Shell.run("/usr/bin/env", ["python3", "-c", script, AASABinary.packageRoot.appendingPathComponent(file).path], timeout: 60)
        guard r.status == 0 else { throw HarnessError(description: "\(file): \(r.stderr)") }
        return try JSONSerialization.jsonObject(with: Data(r.stdout.utf8))
    }

    /// Runs the action's entrypoint and args as its container would: inputs as `INPUT_*`
    /// variables, the workspace as the working directory, `aasa` on the PATH.
    private static func runAction(paths: String, strict: String, in workspace: URL) throws -> CommandResult {
        let action = try #require(try load("action.yml") as? [String: Any])
        let runs = try #require(action["runs"] as? [String: Any])
        let entrypoint = try #require(runs["entrypoint"] as? String)
        let args = try #require(runs["args"] as? [String])
        let bin = AASABinary.url.deletingLastPathComponent().path
        return try runCommand(URL(fileURLWithPath: entrypoint), args, directory: workspace,
                              environment: ["INPUT_PATHS": paths, "INPUT_STRICT": strict, "PATH": "\(bin):/usr/bin:/bin"], timeout: 60)
    }

    @Test func theActionIsADockerActionWithPathsAndStrictInputs() throws {
        let action = try #require(try Self.load("action.yml") as? [String: Any])
        #expect(action["name"] is String && action["description"] is String)
        let runs = try #require(action["runs"] as? [String: Any])
        #expect(runs["using"] as? String == "docker")
        #expect(runs["image"] as? String == "Dockerfile")
        let inputs = try #require(action["inputs"] as? [String: [String: Any]])
        #expect(Set(inputs.keys) == ["paths", "strict"])
        #expect(inputs.values.allSatisfy { $0["description"] is String })
        #expect(inputs["strict"]?["default"] as? String == "false")
    }

    @Test func theActionAnnotatesEveryFindingOfEveryPathAndStrictFailsOnWarnings() throws {
        let dir = try TemporaryDirectory()
        try dir.write("sites/a.example/apple-app-site-association", #"{"applinks": {"details": [{"appIDs": ["ABC.x"], "components": [{"/": "/"}]}]}}"#)
        try dir.write("other/assetlinks.json", #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "web", "site": "https://example.com"}, "extra": 1}]"#)

        let both = try Self.runAction(paths: "sites other/assetlinks.json", strict: "false", in: dir.url)
        #expect(both.status == 1, "\(both.stdout)\(both.stderr)")
        let lines = both.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("::error file=sites/a.example/apple-app-site-association,line=1,col=39,title=invalid-app-id::") })
        #expect(lines.contains { $0.hasPrefix("::warning file=other/assetlinks.json,line=1,") && $0.contains("title=unknown-key::") })
        #expect(lines.last == "1 error, 1 warning in 2 files")

        let warningsOnly = try Self.runAction(paths: "other/assetlinks.json", strict: "false", in: dir.url)
        #expect(warningsOnly.status == 0, "\(warningsOnly.stdout)\(warningsOnly.stderr)")
        let strict = try Self.runAction(paths: "other/assetlinks.json", strict: "true", in: dir.url)
        #expect(strict.status == 1, "\(strict.stdout)\(strict.stderr)")
    }

    @Test func thePreCommitHookRunsValidateOnTheAssociationFileNamesOnly() throws {
        let hooks = try #require(try Self.load(".pre-commit-hooks.yaml") as? [[String: Any]])
        let hook = try #require(hooks.first { $0["id"] as? String == "aasa-validate" })
        #expect(hook["entry"] as? String == "aasa validate")
        let pattern = try #require(hook["files"] as? String)
        // pre-commit matches `files` with Python's re.search against paths relative to the repository.
        let script = "import re, sys; print(' '.join(p for p in sys.argv[2:] if re.search(sys.argv[1], p)))"
        let names = ["apple-app-site-association", "config/example.com/apple-app-site-association", "site/assetlinks.json",
                     "a/webauthn", "a/apple-developer-merchantid-domain-association",
                     "apple-app-site-association.json", "assetlinks.json.bak", "docs/webauthn.md", "notassetlinks.json"]
        let r = try Shell.run("/usr/bin/env", ["python3", "-c", script, pattern] + names, timeout: 60)
        #expect(r.stdout == names.prefix(5).joined(separator: " ") + "\n")
    }
}
