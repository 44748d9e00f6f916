#!/usr/bin/env python3
"""Hostile HTTP/2 clients against a running `aasa serve` (docs/serving.md, "HTTP/2"), over real loopback sockets.

Each case attacks one connection, reads the server's protocol answer (GOAWAY with its error code,
or RST_STREAM), and meanwhile has curl fetch the association file on another connection: it must
be answered, quickly, while the attack connection is still open. After each case the server
process must still be running.

One line per case and transport: `PASS <transport> <case>: <what was observed>` or `FAIL ...`.
The exit status is 1 when any case failed. Only the standard library and the `h2` package
(with its `hpack` and `hyperframe`) are used; every loop is bounded and every wait has a time-out.

    hostile.py --pid PID --https PORT --http PORT --ca CA.pem [--case NAME ...] [--transport tls|h2c|both]
    hostile.py ... --shutdown-watch    (the caller sends SIGTERM once it printed `loaded` per transport)
"""

import argparse
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
from h2.errors import ErrorCodes
from hpack import Decoder
from hyperframe.frame import (DataFrame, Frame, GoAwayFrame, HeadersFrame, PingFrame, RstStreamFrame,
                              SettingsFrame, WindowUpdateFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
WELL_KNOWN = "/.well-known/apple-app-site-association"
AUTHORITY = "example.com"

# Frame types and flags (RFC 9113 §6).
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PING, WINDOW_UPDATE, CONTINUATION = 0x0, 0x1, 0x2, 0x3, 0x4, 0x6, 0x8, 0x9
END_STREAM, ACK, END_HEADERS, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x20
SETTINGS_INITIAL_WINDOW_SIZE = 0x4
MAX_WINDOW = 2**31 - 1

ANSWER_TIMEOUT = 5.0      # seconds for the server's protocol answer
BYSTANDER_LIMIT = 2.0     # seconds one bystander request may take


def code_name(code):
    try:
        return ErrorCodes(code).name
    except ValueError:
        return f"0x{code:x}"


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream & 0x7FFFFFFF) + payload


