#!/usr/bin/env python3
# Checks that every relative link of README.md and docs/*.md resolves: the file exists and, when
# the link has a #fragment, the target file has a heading with that GitHub-style anchor
# (lower-cased, punctuation dropped, spaces to '-', repeats numbered -1, -2, ...).
# Usage: Scripts/check-doc-links.py [ROOT]   (exit 1 and one line per broken link)
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
root = os.path.abspath(root)

def markdown_files():
    yield os.path.join(root, "README.md")
    docs = os.path.join(root, "docs")
    for name in sorted(os.listdir(docs)):
        if name.endswith(".md"):
            yield os.path.join(docs, name)

def prose_lines(path):
    fence = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if not fence:
            yield number, line.rstrip("\n")

def anchors(path):
    seen, result = {}, set()
    for _, line in prose_lines(path):
        m = re.match(r"^#{1,6} (.*)$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(slug if n == 0 else f"{slug}-{n}")
    return result

broken = 0
for path in markdown_files():
    for number, line in prose_lines(path):
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, fragment = target.partition("#")
            target_path = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = f"{os.path.relpath(path, root)}:{number}: {target}"
            if not os.path.exists(target_path):
                print(f"{where}: no such file"); broken += 1
            elif fragment and (not target_path.endswith(".md") or fragment not in anchors(target_path)):
                print(f"{where}: no such anchor"); broken += 1
sys.exit(1 if broken else 0)
