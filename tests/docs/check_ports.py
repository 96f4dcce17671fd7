#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""No tracked file names Prometheus' own port, the admin listener's old default.

  check_ports.py SOURCE_DIR            every file `git ls-files` lists, but CHANGELOG.md (which
      tells of the move) and bench/results/ (recorded runs): the number as a whole number (not
      a part of a longer one) is an error, printed as file:line.
  check_ports.py --planted SOURCE_DIR  the check itself: in a scratch repository, a tracked file
      that names the port fails it, the same in CHANGELOG.md or bench/results/ passes.

Exit 1 on a finding, 77 (skipped) when SOURCE_DIR is not a git checkout or git is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Prometheus' port, written so that this file does not name it.
PORT = str(9000 + 90)
PATTERN = re.compile(r"(?<![0-9])%s(?![0-9])" % PORT)
ADMIN_DEFAULT = "8079"
EXEMPT = ("CHANGELOG.md", "bench/results/")


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, timeout=60)
    if out.returncode != 0:
        return None
    return [p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def findings(root):
    files = tracked(root)
    if files is None:
        return None
    found = []
    for rel in files:
        if rel == EXEMPT[0] or rel.startswith(EXEMPT[1]):
            continue
        path = os.path.join(root, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if PATTERN.search(line):
                found.append("%s:%d: %s" % (rel, number, line.strip()[:120]))
    return found


def check(root):
    if not shutil.which("git"):
        print("check_ports: git is not installed")
        return 77
    found = findings(root)
    if found is None:
        print("check_ports: %s is not a git checkout" % root)
        return 77
    for f in found:
        print(f)
    if found:
        print("check_ports: %d line(s) name port %s, which is Prometheus' own; the admin listener's "
              "default is %s (CHANGELOG.md says why)" % (len(found), PORT, ADMIN_DEFAULT))
        return 1
    return 0


def planted():
    if not shutil.which("git"):
        print("check_ports: git is not installed")
        return 77
    problems = []
    with tempfile.TemporaryDirectory() as repo:
        def git(*args):
            subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, timeout=60)

        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(repo, rel)), exist_ok=True)
            with open(os.path.join(repo, rel), "w") as f:
                f.write(text)
            git("add", rel)

        git("init", "-q")
        write("CHANGELOG.md", "- admin_listen moved off %s\n" % PORT)
        write("bench/results/run.json", '{"port": %s}\n' % PORT)
        write("docs/a.md", "requests: 1%s1, 1%s\n" % (PORT, PORT))  # longer numbers are not the port
        if findings(repo) != []:
            problems.append("exempt files or longer numbers were reported: %s" % findings(repo))
        write("deploy/scrape.yaml", "targets: ['gw:%s']\n" % PORT)
        if findings(repo) != ["deploy/scrape.yaml:1: targets: ['gw:%s']" % PORT]:
            problems.append("a planted port in deploy/scrape.yaml was not reported: %s" % findings(repo))
        untracked = os.path.join(repo, "build", "x.txt")
        os.makedirs(os.path.dirname(untracked))
        with open(untracked, "w") as f:
            f.write(PORT)
        if len(findings(repo)) != 1:
            problems.append("an untracked file was reported")
    for p in problems:
        print("check_ports --planted:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--planted":
        sys.exit(planted())
    if len(sys.argv) != 2:
        sys.exit("usage: check_ports.py [--planted] SOURCE_DIR")
    sys.exit(check(sys.argv[1]))