def hpack_int(value, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def literal(name, value, indexed=False):
    """A literal field with a new name, not Huffman-coded (RFC 7541 §6.2): with incremental
    indexing (it enters the dynamic table) or never indexed."""
    first = 0x40 if indexed else 0x10
    n, v = name.encode(), value.encode()
    return bytes([first]) + hpack_int(len(n), 7) + n + hpack_int(len(v), 7) + v


def request_block(method="GET", authority=AUTHORITY, path=WELL_KNOWN, extra=()):
    """A request's header block of never-indexed literals: it leaves HPACK's dynamic table as it
    was, so the same bytes can be sent any number of times on a connection."""
    fields = [(":method", method), (":scheme", "https"), (":authority", authority), (":path", path)] + list(extra)
    return b"".join(literal(name, value) for name, value in fields)


class Peer:
    """One raw HTTP/2 client connection: frames are written byte for byte, whatever they say, and
    the server's frames are parsed with hyperframe as they come. The server's SETTINGS are
    acknowledged like a normal client would, unless `acks` is off."""

    def __init__(self, opts, transport, rcvbuf=None, acks=True, server_name=AUTHORITY):
        self.transport = transport
        self.acks = acks
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        raw.settimeout(ANSWER_TIMEOUT)
        if transport == "tls":
            raw.connect(("127.0.0.1", opts.https))
            context = ssl.create_default_context(cafile=opts.ca)
            context.set_alpn_protocols(["h2"])
            self.sock = context.wrap_socket(raw, server_hostname=server_name)
            if self.sock.selected_alpn_protocol() != "h2":
                raise RuntimeError(f"ALPN picked {self.sock.selected_alpn_protocol()!r}, not h2")
        else:
            raw.connect(("127.0.0.1", opts.http))
            self.sock = raw
        self.buffer = b""
        self.closed = False          # the server closed (EOF or reset)
        self.send_failed = False
        self.goaway = None           # the last GoAwayFrame
        self.goaways = []            # every GoAwayFrame, in order
        self.resets = {}             # stream id -> error code
        self.statuses = {}           # stream id -> :status
        self.ended = set()           # streams whose response ended (END_STREAM)
        self.body_bytes = {}         # stream id -> DATA bytes
        self.window_updates = []     # (stream id, increment)
        self.ping_acks = 0
        self.settings_acks = 0
        self.frames = 0
        self.raw_bytes = b""         # what came before the first frame could be parsed (HTTP/1.1)
        self.decoder = Decoder()

    def send(self, data):
        if self.send_failed:
            return False
        try:
            self.sock.sendall(data)
            return True
        except (OSError, ssl.SSLError):
            self.send_failed = True
            return False

    def start(self, settings=b""):
        return self.send(PREFACE + frame(SETTINGS, 0, 0, settings))

    def pump(self, timeout):
        """Reads and parses what arrives within `timeout` seconds; stops at EOF."""
        if self.closed:
            return
        deadline = time.monotonic() + timeout
        while not self.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                self.sock.settimeout(left)
                chunk = self.sock.recv(65536)
            except (socket.timeout, TimeoutError):
                return
            except ssl.SSLWantReadError:
                continue
            except (OSError, ssl.SSLError):
                self.closed = True
                return
            if not chunk:
                self.closed = True
                return
            self.buffer += chunk
            self.parse()

    def parse(self):
        while len(self.buffer) >= 9:
            try:
                header, length = Frame.parse_frame_header(memoryview(self.buffer[:9]))
            except Exception:
                self.raw_bytes += self.buffer
                self.buffer = b""
                return
            if len(self.buffer) < 9 + length:
                return
            header.parse_body(memoryview(self.buffer[9:9 + length]))
            self.buffer = self.buffer[9 + length:]
            self.frames += 1
            self.record(header)

    def record(self, f):
        if isinstance(f, GoAwayFrame):
            self.goaway = f
            self.goaways.append(f)
        elif isinstance(f, RstStreamFrame):
            self.resets[f.stream_id] = f.error_code
        elif isinstance(f, HeadersFrame):
            for name, value in self.decoder.decode(f.data):
                if name == ":status":
                    self.statuses[f.stream_id] = int(value)
            if "END_STREAM" in f.flags:
                self.ended.add(f.stream_id)
        elif isinstance(f, DataFrame):
            self.body_bytes[f.stream_id] = self.body_bytes.get(f.stream_id, 0) + len(f.data)
            if "END_STREAM" in f.flags:
                self.ended.add(f.stream_id)
        elif isinstance(f, WindowUpdateFrame):
            self.window_updates.append((f.stream_id, f.window_increment))
        elif isinstance(f, PingFrame):
            if "ACK" in f.flags:
                self.ping_acks += 1
        elif isinstance(f, SettingsFrame):
            if "ACK" in f.flags:
                self.settings_acks += 1
            elif self.acks:
                self.send(frame(SETTINGS, ACK, 0))

    def wait(self, condition, timeout=ANSWER_TIMEOUT):
        deadline = time.monotonic() + timeout
        while not condition() and not self.closed and time.monotonic() < deadline:
            self.pump(0.05)
        return condition()

    def wait_closed(self, timeout=ANSWER_TIMEOUT):
        return self.wait(lambda: self.closed, timeout)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# MARK: - The other client, served meanwhile


class Bystander:
    """curl fetching the association file over HTTP/2 on its own connections, again and again,
    while an attack runs: every request must be answered 200 within BYSTANDER_LIMIT."""

    def __init__(self, opts, transport):
        if transport == "tls":
            self.command = ["curl", "-sS", "--http2", "--cacert", opts.ca,
                            "--resolve", f"{AUTHORITY}:{opts.https}:127.0.0.1", f"https://{AUTHORITY}:{opts.https}{WELL_KNOWN}"]
        else:
            self.command = ["curl", "-sS", "--http2-prior-knowledge", "-H", f"Host: {AUTHORITY}",
                            f"http://127.0.0.1:{opts.http}{WELL_KNOWN}"]
        self.command += ["-o", "/dev/null", "-w", "%{http_code} %{http_version} %{time_total}", "--max-time", "5"]
        self.results = []   # (ok, seconds, text)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(10)

    def run(self):
        while not self.stopping.is_set() and len(self.results) < 200:
            started = time.monotonic()
            r = subprocess.run(self.command, capture_output=True, text=True, timeout=10)
            elapsed = time.monotonic() - started
            ok = r.returncode == 0 and r.stdout.startswith("200 2 ") and elapsed < BYSTANDER_LIMIT
            self.results.append((ok, elapsed, (r.stdout + " " + r.stderr).strip()))

    def served_meanwhile(self, at_least=2, timeout=10):
        """Waits (the attack connection still open) until `at_least` more requests were made."""
        target = len(self.results) + at_least
        deadline = time.monotonic() + timeout
        while len(self.results) < target and time.monotonic() < deadline:
            time.sleep(0.02)
        self.stopping.set()
        self.thread.join(10)
        good = [r for r in self.results if r[0]]
        bad = [r for r in self.results if not r[0]]
        slowest = max((r[1] for r in self.results), default=0)
        verdict = not bad and len(good) >= at_least
        summary = f"bystander {len(good)}/{len(self.results)} served, slowest {slowest:.2f}s"
        if bad:
            summary += f" (first failure: {bad[0][2]!r} after {bad[0][1]:.2f}s)"
        return verdict, summary


# MARK: - Checks


class Case:
    def __init__(self, opts, transport):
        self.opts = opts
        self.transport = transport
        self.failures = []
        self.notes = []

    def expect(self, condition, what):
        if not condition:
            self.failures.append(what)
        return condition

    def note(self, text):
        self.notes.append(text)

    def expect_goaway(self, peer, code, why):
        peer.wait(lambda: peer.goaway is not None)
        got = peer.goaway
        if self.expect(got is not None, f"no GOAWAY ({why}); closed={peer.closed}, frames={peer.frames}"):
            self.expect(got.error_code == code, f"GOAWAY {code_name(got.error_code)}, expected {code_name(code)}")
            self.note(f"GOAWAY {code_name(got.error_code)} (last stream {got.last_stream_id})")
        self.expect(peer.wait_closed(), "connection not closed after GOAWAY")

    def expect_reset(self, peer, stream, code, why):
        peer.wait(lambda: stream in peer.resets)
        got = peer.resets.get(stream)
        if self.expect(got is not None, f"no RST_STREAM on stream {stream} ({why}); goaway={peer.goaway and code_name(peer.goaway.error_code)}"):
            self.expect(got == code, f"RST_STREAM {code_name(got)}, expected {code_name(code)}")
            self.note(f"RST_STREAM {code_name(got)} on stream {stream}")

    def expect_served(self, peer, stream, why):
        """A normal request on the same connection: 200 and the whole body."""
        peer.send(frame(HEADERS, END_HEADERS | END_STREAM, stream, request_block()))
        peer.wait(lambda: stream in peer.ended)
        status = peer.statuses.get(stream)
        if self.expect(status == 200 and stream in peer.ended, f"stream {stream} not answered 200 ({why}): {status}"):
            self.note(f"then stream {stream} 200 on the same connection")

    def expect_alive(self):
        try:
            with open(f"/proc/{self.opts.pid}/status") as f:
                state = next(line for line in f if line.startswith("State:"))
            self.expect(" Z " not in state and "zombie" not in state, f"server process {state.strip()}")
        except FileNotFoundError:
            self.expect(False, "server process is gone")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# MARK: - The cases. Each runs the attack inside a Bystander and returns what it observed.


def rapid_reset(case):
    """CVE-2023-44487: complete requests, each cancelled at once, far faster than 10 a second."""
    peer = Peer(case.opts, case.transport)
    with Bystander(case.opts, case.transport) as bystander:
        peer.start()
        block = request_block()
        sent = 0
        for batch in range(20):                      # at most 1000 streams
            data = b""
            for i in range(50):
                stream = 2 * (batch * 50 + i) + 1
                data += frame(HEADERS, END_HEADERS | END_STREAM, stream, block) + frame(RST_STREAM, 0, stream, struct.pack(">I", ErrorCodes.CANCEL))
            if not peer.send(data):
                break
            sent += 50
            peer.pump(0)
            if peer.goaway or peer.closed:
                break
        case.expect_goaway(peer, ErrorCodes.ENHANCE_YOUR_CALM, f"{sent} streams opened and reset")
        case.note(f"after {sent} HEADERS+RST_STREAM pairs sent")
        ok, summary = bystander.served_meanwhile()
    peer.close()
    case.expect(ok, summary)
    case.note(summary)


def continuation_flood(case):
    """CVE-2024-28182: a header block that never ends, one byte per CONTINUATION frame."""
    peer = Peer(case.opts, case.transport)
    with Bystander(case.opts, case.transport) as bystander:
        peer.start()
        block = request_block() + literal("x-pad", "a" * 2000)
        peer.send(frame(HEADERS, 0, 1, block[:40]))
        sent = 0
        for offset in range(40, min(len(block), 40 + 1000)):    # at most 1000 frames, never END_HEADERS
            if not peer.send(frame(CONTINUATION, 0, 1, block[offset:offset + 1])):
                break
            sent += 1
            if sent % 50 == 0:
                peer.pump(0)
                if peer.goaway or peer.closed:
                    break
        case.expect_goaway(peer, ErrorCodes.ENHANCE_YOUR_CALM, f"{sent} CONTINUATION frames")
        case.note(f"after {sent} CONTINUATION frames sent")
        ok, summary = bystander.served_meanwhile()
    peer.close()
    case.expect(ok, summary)
    case.note(summary)


def oversized_header_block(case):
    """A 20 000-byte header block as received (HEADERS + CONTINUATION), then, on another
    connection, a block of a few bytes that decodes to over 16 KiB through HPACK's dynamic table."""
    peer = Peer(case.opts, case.transport)
    with Bystander(case.opts, case.transport) as bystander:
        peer.start()
        block = request_block() + literal("x-big", "a" * 20000)
        peer.send(frame(HEADERS, 0, 1, block[:16000]) + frame(CONTINUATION, END_HEADERS | END_STREAM, 1, block[16000:]))
        case.expect_goaway(peer, ErrorCodes.ENHANCE_YOUR_CALM, "20000-byte header block")
        case.note(f"for a {len(block)}-byte block as received;")
        ok, summary = bystander.served_meanwhile()
    peer.close()
    case.expect(ok, summary)

    decoded = Peer(case.opts, case.transport)
    decoded.start()
    # 4000 bytes enter the dynamic table with a request that is served (the list is under 16 KiB)...
    decoded.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block() + literal("x-big", "b" * 4000, indexed=True)))
    decoded.wait(lambda: 1 in decoded.ended)
    case.expect(decoded.statuses.get(1) == 200, f"the 4 KB request was not answered 200: {decoded.statuses.get(1)}")
    # ...then five references to it (index 62, the newest entry): 20 KB decoded from a few bytes.
    small = request_block() + bytes([0x80 | 62]) * 5
    decoded.send(frame(HEADERS, END_HEADERS | END_STREAM, 3, small))
    case.expect_goaway(decoded, ErrorCodes.ENHANCE_YOUR_CALM, "20 KB decoded from a small block")
    case.note(f"for a {len(small)}-byte block that decodes to over 20 KB")
    decoded.close()
    case.note(summary)


