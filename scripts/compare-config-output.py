#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two idemgate binaries against each other on every configuration the tree holds: what
`--print-config` prints (or every problem, with its line and column, for a file it refuses) and
what `--check` says (warnings), byte for byte.

  scripts/compare-config-output.py OLD_BIN_DIR NEW_BIN_DIR [SOURCE_DIR] [--same-order]

For a change to the configuration code that must not change behaviour: build the commit before it
into one directory and the change into another. The configurations: every YAML file of the
repository, every ```yaml block of the documentation (also completed with one upstream and one
route, as `check_reference.py examples` does), and every string literal of the tests (also after
the tests' smallest valid file). Each is run with and without the environment variables the
examples name. Prints each difference; exit 1 if there is one. A refused file whose problems are
the same lines in another order is reported apart, and is a difference only with --same-order.
"""
import os
import re
import subprocess
import sys
import tempfile

MINIMAL = """
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/
    upstream: orders
"""
BASE = 'upstreams:\n  orders: { address: "127.0.0.1:8081" }\nroutes:\n  - { path_prefix: "/api/", upstream: orders }\n'
ENV = {"IDEMGATE_KEY_SECRET": "k" * 32, "IDEMGATE_RECORD_KEY": "ab" * 32, "IDEMGATE_REDIS_PASSWORD": "password",
       "IDEMGATE_ADMIN_TOKEN": "t" * 32, "REDIS_PASSWORD": "s3cret", "KEY_SECRET": "s" * 32, "KEY_A": "a" * 64,
       "ADMIN_TOKEN": "t" * 32, "SHORT_KEY": "abcdef", "EMPTY": ""}
RAW = re.compile(r'R"\((.*?)\)"', re.S)
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def documents(root):
    docs = set()
    files = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        path = os.path.join(root, name)
        if name.endswith((".yaml", ".yml")):
            docs.add(open(path, encoding="utf-8").read())
        elif name.endswith(".md"):
            for block in re.findall(r"```yaml\n(.*?)```", open(path, encoding="utf-8").read(), re.S):
                docs.update({block, BASE + block})
        elif name.startswith("tests/") and name.endswith((".cpp", ".hpp")):
            text = open(path, encoding="utf-8").read()
            pieces = RAW.findall(text)
            for m in LITERAL.findall(RAW.sub("", text)):
                try:
                    pieces.append(bytes(m, "utf-8").decode("unicode_escape"))
                except UnicodeDecodeError:
                    continue
            for piece in pieces:
                if ":" in piece and "\n" in piece:
                    docs.update({piece, MINIMAL + piece})
    return sorted(docs)


def run(binary, path, args, env):
    out = subprocess.run([binary, "-c", path] + args, capture_output=True, text=True, timeout=30,
                         env=dict(os.environ, **env))
    return out.returncode, out.stdout, out.stderr


def reordered(a, b):
    """The same exit status and output, the problems (stderr lines) in another order."""
    return a[:2] == b[:2] and a[2] != b[2] and sorted(a[2].splitlines()) == sorted(b[2].splitlines())


def main():
    same_order = "--same-order" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--same-order"]
    old, new = (os.path.join(d, "idemgate") for d in args[:2])
    root = os.path.abspath(args[2] if len(args) > 2 else os.path.join(os.path.dirname(__file__), ".."))
    docs = documents(root)
    differences = reorders = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "config.yaml")
        for doc in docs:
            with open(path, "w", encoding="utf-8") as f:
                f.write(doc)
            for env in (ENV, {}):
                for args in (["--print-config"], ["--check"]):
                    a, b = run(old, path, args, env), run(new, path, args, env)
                    if a == b:
                        continue
                    what = "the same problems in another order" if reordered(a, b) else "differs"
                    if what == "differs" or same_order:
                        differences += 1
                    else:
                        reorders += 1
                    print("=== %s (%s environment): %s:\n%s\n--- old: %r\n+++ new: %r\n" %
                          (" ".join(args), "with" if env else "without", what, doc, a, b))
    print("%d configurations, %d differences, %d with the same problems in another order" %
          (len(docs), differences, reorders))
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
