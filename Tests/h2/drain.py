#!/usr/bin/env python3
"""An HTTP/2 client (h2c, prior knowledge) with a stream in flight while the server starts its
drain: opens stream 1 (HEADERS without END_STREAM: its body is still to come), sends SIGTERM to
the server's PID, waits for the GOAWAY, then ends stream 1 and reads its response to the end.
Prints one line per event: `goaway LAST CODE`, `response STREAM STATUS BYTES`, `closed`.
Frames by hand (the `h2` package takes a received GOAWAY for the end of the connection and
sends nothing after it); HPACK from its companion package `hpack`.
"""
import argparse
import os
import signal
import socket
import struct
import time

import hpack

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--pid", type=int, required=True)
args = parser.parse_args()

DATA, HEADERS, SETTINGS, PING, GOAWAY = 0x0, 0x1, 0x4, 0x6, 0x7
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


sock = socket.create_connection(("127.0.0.1", args.port), timeout=10)
block = hpack.Encoder().encode([(":method", "GET"), (":scheme", "http"), (":authority", "example.com"),
                                (":path", "/.well-known/apple-app-site-association")])
sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(SETTINGS, 0, 0) + frame(HEADERS, END_HEADERS, 1, block))
time.sleep(0.2)
os.kill(args.pid, signal.SIGTERM)

decoder = hpack.Decoder()
buffer, status, body, ended = b"", None, 0, False
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    try:
        data = sock.recv(65536)
    except socket.timeout:
        print("timeout", flush=True)
        break
    if not data:
        print("closed", flush=True)
        break
    buffer += data
    while len(buffer) >= 9:
        length = int.from_bytes(buffer[:3], "big")
        if len(buffer) < 9 + length:
            break
        kind, flags = buffer[3], buffer[4]
        stream = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
        payload, buffer = buffer[9:9 + length], buffer[9 + length:]
        if kind == SETTINGS and not flags & ACK:
            sock.sendall(frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            sock.sendall(frame(PING, ACK, 0, payload))
        elif kind == GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            print(f"goaway {last & 0x7FFFFFFF} {code}", flush=True)
            if not ended:
                # The stream in flight ends only now, after the notice.
                sock.sendall(frame(DATA, END_STREAM, 1))
                ended = True
        elif kind == HEADERS and stream == 1:
            status = dict(decoder.decode(payload)).get(":status")
        elif kind == DATA and stream == 1:
            body += length
        if kind in (HEADERS, DATA) and stream == 1 and flags & END_STREAM:
            print(f"response 1 {status} {body}", flush=True)