def headers_on_closed_stream(case):
    """HEADERS on a stream that is closed to the client (RFC 9113 §5.1). Half-closed (remote), its
    response held back by a zero window: GOAWAY STREAM_CLOSED. Closed both ways (answered, and out
    of the session's table): GOAWAY STREAM_CLOSED too, from its record of the last streams to
    close."""
    with Bystander(case.opts, case.transport) as bystander:
        peer = Peer(case.opts, case.transport)
        peer.start(struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, 0))
        peer.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block()))
        case.expect(peer.wait(lambda: 1 in peer.statuses) and 1 not in peer.ended, "stream 1 not held open by the zero window")
        peer.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block()))
        case.expect_goaway(peer, ErrorCodes.STREAM_CLOSED, "HEADERS on half-closed stream 1")
        case.note("for HEADERS on a half-closed (remote) stream;")
        peer.close()

        closed = Peer(case.opts, case.transport)
        closed.start()
        closed.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block()))
        case.expect(closed.wait(lambda: 1 in closed.ended) and closed.statuses.get(1) == 200, "stream 1 not answered 200 first")
        closed.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block()))
        case.expect_goaway(closed, ErrorCodes.STREAM_CLOSED, "HEADERS on closed stream 1")
        case.note("for HEADERS on a closed stream;")
        closed.close()
        ok, summary = bystander.served_meanwhile()
    case.expect(ok, summary)
    case.note(summary)


