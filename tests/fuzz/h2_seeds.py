#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seeds of fuzz_h2_input (tests/fuzz/corpus/fuzz_h2_input/): the bytes each
connection of the HTTP/2 conformance set and of a few well-formed exchanges
(tests/gateway/h2_driver.py) sends, without the connection preface, one file per connection
(at most 16 KiB of it: the floods are long), named by its SHA-1.

  h2_seeds.py PORT OUTDIR
      PORT: a running gateway with http2.cleartext on and the routes of the gateway tests'
      fixture (/plain/, /api/); the driver's cases run against it while being recorded.
"""
import contextlib
import hashlib
import io
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gateway"))
import h2_driver  # noqa: E402

PREFACE = h2_driver.PREFACE
recorded = []


class Recording:
    """A socket that keeps what is sent through it."""

    def __init__(self, sock):
        self.sock = sock
        self.sent = bytearray()
        recorded.append(self.sent)

    def sendall(self, data):
        self.sent += data
        return self.sock.sendall(data)

    def __getattr__(self, name):
        return getattr(self.sock, name)


def main():
    port, outdir = sys.argv[1], sys.argv[2]
    real = socket.create_connection
    socket.create_connection = lambda *a, **k: Recording(real(*a, **k))
    with contextlib.redirect_stdout(io.StringIO()):
        h2_driver.cmd_conformance(port)
        h2_driver.cmd_request(int(port), "POST", "/api/orders", "idempotency-key:seed-1", "--body", "{}",
                              "--repeat", "2")
        h2_driver.cmd_concurrent(int(port), "/api/orders", "seed", "3", "2")
        h2_driver.cmd_cancel(int(port), "/api/orders", "seed-cancel")
    os.makedirs(outdir, exist_ok=True)
    written = 0
    for sent in recorded:
        data = bytes(sent)
        if data.startswith(PREFACE):
            data = data[len(PREFACE):]
        data = data[:16 * 1024]
        if not data:
            continue
        with open(os.path.join(outdir, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
        written += 1
    print(f"h2_seeds: {written} seeds in {outdir}")


if __name__ == "__main__":
    main()
