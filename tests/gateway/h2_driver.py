#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A raw-frame HTTP/2 client for tests/gateway/http2_test.cpp (Debian's python3-hyperframe and
python3-hpack, which python3-h2 is built on). It talks prior-knowledge HTTP/2 to a gateway on
127.0.0.1 and prints one JSON object per result line on stdout, so the C++ test can check it.

  request PORT METHOD PATH [name:value ...] [--body B] [--repeat N]
      N requests one after the other on one connection; one line per answer:
      {"status":..,"headers":[[name,value],..],"body":..}
  concurrent PORT PATH PREFIX KEYS DUPS [name:value ...]
      KEYS x DUPS keyed POSTs opened at once on one connection; one line:
      {"statuses":{status:count}, "resets":n, "goaway":code|null}
  cancel PORT PATH KEY [name:value ...] [--upstream UPSTREAM_PORT]
      a keyed POST reset (CANCEL) once the test upstream on UPSTREAM_PORT counts its execution
      (GET /__count), or 100 ms after it was sent without --upstream; prints {"reset":true}
  big PORT PATH KEY RESET_AFTER [name:value ...]
      a keyed POST whose answer is read frame by frame, its windows opened as DATA arrive; with
      RESET_AFTER > 0 the client resets the stream (CANCEL) once it has that many body bytes:
      {"status":..,"bytes":n,"ended":bool,"reset":code|null,"cancelled":bool}
  drain PORT PATH
      a POST held by the upstream; prints {"sent":true}, then waits for the GOAWAY and the
      answer: {"goaway":code,"last_stream":id,"status":..}
  stall PORT PATH
      a GET whose answer the client never opens a window for: {"got":"reset CANCEL","after_ms":n}
  httpx PORT URL CAFILE KEY
      a keyed POST with httpx (HTTP/2 by ALPN): {"http_version":..,"status":..,"replayed":..}
  settings PORT
      the server's SETTINGS: {"settings":{id:value}}
  idle PORT
      waits (up to 10 s) for the server to end an idle connection: {"goaway":code,"after_ms":n}
  conformance PORT
      the cases of CASES below, each on its own connection; one line per case:
      {"case":name,"expect":..,"got":..,"ok":bool}