def stream_states(case):
    """The late frames RFC 9113 §5.1 and §6.1 name, each on a connection of its own: DATA after
    the client's END_STREAM (before and after the answer), DATA and HEADERS after the client's
    RST_STREAM: STREAM_CLOSED; HEADERS on a stream id lower than one already used (§5.1.1):
    PROTOCOL_ERROR. Each is answered with GOAWAY and the close."""
    with Bystander(case.opts, case.transport) as bystander:
        attempts = [
            ("DATA right after END_STREAM", ErrorCodes.STREAM_CLOSED,
             lambda p: p.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block()) + frame(DATA, END_STREAM, 1, b"test"))),
            ("DATA on an answered stream", ErrorCodes.STREAM_CLOSED,
             lambda p: (p.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block())),
                        p.wait(lambda: 1 in p.ended), p.send(frame(DATA, END_STREAM, 1, b"test")))),
            ("DATA after RST_STREAM", ErrorCodes.STREAM_CLOSED,
             lambda p: p.send(frame(HEADERS, END_HEADERS, 1, request_block()) + frame(RST_STREAM, 0, 1, struct.pack(">I", 8))
                              + frame(DATA, END_STREAM, 1, b"test"))),
            ("HEADERS after RST_STREAM", ErrorCodes.STREAM_CLOSED,
             lambda p: p.send(frame(HEADERS, END_HEADERS, 1, request_block()) + frame(RST_STREAM, 0, 1, struct.pack(">I", 8))
                              + frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block()))),
            ("stream 3 after stream 5", ErrorCodes.PROTOCOL_ERROR,
             lambda p: p.send(frame(HEADERS, END_HEADERS | END_STREAM, 5, request_block())
                              + frame(HEADERS, END_HEADERS | END_STREAM, 3, request_block()))),
        ]
        for what, code, attack in attempts:
            peer = Peer(case.opts, case.transport)
            peer.start()
            attack(peer)
            case.expect_goaway(peer, code, what)
            case.note(f"for {what};")
            peer.close()
        ok, summary = bystander.served_meanwhile()
    case.expect(ok, summary)
    case.note(summary)


