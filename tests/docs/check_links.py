#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every relative link in the project's Markdown (README.md, CONTRIBUTING.md, CHANGELOG.md, docs/,
bench/, deploy/, order_service/) points at a file that exists, and every #anchor at a heading of
that file (GitHub's anchor rule: lower case, punctuation dropped, spaces to hyphens), and every
page under docs/ is linked from the index, docs/README.md. Every alert rule of
deploy/prometheus/alerts.yaml has a runbook_url naming a section of a
docs/operations/troubleshooting*.md page that exists.

  check_links.py SOURCE_DIR
"""
import os
import re
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def anchor_of(heading):
    text = re.sub(r"`|\*|_(?=\w)|(?<=\w)_", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, fence = set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    fence = not fence
                    continue
                m = None if fence else HEADING.match(line)
                if m:
                    a = anchor_of(m.group(1))
                    n = 1
                    base = a
                    while a in found:
                        a = "%s-%d" % (base, n)
                        n += 1
                    found.add(a)
        cache[path] = found
    return cache[path]


def markdown_files(root):
    for top in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md"):
        if os.path.exists(os.path.join(root, top)):
            yield os.path.join(root, top)
    for sub in ("docs", "bench", "deploy", "order_service", "packaging"):
        for dirpath, dirs, names in os.walk(os.path.join(root, sub)):
            # Installed third-party packages (the bench's Node peer) are not our documents.
            dirs[:] = [d for d in dirs if d != "node_modules"]
            for n in sorted(names):
                if n.endswith(".md"):
                    yield os.path.join(dirpath, n)


def runbook_problems(root):
    """Each `- alert:` rule's runbook_url (before the next rule) resolves to a troubleshooting
    page's heading."""
    path = os.path.join(root, "deploy", "prometheus", "alerts.yaml")
    if not os.path.exists(path):
        return []
    problems = []
    rules = re.split(r"^\s*- alert:\s*", open(path, encoding="utf-8").read(), flags=re.M)[1:]
    for rule in rules:
        name = rule.split()[0]
        m = re.search(r"^\s*runbook_url:\s*\"?([^\"\s]+)\"?\s*$", rule, re.M)
        if not m:
            problems.append("deploy/prometheus/alerts.yaml: %s has no runbook_url" % name)
            continue
        file_part, _, anchor = m.group(1).partition("#")
        dest = os.path.join(root, file_part)
        if not re.match(r"^docs/operations/troubleshooting[\w-]*\.md$", file_part) or not anchor:
            problems.append("deploy/prometheus/alerts.yaml: %s: runbook_url %s is not a section of "
                            "docs/operations/troubleshooting*.md" % (name, m.group(1)))
        elif not os.path.exists(dest) or anchor not in anchors(dest):
            problems.append("deploy/prometheus/alerts.yaml: %s: runbook_url %s: no such heading" % (name, m.group(1)))
    return problems


def main():
    root = os.path.abspath(sys.argv[1])
    problems, links = [], 0
    for path in markdown_files(root):
        fence = False
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.startswith("```"):
                    fence = not fence
                if fence:
                    continue
                for target in LINK.findall(line):
                    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                        continue
                    links += 1
                    file_part, _, anchor = target.partition("#")
                    dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                    where = "%s:%d" % (os.path.relpath(path, root), number)
                    if not os.path.exists(dest):
                        problems.append("%s: %s: no such file" % (where, target))
                    elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                        problems.append("%s: %s: no heading with that anchor" % (where, target))
    index = os.path.join(root, "docs", "README.md")
    if os.path.exists(index):
        linked = set()
        for target in LINK.findall(open(index, encoding="utf-8").read()):
            linked.add(os.path.normpath(os.path.join(os.path.dirname(index), target.partition("#")[0])))
        for dirpath, _, names in os.walk(os.path.join(root, "docs")):
            for n in sorted(names):
                page = os.path.normpath(os.path.join(dirpath, n))
                if n.endswith(".md") and page != index and page not in linked:
                    problems.append("docs/README.md: %s is not linked from the index" % os.path.relpath(page, root))
    problems += runbook_problems(root)
    for p in problems:
        print(p)
    print("%d relative links checked, %d broken" % (links, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
