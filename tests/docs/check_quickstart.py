#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The README's quick start, run as typed.

  check_quickstart.py SOURCE_DIR --bin DIR

Takes the first ```sh block under "## Quick start" in README.md and runs it with bash, line for
line, with only what a test must change: the build line is skipped (DIR already holds this
build's binaries, put where the block says build-demo/bin/ is), every port it names is moved to
a free one, and /tmp is a folder of this run. Everything the block starts is stopped at the end
(its background jobs, and the Redis it daemonizes through that Redis' own SHUTDOWN).
Passes when the first POST is answered `Idempotency-Status: executed`, the second is the same
status with `Idempotent-Replayed: true` and `Idempotency-Status: replayed`, and the metrics line
the block greps shows both.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def quick_start_block(readme):
    text = open(readme, encoding="utf-8").read()
    at = text.find("\n## Quick start")
    if at < 0:
        sys.exit("check_quickstart: README.md has no '## Quick start' section")
    m = re.search(r"```sh\n(.*?)```", text[at:], re.S)
    if not m:
        sys.exit("check_quickstart: the quick start has no ```sh block")
    return m.group(1)


def main():
    if len(sys.argv) != 4 or sys.argv[2] != "--bin":
        sys.exit(__doc__)
    source, bindir = sys.argv[1], os.path.abspath(sys.argv[3])
    for program in ("idemgate", "order-service"):
        if not os.access(os.path.join(bindir, program), os.X_OK):
            sys.exit("check_quickstart: %s/%s missing" % (bindir, program))
    if not shutil.which("redis-server") or not shutil.which("curl"):
        sys.exit("check_quickstart: needs redis-server and curl (scripts/install-deps.sh)")
    block = quick_start_block(os.path.join(source, "README.md"))

    lines = block.splitlines()
    if not lines[0].startswith("bash scripts/demo.sh --build-only"):
        sys.exit("check_quickstart: the block's first line is not the demo's build: %s" % lines[0])
    script = "\n".join(lines[1:]) + "\n"
    ports = sorted(set(re.findall(r"(?:127\.0\.0\.1:|localhost:|--port )(\d{4,5})", script)))
    if len(ports) < 4:
        sys.exit("check_quickstart: expected the four ports (gateway, admin, Redis, upstream), "
                 "found %s" % ports)
    work = tempfile.mkdtemp(prefix="idemgate-quickstart-")
    moved = {}
    for p in ports:
        moved[p] = str(free_port())
    script = re.sub(r"(127\.0\.0\.1:|localhost:|--port )(\d{4,5})\b",
                    lambda m: m.group(1) + moved.get(m.group(2), m.group(2)), script)
    # /tmp first: the binaries' folder may itself be under /tmp (a checkout there).
    script = script.replace("/tmp", work).replace("build-demo/bin/", bindir + "/")
    redis_ports = re.findall(r"redis-server --port (\d+)", script)
    if not redis_ports:
        sys.exit("check_quickstart: the block starts no redis-server --port N")
    # The harness around the block: stop what it started, bound it in time.
    wrapped = ("set -e\n"
               "trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; "
               "redis-cli -p %s shutdown nosave >/dev/null 2>&1 || true' EXIT\n" % redis_ports[0]
               + script)
    with open(os.path.join(work, "quickstart.sh"), "w") as f:
        f.write(wrapped)
    # Bytes, decoded without newline translation: the answers' CRLF are compared as sent.
    run = subprocess.run(["timeout", "-k", "5", "90", "bash", "quickstart.sh"], cwd=work,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = run.stdout.decode("utf-8", "replace")
    problems = []
    if run.returncode != 0:
        problems.append("the block exited %d" % run.returncode)
    answers = re.split(r"(?=HTTP/1\.1 \d{3} )", out)
    answers = [a for a in answers if a.startswith("HTTP/1.1 ")]
    if len(answers) != 2:
        problems.append("expected two HTTP answers from the two curl lines, found %d" % len(answers))
    else:
        first, second = answers
        status = first.split(" ", 2)[1]
        if not status.startswith("2"):
            problems.append("the first POST was answered %s, not 2xx" % status)
        if not re.search(r"^Idempotency-Status: executed\r?$", first, re.M | re.I):
            problems.append("the first answer lacks Idempotency-Status: executed")
        if re.search(r"^Idempotent-Replayed:", first, re.M | re.I):
            problems.append("the first answer is marked replayed")
        if second.split(" ", 2)[1] != status:
            problems.append("the retry's status %s differs from the first %s"
                            % (second.split(" ", 2)[1], status))
        if not re.search(r"^Idempotent-Replayed: true\r?$", second, re.M | re.I):
            problems.append("the retry lacks Idempotent-Replayed: true")
        if not re.search(r"^Idempotency-Status: replayed\r?$", second, re.M | re.I):
            problems.append("the retry lacks Idempotency-Status: replayed")
        # Each body is its Content-Length's bytes: the processes the block started in the
        # background write their log lines to the same output, anywhere between them.
        def body_of(answer):
            head, _, rest = answer.partition("\r\n\r\n")
            m = re.search(r"^Content-Length: (\d+)\r?$", head, re.M | re.I)
            return rest[:int(m.group(1))] if m else ""
        body1, body2 = body_of(first), body_of(second)
        if not body1 or body1 != body2:
            problems.append("the replayed body %r is not the first one %r" % (body2, body1))
    for outcome in ("executed", "replayed"):
        if not re.search(r'^idemgate_requests_total\{outcome="%s"\} 1$' % outcome, out, re.M):
            problems.append("the metrics line shows no idemgate_requests_total{outcome=\"%s\"} 1"
                            % outcome)
    if problems:
        print(out)
        for p in problems:
            print("check_quickstart: " + p)
        shutil.rmtree(work, ignore_errors=True)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("check_quickstart: the quick start ran as typed: executed, then replayed (ports %s)"
          % ", ".join("%s->%s" % kv for kv in moved.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