def priority(case):
    """PRIORITY on stream 0 is a connection error (RFC 9113 §6.3); a stream that depends on
    itself, by PRIORITY or in HEADERS, is PROTOCOL_ERROR (RFC 7540 §5.3.1), though the
    server sends SETTINGS_NO_RFC7540_PRIORITIES and keeps no priority tree."""
    with Bystander(case.opts, case.transport) as bystander:
        attempts = [
            ("PRIORITY on stream 0", frame(PRIORITY, 0, 0, struct.pack(">IB", 1, 15))),
            ("PRIORITY on itself", frame(PRIORITY, 0, 1, struct.pack(">IB", 1, 15))),
            ("HEADERS on itself", frame(HEADERS, END_HEADERS | END_STREAM | PRIORITY_FLAG, 1,
                                        struct.pack(">IB", 1, 15) + request_block())),
        ]
        for what, attack in attempts:
            peer = Peer(case.opts, case.transport)
            peer.start()
            peer.send(attack)
            case.expect_goaway(peer, ErrorCodes.PROTOCOL_ERROR, what)
            case.note(f"for {what};")
            peer.close()
        # A valid PRIORITY frame is still accepted, and the connection goes on.
        peer = Peer(case.opts, case.transport)
        peer.start()
        peer.send(frame(PRIORITY, 0, 1, struct.pack(">IB", 0, 15)))
        case.expect_served(peer, 1, "after a valid PRIORITY frame")
        peer.close()
        ok, summary = bystander.served_meanwhile()
    case.expect(ok, summary)
    case.note(summary)