"""
import json
import socket
import sys
import time

from hpack import Encoder, Decoder
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame,
                              PingFrame, RstStreamFrame, SettingsFrame, WindowUpdateFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
ERRORS = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR",
          5: "STREAM_CLOSED", 6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL",
          9: "COMPRESSION_ERROR", 11: "ENHANCE_YOUR_CALM"}


class Conn:
    def __init__(self, port, timeout=5.0, window=1 << 20):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.enc = Encoder()
        self.dec = Decoder()
        self.buf = b""
        self.closed = False
        self.send_failed = False
        self.window = window
        self.sock.sendall(PREFACE + SettingsFrame(0, settings={4: window}).serialize() +
                          WindowUpdateFrame(0, window_increment=(1 << 24)).serialize())

    def send(self, *frames):
        try:
            self.sock.sendall(b"".join(f.serialize() if isinstance(f, Frame) else f for f in frames))
        except OSError:
            self.send_failed = True  # what the peer sent before it closed may still be read

    def headers(self, stream_id, fields, end_stream=True):
        """HEADERS (and CONTINUATION frames for a block above 16 KiB) as bytes."""
        block = self.enc.encode(fields)
        chunks = [block[i:i + 16384] for i in range(0, max(len(block), 1), 16384)]
        out = b""
        for i, chunk in enumerate(chunks):
            flags = ["END_HEADERS"] if i == len(chunks) - 1 else []
            if i == 0:
                out += HeadersFrame(stream_id, data=chunk, flags=flags + (["END_STREAM"] if end_stream else [])).serialize()
            else:
                out += ContinuationFrame(stream_id, data=chunk, flags=flags).serialize()
        return out

    def frame(self, deadline):
        """The next frame, or None once the connection closed or the deadline passed."""
        while True:
            if len(self.buf) >= 9:
                length = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) >= 9 + length:
                    f, _ = Frame.parse_frame_header(memoryview(self.buf[:9]))
                    f.parse_body(memoryview(self.buf[9:9 + length]))
                    self.buf = self.buf[9 + length:]
                    if isinstance(f, SettingsFrame) and "ACK" not in f.flags:
                        self.send(SettingsFrame(0, flags=["ACK"]))
                    return f
            left = deadline - time.monotonic()
            if self.closed or left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, OSError):
                self.closed = True
                return None
            if not data:
                self.closed = True
                return None
            self.buf += data

    def collect(self, streams, timeout=5.0):
        """Answers of `streams` until each ended (or was reset), a GOAWAY, or the deadline."""
        deadline = time.monotonic() + timeout
        out = {s: {"headers": None, "body": b"", "reset": None, "done": False} for s in streams}
        goaway = None
        while not all(a["done"] for a in out.values()):
            f = self.frame(deadline)
            if f is None:
                break
            if isinstance(f, GoAwayFrame):
                goaway = {"code": ERRORS.get(f.error_code, f.error_code), "last_stream": f.last_stream_id}
                for s, a in out.items():
                    if s > f.last_stream_id:
                        a["done"] = True
                continue
            a = out.get(f.stream_id)
            if isinstance(f, (HeadersFrame, ContinuationFrame)):
                block = f.data
                while "END_HEADERS" not in f.flags:
                    f = self.frame(deadline)
                    if f is None:
                        break
                    block += f.data
                fields = [(n.decode() if isinstance(n, bytes) else n, v.decode() if isinstance(v, bytes) else v)
                          for n, v in self.dec.decode(block)]
                if a is not None:
                    a["headers"] = fields
                    if "END_STREAM" in f.flags:
                        a["done"] = True
            elif isinstance(f, DataFrame) and a is not None:
                a["body"] += f.data
                if f.data and self.window:
                    self.send(WindowUpdateFrame(f.stream_id, window_increment=len(f.data)))
                if "END_STREAM" in f.flags:
                    a["done"] = True
            elif isinstance(f, RstStreamFrame) and a is not None:
                a["reset"] = ERRORS.get(f.error_code, f.error_code)
                a["done"] = True
        return out, goaway


def status_of(answer):
    for n, v in answer["headers"] or []:
        if n == ":status":
            return int(v)
    return None


def request_fields(method, path, extra, port):
    fields = [(":method", method), (":scheme", "http"), (":authority", f"127.0.0.1:{port}"), (":path", path)]
    return fields + extra


def parse_extra(args):
    extra, body, repeat = [], "", 1
    i = 0
    while i < len(args):
        if args[i] == "--body":
            body = args[i + 1]
            i += 2
        elif args[i] == "--repeat":
            repeat = int(args[i + 1])
            i += 2
        else:
            name, value = args[i].split(":", 1)
            extra.append((name.lower(), value.strip()))
            i += 1
    return extra, body, repeat


def cmd_request(port, method, path, *rest):
    extra, body, repeat = parse_extra(rest)
    c = Conn(port)
    for n in range(repeat):
        sid = 1 + 2 * n
        c.send(c.headers(sid, request_fields(method, path, extra, port), end_stream=not body))
        if body:
            c.send(DataFrame(sid, data=body.encode(), flags=["END_STREAM"]))
        out, goaway = c.collect([sid])
        a = out[sid]
        print(json.dumps({"status": status_of(a), "headers": [f for f in a["headers"] or [] if f[0][0] != ":"],
                          "body": a["body"].decode(errors="replace"), "reset": a["reset"]}), flush=True)


def cmd_concurrent(port, path, prefix, keys, dups, *rest):
    extra, _, _ = parse_extra(rest)
    c = Conn(port)
    streams = []
    frames = []
    for d in range(int(dups)):
        for k in range(int(keys)):
            sid = 1 + 2 * len(streams)
            streams.append(sid)
            body = json.dumps({"key": k}).encode()
            fields = request_fields("POST", path, extra, port) + [
                ("idempotency-key", f"{prefix}-{k}"), ("content-type", "application/json"),
                ("content-length", str(len(body)))]
            frames.append(c.headers(sid, fields, end_stream=False))
            frames.append(DataFrame(sid, data=body, flags=["END_STREAM"]))
    c.send(*frames)
    out, goaway = c.collect(streams, timeout=15.0)
    statuses = {}
    for a in out.values():
        s = str(status_of(a))
        statuses[s] = statuses.get(s, 0) + 1
    print(json.dumps({"statuses": statuses, "resets": sum(1 for a in out.values() if a["reset"]),
                      "goaway": goaway and goaway["code"]}), flush=True)


def upstream_executions(port):
    """The test upstream's execution count (GET /__count: {"executions":N})."""
    with socket.create_connection(("127.0.0.1", int(port)), timeout=2) as s:
        s.sendall(b"GET /__count HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return json.loads(data.split(b"\r\n\r\n", 1)[1])["executions"]


def cmd_cancel(port, path, key, *rest):
    rest = list(rest)
    upstream = None
    if "--upstream" in rest:
        at = rest.index("--upstream")
        upstream = rest[at + 1]
        del rest[at:at + 2]
    extra, _, _ = parse_extra(rest)
    c = Conn(port)
    body = b'{"cancel":1}'
    fields = request_fields("POST", path, extra, port) + [("idempotency-key", key),
                                                          ("content-length", str(len(body)))]
    before = upstream_executions(upstream) if upstream else 0
    c.send(c.headers(1, fields, end_stream=False), DataFrame(1, data=body, flags=["END_STREAM"]))
    if upstream:
        # The reset must come after the request reached the upstream: wait for that (bounded).
        deadline = time.time() + 10
        while upstream_executions(upstream) <= before and time.time() < deadline:
            time.sleep(0.01)
    else:
        time.sleep(0.1)
    c.send(RstStreamFrame(1, error_code=8))
    time.sleep(0.05)
    print(json.dumps({"reset": True}), flush=True)


def cmd_big(port, path, key, reset_after, *rest):
    extra, _, _ = parse_extra(rest)
    reset_after = int(reset_after)
    c = Conn(port, timeout=20.0)
    body = b"{}"
    fields = request_fields("POST", path, extra, port) + [("idempotency-key", key),
                                                          ("content-length", str(len(body)))]
    c.send(c.headers(1, fields, end_stream=False), DataFrame(1, data=body, flags=["END_STREAM"]))
    deadline = time.monotonic() + 20.0
    status, got, ended, reset, cancelled = None, 0, False, None, False
    while not ended and reset is None and not cancelled:
        f = c.frame(deadline)
        if f is None:
            break
        if f.stream_id != 1:
            continue
        if isinstance(f, HeadersFrame):
            for n, v in c.dec.decode(f.data):
                n = n.decode() if isinstance(n, bytes) else n
                if n == ":status":
                    status = int(v)
            ended = "END_STREAM" in f.flags
        elif isinstance(f, DataFrame):
            got += len(f.data)
            ended = "END_STREAM" in f.flags
            if reset_after and got >= reset_after and not ended:
                c.send(RstStreamFrame(1, error_code=8))
                cancelled = True
                time.sleep(0.05)
            elif f.data:
                c.send(WindowUpdateFrame(0, window_increment=len(f.data)),
                       WindowUpdateFrame(1, window_increment=len(f.data)))
        elif isinstance(f, RstStreamFrame):
            reset = ERRORS.get(f.error_code, f.error_code)
    print(json.dumps({"status": status, "bytes": got, "ended": ended, "reset": reset, "cancelled": cancelled}),
          flush=True)


def cmd_drain(port, path):
    c = Conn(port, timeout=10.0)
    fields = request_fields("POST", path, [("x-test-delay-ms", "1500")], port)
    c.send(c.headers(1, fields, end_stream=True))
    print(json.dumps({"sent": True}), flush=True)
    out, goaway = c.collect([1], timeout=8.0)
    print(json.dumps({"goaway": goaway and goaway["code"], "last_stream": goaway and goaway["last_stream"],
                      "status": status_of(out[1])}), flush=True)


def cmd_stall(port, path):
    """A GET whose answer cannot be sent: the client's stream window is 0 and never opened."""
    c = Conn(port, window=0)
    c.send(c.headers(1, request_fields("GET", path, [("x-test-body-size", "1000")], port)))
    started = time.monotonic()
    got = outcome_after_headers(c, 1, timeout=8.0)
    print(json.dumps({"got": got, "after_ms": int((time.monotonic() - started) * 1000)}), flush=True)


def outcome_after_headers(c, sid, timeout):
    """The end of stream `sid` once its HEADERS came: 'reset CODE', 'ended' or 'timeout'."""
    deadline = time.monotonic() + timeout
    while True:
        f = c.frame(deadline)
        if f is None:
            return "closed" if c.closed else "timeout"
        if isinstance(f, RstStreamFrame) and f.stream_id == sid:
            return "reset " + ERRORS.get(f.error_code, str(f.error_code))
        if isinstance(f, HeadersFrame):
            c.dec.decode(f.data)
        if f.stream_id == sid and "END_STREAM" in f.flags:
            return "ended"


def cmd_httpx(port, url, cafile, key):
    """A keyed POST through httpx (Debian's python3-httpx) with HTTP/2 on, over TLS."""
    import httpx
    with httpx.Client(http2=True, verify=cafile, timeout=5.0) as client:
        r = client.post(url, headers={"Idempotency-Key": key, "Content-Type": "application/x-www-form-urlencoded"},
                        content=b"{}")
        print(json.dumps({"http_version": r.http_version, "status": r.status_code,
                          "replayed": r.headers.get("idempotent-replayed", "")}), flush=True)


def cmd_settings(port):
    c = Conn(port)
    deadline = time.monotonic() + 5
    while True:
        f = c.frame(deadline)
        if f is None or (isinstance(f, SettingsFrame) and "ACK" not in f.flags):
            break
    print(json.dumps({"settings": {str(k): v for k, v in (f.settings.items() if f else [])}}), flush=True)


def cmd_idle(port):
    c = Conn(port, timeout=12.0)
    started = time.monotonic()
    got = goaway_or_closed(c, timeout=10)
    print(json.dumps({"goaway": got, "after_ms": int((time.monotonic() - started) * 1000)}), flush=True)


# --- conformance: each case sends frames and names the outcome it expects -------------------

def outcome(c, sid, timeout=3.0):
    """'status N', 'reset CODE', 'goaway CODE' or 'closed' for stream `sid`."""
    out, goaway = c.collect([sid], timeout=timeout)
    a = out[sid]
    if a["reset"]:
        return "reset " + a["reset"]
    if a["headers"] is not None:
        return f"status {status_of(a)}"
    if goaway:
        return "goaway " + goaway["code"]
    return "closed" if c.closed else "timeout"


def goaway_or_closed(c, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        f = c.frame(deadline)
        if f is None:
            return "closed" if c.closed else "timeout"
        if isinstance(f, GoAwayFrame):
            return "goaway " + ERRORS.get(f.error_code, str(f.error_code))


def simple(port, extra=(), body=None, method="POST", path="/plain/conf", end=True):
    c = Conn(port)
    fields = request_fields(method, path, list(extra), port)
    c.send(c.headers(1, fields, end_stream=body is None and end))
    if body is not None:
        c.send(DataFrame(1, data=body, flags=["END_STREAM"] if end else []))
    return c


def case_ok_get(port):
    c = simple(port, method="GET", path="/plain/ok", extra=[("cookie", "a=1"), ("cookie", "b=2")])
    out, _ = c.collect([1])
    echo = json.loads(out[1]["body"] or b"{}")
    headers = echo.get("headers", {})
    return f"status {status_of(out[1])} host={headers.get('host')} cookie={headers.get('cookie')}"


def case_trailers(port):
    c = Conn(port)
    c.send(c.headers(1, request_fields("POST", "/plain/t", [], port), end_stream=False),
           DataFrame(1, data=b"abc"), c.headers(1, [("x-late", "1")], end_stream=True))
    return outcome(c, 1)


def case_data_on_stream_0(port):
    c = Conn(port)
    c.send(DataFrame(0, data=b"x") if False else b"\x00\x00\x01\x00\x00\x00\x00\x00\x00x")
    return goaway_or_closed(c)


def case_even_stream(port):
    c = Conn(port)
    c.send(c.headers(2, request_fields("GET", "/plain/x", [], port)))
    return goaway_or_closed(c)


def case_zero_window_update(port):
    c = Conn(port)
    c.send(b"\x00\x00\x04\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00")
    return goaway_or_closed(c)


def case_oversized_frame(port):
    c = Conn(port)
    c.send(DataFrame(1, data=b"x" * 20000))  # larger than SETTINGS_MAX_FRAME_SIZE 16384
    return goaway_or_closed(c)


def case_bad_hpack(port):
    c = Conn(port)
    c.send(HeadersFrame(1, data=b"\xff\xff\xff\xff\x0f", flags=["END_HEADERS", "END_STREAM"]))
    return goaway_or_closed(c)


def case_bad_preface(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n")
    try:
        data = s.recv(65536)
        while data:
            data = s.recv(65536)
    except OSError:
        pass
    return "closed"


def case_rapid_reset(port):
    c = Conn(port)
    frames = []
    for i in range(3000):
        sid = 1 + 2 * i
        frames.append(c.headers(sid, request_fields("GET", "/plain/rr", [], port)))
        frames.append(RstStreamFrame(sid, error_code=8))
        if len(frames) >= 200:
            c.send(*frames)
            frames = []
    c.send(*frames)
    return goaway_or_closed(c, timeout=10)


def case_continuation_flood(port):
    c = Conn(port)
    block = c.enc.encode(request_fields("GET", "/plain/cf", [], port))
    c.send(HeadersFrame(1, data=block, flags=[]))
    for i in range(2000):
        c.send(ContinuationFrame(1, data=c.enc.encode([(f"x-c{i}", "v")]), flags=[]))
        if c.send_failed:
            break
    return goaway_or_closed(c)


def case_ping_flood(port):
    c = Conn(port)
    for i in range(200):
        c.send(*[PingFrame(0, opaque_data=(i * 50 + j).to_bytes(8, "big")) for j in range(50)])
        if c.send_failed:
            break
    return goaway_or_closed(c)


def case_settings_flood(port):
    c = Conn(port)
    for i in range(100):
        c.send(*[SettingsFrame(0, settings={4: 65535 + j}) for j in range(50)])
        if c.send_failed:
            break
    return goaway_or_closed(c)


CASES = [
    # (name, RFC 9113 section, function or request spec, expected outcome)
    ("well-formed GET: :authority as Host, cookie crumbs joined", "8.3.1, 8.2.3", case_ok_get,
     "status 201 host=127.0.0.1:{port} cookie=a=1; b=2"),
    ("connection-specific header", "8.2.2", dict(extra=[("connection", "keep-alive")]), "reset PROTOCOL_ERROR"),
    ("transfer-encoding header", "8.2.2", dict(extra=[("transfer-encoding", "chunked")], body=b"x"),
     "reset PROTOCOL_ERROR"),
    ("te other than trailers", "8.2.2", dict(extra=[("te", "gzip")]), "reset PROTOCOL_ERROR"),
    ("te: trailers is accepted", "8.2.2", dict(extra=[("te", "trailers")], method="GET"), "status 201"),
    ("upper-case field name", "8.2.1", dict(extra=[("X-Upper", "1")]), "reset PROTOCOL_ERROR"),
    ("pseudo-header after a regular field", "8.3", dict(extra=[("x-a", "1"), (":path", "/plain/x")]),
     "reset PROTOCOL_ERROR"),
    ("unknown pseudo-header", "8.3", dict(extra=[(":foo", "1")]), "reset PROTOCOL_ERROR"),
    ("content-length larger than DATA", "8.1.1", dict(extra=[("content-length", "10")], body=b"12345"),
     "reset PROTOCOL_ERROR"),
    ("content-length smaller than DATA", "8.1.1", dict(extra=[("content-length", "2")], body=b"12345"),
     "reset PROTOCOL_ERROR"),
    ("trailer fields are refused (as over HTTP/1.1)", "8.1", case_trailers, "status 400"),
    ("header list above limits.max_header_bytes", "10.5.1", dict(extra=[("x-big", "y" * 20000)]),
     "status 431"),
    ("body above limits.max_request_body", "8.1", dict(body=b"z" * 9000), "status 413"),
    ("DATA on stream 0", "6.1", case_data_on_stream_0, "goaway PROTOCOL_ERROR"),
    ("even client stream id", "5.1.1", case_even_stream, "goaway PROTOCOL_ERROR"),
    ("WINDOW_UPDATE of 0 on the connection", "6.9", case_zero_window_update, "goaway PROTOCOL_ERROR"),
    ("frame above SETTINGS_MAX_FRAME_SIZE", "4.2", case_oversized_frame, "goaway FRAME_SIZE_ERROR"),
    ("invalid HPACK index", "RFC 7541 2.3.3", case_bad_hpack, "goaway COMPRESSION_ERROR"),
    ("invalid connection preface", "3.4", case_bad_preface, "closed"),
    ("Rapid Reset: 3000 streams opened and cancelled", "CVE-2023-44487", case_rapid_reset,
     "goaway ENHANCE_YOUR_CALM"),
    ("CONTINUATION flood", "CVE-2024-27316", case_continuation_flood, "goaway *"),
    ("PING flood", "CVE-2019-9512", case_ping_flood, "goaway ENHANCE_YOUR_CALM"),
    ("SETTINGS flood", "CVE-2019-9515", case_settings_flood, "goaway ENHANCE_YOUR_CALM"),
]


def cmd_conformance(port, only=None):
    port = int(port)
    for name, section, spec, expect in CASES:
        if only and only not in name:
            continue
        expect = expect.replace("{port}", str(port))
        try:
            if callable(spec):
                got = spec(port)
            else:
                opts = dict(spec)
                c = simple(port, **opts)
                got = outcome(c, 1)
        except Exception as e:  # a case that cannot run is a failed case, not a crash
            got = f"error {type(e).__name__}: {e}"
        ok = got == expect or (expect.endswith("*") and got.startswith(expect[:-1]))
        print(json.dumps({"case": name, "section": section, "expect": expect, "got": got, "ok": ok}),
              flush=True)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    port = int(args[0])
    {"request": cmd_request, "concurrent": cmd_concurrent, "cancel": cmd_cancel, "big": cmd_big, "drain": cmd_drain,
     "settings": cmd_settings, "stall": cmd_stall, "httpx": cmd_httpx, "idle": cmd_idle, "conformance": cmd_conformance}[cmd](port, *args[1:])


if __name__ == "__main__":
    main()
