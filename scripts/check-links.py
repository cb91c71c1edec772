#!/usr/bin/env python3
"""Checks the internal links of the repository's markdown: the READMEs, the user guide
(guide/src), ARCHITECTURE.md, CHANGELOG.md.

    python3 scripts/check-links.py

For every link, image and reference definition outside code: a relative target must be a
file or folder of the repository, and a `#fragment` must name a heading of the markdown
file it points to (GitHub's and mdBook's heading ids: lower case, punctuation dropped,
spaces as dashes). Links of the guide must stay inside guide/src (mdBook turns them into
pages of the book), and each `{{#include FILE:ANCHOR}}` must name a file with that
`ANCHOR:`. A target that reads as a Rust path is an intra-doc link of a README that is
crate docs, which rustdoc checks. The links that leader/src/lib.rs gives the facade's front page on docs.rs
(`.../blob/main/PATH`) must name files too. External links (http, https, mailto) are not
followed. Exits 1 and lists every broken link, or prints how many links it checked.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDE = os.path.join(ROOT, "guide", "src")

INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
INCLUDE = re.compile(r"\{\{#include\s+([^}\s]+)\s*\}\}")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
RUST_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z0-9_]+)*$")
BLOB = re.compile(r"/blob/main/([^\"\s)]+)")


def markdown_files():
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    # A symbolic link (leader/README.md, the root README) is checked as its target.
    return sorted({os.path.normpath(os.path.join(ROOT, f)) for f in listed
                   if not os.path.islink(os.path.join(ROOT, f))})


def prose_lines(path):
    """(line number, text) of the lines outside fenced code, inline code removed."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, re.sub(r"`[^`]*`", "``", line)


def slug(heading):
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, fenced = set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    fenced = not fenced
                    continue
                match = None if fenced else HEADING.match(line)
                if match:
                    base, n = slug(match.group(2)), 1
                    name = base
                    while name in found:
                        name, n = f"{base}-{n}", n + 1
                    found.add(name)
        cache[path] = found
    return cache[path]


def check_target(source, target, errors, line):
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
        return  # external (http:, https:, mailto:)
    if RUST_PATH.match(target):
        return  # an intra-doc link of a README that is crate docs: rustdoc checks those
    path, _, fragment = target.partition("#")
    resolved = os.path.normpath(os.path.join(os.path.dirname(source), path)) if path else source
    where = f"{os.path.relpath(source, ROOT)}:{line}"
    if source.startswith(GUIDE + os.sep) and not resolved.startswith(GUIDE + os.sep):
        errors.append(f"{where}: {target}: leaves the book (guide/src); use docs.rs or an include")
        return
    if not os.path.exists(resolved):
        errors.append(f"{where}: {target}: no such file")
        return
    if fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
        errors.append(f"{where}: {target}: no heading #{fragment} in {os.path.relpath(resolved, ROOT)}")


def main():
    errors, checked = [], 0
    for source in markdown_files():
        for number, line in prose_lines(source):
            targets = INLINE.findall(line)
            definition = DEFINITION.match(line)
            if definition:
                targets.append(definition.group(1))
            for target in targets:
                checked += 1
                check_target(source, target, errors, number)
            for include in INCLUDE.findall(line):
                checked += 1
                path, _, anchor = include.partition(":")
                resolved = os.path.normpath(os.path.join(os.path.dirname(source), path))
                where = f"{os.path.relpath(source, ROOT)}:{number}"
                if not os.path.isfile(resolved):
                    errors.append(f"{where}: include {include}: no such file")
                elif anchor and f"ANCHOR: {anchor}" not in open(resolved, encoding="utf-8").read():
                    errors.append(f"{where}: include {include}: no ANCHOR: {anchor}")
    facade = os.path.join(ROOT, "leader", "src", "lib.rs")
    with open(facade, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            for path in BLOB.findall(line):
                checked += 1
                if not os.path.exists(os.path.join(ROOT, path)):
                    errors.append(f"leader/src/lib.rs:{number}: {path}: no such file")
    for error in errors:
        print(error)
    if errors:
        print(f"{len(errors)} broken link(s) of {checked}")
        return 1
    print(f"{checked} internal links checked, none broken")
    return 0


if __name__ == "__main__":
    sys.exit(main())