def bad_preface(case):
    """Over TLS with ALPN h2: bytes that are not the client preface, then a preface followed by
    PING where SETTINGS must come (RFC 9113 §3.4). On the plain listener the opening bytes decide
    the protocol: a broken preface is not HTTP/2, so it is answered as HTTP/1.1."""
    with Bystander(case.opts, case.transport) as bystander:
        if case.transport == "tls":
            peer = Peer(case.opts, "tls")
            peer.send(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + frame(SETTINGS, 0, 0))
            case.expect_goaway(peer, ErrorCodes.PROTOCOL_ERROR, "broken preface")
            case.note("for a broken preface;")
            peer.close()
            second = Peer(case.opts, "tls")
            second.send(PREFACE + frame(PING, 0, 0, b"12345678"))
            case.expect_goaway(second, ErrorCodes.PROTOCOL_ERROR, "PING before SETTINGS")
            case.note("for PING before SETTINGS")
            second.close()
        else:
            # On the plain listener an opening whose version is not HTTP/1.x is an HTTP/2
            # client's broken preface: HTTP/2's answer (RFC 9113 §3.4), not HTTP/1.1's.
            for opening in (b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n", b"INVALID CONNECTION PREFACE\r\n\r\n"):
                peer = Peer(case.opts, "h2c")
                peer.send(opening)
                case.expect_goaway(peer, ErrorCodes.PROTOCOL_ERROR, f"broken preface {opening[:10]!r}")
                peer.close()
            case.note("for a broken preface;")
            # An HTTP/1.1 request with a bad request line still gets HTTP/1.1's 400.
            peer = Peer(case.opts, "h2c")
            peer.send(b"GET /\x01 HTTP/1.1\r\nHost: example.com\r\n\r\n")
            peer.wait_closed()
            text = (peer.raw_bytes + peer.buffer).decode("latin-1")
            case.expect(text.startswith("HTTP/1.1 400 "), f"not an HTTP/1.1 400: {text[:80]!r}")
            case.note("HTTP/1.1 400 for a bad HTTP/1.1 request line;")
            peer.close()
            second = Peer(case.opts, "h2c")
            second.send(PREFACE + frame(PING, 0, 0, b"12345678"))
            case.expect_goaway(second, ErrorCodes.PROTOCOL_ERROR, "PING before SETTINGS")
            case.note("for PING before SETTINGS")
            second.close()
        ok, summary = bystander.served_meanwhile()
    case.expect(ok, summary)
    case.note(summary)


def window_update_overflow(case):
    """WINDOW_UPDATE that pushes a flow-control window past 2^31-1 (RFC 9113 §6.9.1): on the
    connection a connection error, on a stream a stream error (the connection goes on)."""
    peer = Peer(case.opts, case.transport)
    with Bystander(case.opts, case.transport) as bystander:
        peer.start()
        # A request still open (no END_STREAM): its window is 65 535.
        peer.send(frame(HEADERS, END_HEADERS, 1, request_block()))
        peer.send(frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", MAX_WINDOW)))
        case.expect_reset(peer, 1, ErrorCodes.FLOW_CONTROL_ERROR, "stream window overflow")
        case.expect_served(peer, 3, "after a stream error")
        peer.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", MAX_WINDOW)))
        case.expect_goaway(peer, ErrorCodes.FLOW_CONTROL_ERROR, "connection window overflow")
        ok, summary = bystander.served_meanwhile()
    peer.close()
    case.expect(ok, summary)
    case.note(summary)


def flood(case, name, unit, count, opener=b""):
    peer = Peer(case.opts, case.transport)
    with Bystander(case.opts, case.transport) as bystander:
        peer.start()
        peer.send(opener)
        sent = 0
        for _ in range(count // 100):                 # bounded: `count` frames at most
            if not peer.send(unit * 100):
                break
            sent += 100
            peer.pump(0)
            if peer.goaway or peer.closed:
                break
        case.expect_goaway(peer, ErrorCodes.ENHANCE_YOUR_CALM, f"{sent} {name} frames")
        case.note(f"after {sent} {name} frames sent")
        if name == "PING":
            case.note(f"{peer.ping_acks} PING ACKs before it")
        ok, summary = bystander.served_meanwhile()
    peer.close()
    case.expect(ok, summary)
    case.note(summary)


def settings_flood(case):
    """CVE-2019-9515: SETTINGS frames, each of which the server must acknowledge."""
    flood(case, "SETTINGS", frame(SETTINGS, 0, 0, struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, 65535)), 2000)


def ping_flood(case):
    """CVE-2019-9512: PING frames, each of which the server must answer."""
    flood(case, "PING", frame(PING, 0, 0, b"abcdefgh"), 2000)


def empty_data_flood(case):
    """CVE-2019-9518: DATA frames with no payload and no END_STREAM on an open request."""
    flood(case, "empty DATA", frame(DATA, 0, 1), 2000, opener=frame(HEADERS, END_HEADERS, 1, request_block(method="POST")))


def request_body_over_64k(case):
    """A request body over 64 KiB: announced (content-length), then sent by a well-behaved client
    (h2's own flow control) with no content-length. Each stream is reset; the connection goes on."""
    with Bystander(case.opts, case.transport) as bystander:
        peer = Peer(case.opts, case.transport)
        peer.start()
        peer.send(frame(HEADERS, END_HEADERS, 1, request_block(method="POST", extra=[("content-length", "100000")])))
        case.expect_reset(peer, 1, ErrorCodes.CANCEL, "content-length: 100000")
        case.note("for content-length 100000;")
        case.expect_served(peer, 3, "after the reset")
        peer.close()

        sock = Peer(case.opts, case.transport).sock
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        conn.send_headers(1, [(":method", "POST"), (":scheme", "https"), (":authority", AUTHORITY), (":path", WELL_KNOWN)])
        sent, reset, answered = 0, None, None
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while reset is None and time.monotonic() < deadline and sent < 1_000_000:
            window = conn.local_flow_control_window(1)
            if window > 0:
                size = min(window, conn.max_outbound_frame_size)
                try:
                    conn.send_data(1, b"x" * size)
                    sent += size
                except h2.exceptions.StreamClosedError:
                    pass
            sock.sendall(conn.data_to_send())
            sock.settimeout(0.2 if window <= 0 else 0.001)
            try:
                data = sock.recv(65536)
            except (socket.timeout, TimeoutError, ssl.SSLWantReadError):
                continue
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.StreamReset) and event.stream_id == 1:
                    reset = event.error_code
            sock.sendall(conn.data_to_send())
        if case.expect(reset == ErrorCodes.CANCEL, f"body of {sent} bytes: reset {reset}, expected CANCEL"):
            case.note(f"RST_STREAM CANCEL after {sent} body bytes sent (flow control respected)")
        # The connection is still good: a GET on stream 3 (h2 answers the server's frames).
        conn.send_headers(3, [(":method", "GET"), (":scheme", "https"), (":authority", AUTHORITY), (":path", WELL_KNOWN)], end_stream=True)
        sock.sendall(conn.data_to_send())
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while answered is None and time.monotonic() < deadline:
            sock.settimeout(0.2)
            try:
                data = sock.recv(65536)
            except (socket.timeout, TimeoutError, ssl.SSLWantReadError):
                continue
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == 3:
                    answered = dict(event.headers).get(":status")
            sock.sendall(conn.data_to_send())
        if case.expect(answered == "200", f"stream 3 after the reset: {answered}"):
            case.note("then stream 3 200")
        sock.close()
        ok, summary = bystander.served_meanwhile()
    case.expect(ok, summary)
    case.note(summary)


def never_reads(case):
    """Clients that open windows wide (2^31-1), ask for the largest file 100 times each, and never
    read a byte: the server may buffer only a bounded amount per connection (docs/serving.md, "HTTP/2"), so its
    resident memory stays far below what the responses add up to."""
    opts = case.opts
    connections, streams = opts.never_read_connections, 100
    block = request_block(authority=opts.big_authority)
    # Warm up: the big file served once, the loop's buffers grown, on a connection of its own.
    warm = Peer(opts, case.transport, server_name=opts.big_authority)
    warm.start(struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW))
    warm.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", MAX_WINDOW - 65535)) + frame(HEADERS, END_HEADERS | END_STREAM, 1, block))
    warm.wait(lambda: 1 in warm.ended)
    big = warm.body_bytes.get(1, 0)
    case.expect(warm.statuses.get(1) == 200 and big > 100_000, f"the big file: status {warm.statuses.get(1)}, {big} bytes")
    warm.close()
    time.sleep(0.3)
    before = rss_kib(opts.pid)

    peers = []
    with Bystander(opts, case.transport) as bystander:
        for _ in range(connections):
            peer = Peer(opts, case.transport, rcvbuf=4096, acks=False, server_name=opts.big_authority)
            data = PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW))
            data += frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", MAX_WINDOW - 65535))
            data += b"".join(frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, block) for i in range(streams))
            peer.send(data)
            peers.append(peer)
        time.sleep(2.0)                     # the server writes all it can meanwhile
        during = rss_kib(opts.pid)
        ok, summary = bystander.served_meanwhile(at_least=3)
        after = rss_kib(opts.pid)
    asked = connections * streams * big
    growth = max(during, after) - before
    case.expect(growth * 1024 < opts.never_read_limit_mib * 1024 * 1024,
                f"RSS grew {growth} KiB (before {before}, during {during}, after {after}) for {asked // 1024} KiB asked")
    case.note(f"{connections} connections x {streams} streams of {big} bytes ({asked // 1048576} MiB asked, unread): "
              f"RSS {before // 1024} -> {max(during, after) // 1024} MiB (+{growth // 1024} MiB, limit {opts.never_read_limit_mib})")
    for peer in peers:
        peer.close()
    case.expect(ok, summary)
    case.note(summary)


