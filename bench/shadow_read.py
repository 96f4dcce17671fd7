#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Times the Redis store's read of a shadow route over the longest window (24 h): the script the
store sends (one EVALSHA over the totals and 1440 minute hashes) against the same read as 1441
HGETALLs one after the other, on a private redis-server with a full day of buckets.

    python3 bench/shadow_read.py [runs]

Prints the median, least and most milliseconds of each, and Redis's own time for the script
(SLOWLOG). The script's text is read from store/src/redis/redis_scripts.cpp."""
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = ["keyed", "duplicates_executed", "duplicates_differing", "reuse", "concurrent", "after_ttl"]


def script_text():
    src = open(os.path.join(ROOT, "store/src/redis/redis_scripts.cpp")).read()
    body = re.search(r"constexpr std::string_view shadow_read_script =\n((?:\s*\".*\"\n?)+);", src).group(1)
    return "".join(bytes(s, "utf-8").decode("unicode_escape") for s in re.findall(r"\"(.*)\"", body))


class resp:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def send(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)

    def reply(self):
        line = self.file.readline()
        kind = line[:1]
        if kind in (b"+", b"-", b":"):
            return line.rstrip(b"\r\n")
        if kind == b"$":
            n = int(line[1:])
            return None if n < 0 else self.file.read(n + 2)[:-2]
        return [self.reply() for _ in range(max(int(line[1:]), 0))]

    def call(self, *args):
        self.send(*args)
        return self.reply()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    port = free_port()
    with tempfile.TemporaryDirectory() as work:
        server = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
                                   "--dir", work], stdout=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    r = resp(port)
                    break
                except OSError:
                    time.sleep(0.05)
            minute = int(time.time()) // 60
            keys = ["idemgate:s:{/api/}:all"] + ["idemgate:s:{/api/}:%d" % (minute - i) for i in range(1440)]
            for k in keys:
                r.call("HINCRBY", k, "keyed", 3)
                r.call("HINCRBY", k, "duplicates_executed", 1)
            sha = r.call("SCRIPT", "LOAD", script_text())

            def script_read():
                t = time.perf_counter()
                r.call("EVALSHA", sha, len(keys), *keys, *FIGURES)
                return time.perf_counter() - t

            def sequential_read():
                t = time.perf_counter()
                for k in keys:
                    r.call("HGETALL", k)
                return time.perf_counter() - t

            for name, read in (("one script", script_read), ("1441 HGETALLs", sequential_read)):
                times = [read() * 1000 for _ in range(runs)]
                print("%-14s median %.1f ms, least %.1f, most %.1f (%d reads)" %
                      (name, statistics.median(times), min(times), max(times), runs))
            r.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
            r.call("SLOWLOG", "RESET")
            script_read()
            for entry in r.call("SLOWLOG", "GET", "10"):
                if entry[3][0] == b"EVALSHA":
                    print("Redis's own time for the script: %s us" % entry[2].decode().lstrip(":"))
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
