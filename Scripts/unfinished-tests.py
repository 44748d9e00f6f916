#!/usr/bin/env python3
"""Lists the tests a swift-testing log shows as started but never finished: what to look at
when `swift test` had to be stopped at its time limit."""
import re
import sys

started, ended = [], set()
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"Test (?:case passing .* to )?(\w+)\(.*?\) (?:with \d+ test cases? )?(started|passed|failed)", line)
    if not m:
        continue
    if m.group(2) == "started":
        started.append(m.group(1))
    else:
        ended.add(m.group(1))
unfinished = sorted(set(started) - ended)
print("tests started and never finished:" if unfinished else "no unfinished test in the log")
for name in unfinished:
    print("  " + name)