# MARK: - Graceful shutdown, watched from a client's side


def keep_busy(opts, transport, loaded, report):
    """Ten requests in flight at all times until the first GOAWAY, then none opened: after the
    server is told to stop (the test sends SIGTERM once every transport printed `loaded`), every
    stream sent must be answered 200 in full, none refused or reset, under a final GOAWAY NO_ERROR
    whose last stream id covers them all; then the server closes (RFC 9113 §6.8)."""
    case = Case(opts, transport)
    peer = Peer(opts, transport)
    # Windows opened wide once, so no WINDOW_UPDATE is owed as responses are read.
    peer.start(struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW))
    peer.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", MAX_WINDOW - 65535)))
    block = request_block()
    sent, next_id = 0, 1
    deadline = time.monotonic() + 60
    while not peer.closed and time.monotonic() < deadline:
        if not peer.goaways and sent < 2_000_000:
            while sent - len(peer.ended) - len(peer.resets) < 10:
                peer.send(frame(HEADERS, END_HEADERS | END_STREAM, next_id, block))
                sent, next_id = sent + 1, next_id + 2
        peer.pump(0.01)
        if len(peer.ended) >= 200 and not loaded.is_set():
            print(f"loaded {transport}", flush=True)
            loaded.set()
    answered = sum(1 for s in peer.ended if peer.statuses.get(s) == 200)
    last_sent = next_id - 2
    codes = [f"GOAWAY {code_name(g.error_code)} (last stream {g.last_stream_id})" for g in peer.goaways]
    case.expect(peer.closed, "the server did not close the connection")
    case.expect(len(peer.goaways) >= 1 and all(g.error_code == 0 for g in peer.goaways), f"GOAWAYs: {codes}")
    if peer.goaways:
        case.expect(peer.goaways[-1].last_stream_id >= last_sent,
                    f"final GOAWAY names stream {peer.goaways[-1].last_stream_id}, below the last sent {last_sent}")
    case.expect(not peer.resets, f"streams reset: {sorted(peer.resets.items())[:5]}")
    case.expect(answered == sent and len(peer.ended) == sent, f"{sent} streams sent, {answered} answered 200 in full")
    case.note(f"{sent} streams sent, {answered} answered 200 in full; {' then '.join(codes)}; closed by the server")
    peer.close()
    report(case)


