#!/usr/bin/env python3
"""The arrows between the package's targets (docs/architecture.md, "Targets"), checked against
what Package.swift declares: each rule names a target and a target its dependency closure must
not reach. Prints each violation and exits 1; reads `swift package describe --type json`."""
import json
import subprocess
import sys

# (target, must not reach, why)
RULES = [
    ("AASACommands", "AASAServer", "validate, match, check and entitlements build without the server"),
    ("AASACommands", "AASASessions", "the commands do not serve"),
    ("AASASessions", "AASATransport", "a session is bytes in and bytes out: no sockets, no clock of its own"),
    ("AASAMonitor", "AASAServer", "the monitor does not serve: what it shares with serve's CDN watch lives in the client"),
    ("AASAServer", "AASAMonitor", "serve builds without the monitor"),
    ("AASAClient", "AASAServer", "the client is below the server"),
    ("AASAClient", "AASASessions", "the client reads responses with AASAHTTP, not the server's sessions"),
    ("AASATransport", "AASASessions", "the transport knows no HTTP session"),
    ("AASATransport", "AASAClient", "the transport is below the client"),
    ("AASATransport", "AASAServer", "the transport is below the server"),
    ("AASAHTTP", "AASATransport", "the HTTP parsers are pure"),
    ("AASACore", "AASAHTTP", "the core is pure"),
    ("AASAPostgres", "AASAServer", "the PostgreSQL client knows nothing of sites"),
    ("AASAPostgres", "AASACore", "the PostgreSQL client knows nothing of association files"),
    ("AASACommands", "AASAPostgres", "the commands that do not serve need no database"),
    # The test targets mirror the libraries: a layer's tests build without the layers above it.
    ("AASASessionsTests", "AASAServer", "the sessions' tests build without the server"),
    ("AASATransportTests", "AASASessions", "the transport's tests know no HTTP session"),
    ("AASATransportTests", "AASAServer", "the transport's tests build without the server"),
    ("AASAClientTests", "AASAServer", "the client's tests build without the server"),
    ("AASACommandsTests", "AASAServer", "the commands' tests build without the server"),
]


def main() -> int:
    described = json.loads(subprocess.run(["swift", "package", "describe", "--type", "json"], check=True,
                                          capture_output=True, text=True).stdout)
    deps = {t["name"]: t.get("target_dependencies") or [] for t in described["targets"]}

    def closure(name: str) -> set[str]:
        seen: set[str] = set()
        todo = list(deps.get(name, []))
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo.extend(deps.get(d, []))
        return seen

    failures = 0
    for target, forbidden, why in RULES:
        if target not in deps or forbidden not in deps:
            print(f"check-targets: no target {target if target not in deps else forbidden} in Package.swift")
            failures += 1
        elif forbidden in closure(target):
            print(f"check-targets: {target} reaches {forbidden}, but {why}")
            failures += 1
    print(f"check-targets: {len(RULES) - failures} of {len(RULES)} rules hold")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