def shutdown_watch(opts):
    transports = ["tls", "h2c"] if opts.transport == "both" else [opts.transport]
    cases = []
    threads = []
    for transport in transports:
        loaded = threading.Event()
        thread = threading.Thread(target=keep_busy, args=(opts, transport, loaded, cases.append), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join(70)
    failed = len(cases) < len(transports)
    for case in cases:
        verdict = "FAIL" if case.failures else "PASS"
        detail = "; ".join(case.failures) + (" | observed: " if case.failures else "") + " ".join(case.notes)
        print(f"{verdict} {case.transport} graceful-shutdown: {detail}", flush=True)
        failed = failed or bool(case.failures)
    return 1 if failed else 0


CASES = {
    "rapid-reset": rapid_reset,
    "continuation-flood": continuation_flood,
    "oversized-header-block": oversized_header_block,
    "headers-on-closed-stream": headers_on_closed_stream,
    "bad-preface": bad_preface,
    "stream-states": stream_states,
    "priority": priority,
    "window-update-overflow": window_update_overflow,
    "settings-flood": settings_flood,
    "ping-flood": ping_flood,
    "empty-data-flood": empty_data_flood,
    "request-body-over-64k": request_body_over_64k,
    "never-reads": never_reads,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--https", type=int, required=True)
    parser.add_argument("--http", type=int, required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="default: all")
    parser.add_argument("--transport", choices=["tls", "h2c", "both"], default="both")
    parser.add_argument("--big-authority", default="big.example.org", help="a site whose file is over 100 KB")
    parser.add_argument("--never-read-connections", type=int, default=16)
    parser.add_argument("--never-read-limit-mib", type=int, default=48)
    parser.add_argument("--shutdown-watch", action="store_true",
                        help="keep requests in flight, print `loaded TRANSPORT`, and check what a SIGTERM sent then does")
    opts = parser.parse_args()
    if opts.shutdown_watch:
        return shutdown_watch(opts)

    failed = 0
    transports = ["tls", "h2c"] if opts.transport == "both" else [opts.transport]
    for name in opts.case or list(CASES):
        for transport in transports:
            case = Case(opts, transport)
            started = time.monotonic()
            try:
                CASES[name](case)
            except Exception as error:       # a crash of the script is a failure of the case
                case.failures.append(f"{type(error).__name__}: {error}")
            case.expect_alive()
            elapsed = time.monotonic() - started
            verdict = "FAIL" if case.failures else "PASS"
            detail = "; ".join(case.failures) + (" | observed: " if case.failures else "") + " ".join(case.notes)
            print(f"{verdict} {transport} {name}: {detail} [{elapsed:.1f}s]", flush=True)
            failed += bool(case.failures)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
