#!/usr/bin/env python3
"""A hostile HTTPS origin for the client's tests (aasa check, the ACME client): one TLS listener
on 127.0.0.1 that answers each request as MODE says, one thread per connection. Every loop is
bounded (a connection ends after at most LIMIT seconds), and the test stops the process by PID.

    origin.py --port P --pem CERT_AND_KEY.pem --mode MODE [--plain-port Q]

--plain-port opens a plain-HTTP listener too, which only records that a connection arrived
("plain connection" on stdout): the ACME test proves that nothing is ever sent there. In mode
`monitor` (aasa monitor's tests) the TLS listener answers by the Host's first label and the plain
one stands in for Apple's CDN and Google by the first segment of the path (`/hang/a/v1/HOST`).
"""
import argparse
import socket
import ssl
import sys
import threading
import time

LIMIT = 60
AASA = b'{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/a/*"}]}]}}'


def read_head(conn):
    data = b""
    end = time.monotonic() + 10
    while b"\r\n\r\n" not in data and len(data) < 65536 and time.monotonic() < end:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data.decode("latin-1")


def header(head, name):
    for line in head.split("\r\n")[1:]:
        if line.lower().startswith(name.lower() + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def flood(conn, first, unit):
    """Sends `first`, then `unit` again and again at full speed until the peer goes or LIMIT."""
    conn.sendall(first)
    end = time.monotonic() + LIMIT
    block = unit * max(1, 16384 // len(unit))
    while time.monotonic() < end:
        conn.sendall(block)


def trickle(conn, data):
    """`data` a byte a second, until it is sent, the peer goes, or LIMIT."""
    for i in range(min(len(data), LIMIT)):
        conn.sendall(data[i:i + 1])
        time.sleep(1)


def monitor_origin(conn, host, path):
    """aasa monitor's hostile origins, one per host name (every path of it alike; `good` has the
    file and no assetlinks.json)."""
    name = host.split(".")[0]
    if name == "good" and "apple-app-site-association" not in path:
        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    elif name == "hang":
        time.sleep(LIMIT)
    elif name == "trickle":
        trickle(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(AASA) + AASA)
    elif name == "headers":
        flood(conn, b"HTTP/1.1 200 OK\r\n", b"X-Endless: " + b"h" * 50 + b"\r\n")
    elif name == "redirect":
        conn.sendall(b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://www.example.com/aasa.json\r\nContent-Length: 0\r\n\r\n")
    elif name == "html":
        page = b"<!doctype html><html><head><title>Welcome</title></head><body>Welcome</body></html>"
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(page) + page)
    elif name == "big":
        # One byte over iOS's limit, valid JSON: only the size is wrong.
        body = AASA[:-1] + b" " * (131073 - len(AASA)) + b"}"
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    elif name == "invalid":
        body = b'{"applinks": {"details": [}}'
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    elif name == "escape":
        conn.sendall(b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://evil.test/\x1b]0;pwned\x07\x1b[2J\r\n"
                     b"Content-Length: 0\r\n\r\n")
    else:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(AASA) + AASA)


def monitor_api(conn, head):
    """Apple's CDN or Google, as the path's first segment says: good, hang, trickle, garbage (not
    HTTP), junk (a 200 whose body is no JSON)."""
    path = head.split(" ")[1] if " " in head else "/"
    behaviour = path.split("/")[1] if path.count("/") > 1 else ""
    if behaviour == "hang":
        time.sleep(LIMIT)
    elif behaviour == "trickle":
        trickle(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(AASA) + AASA)
    elif behaviour == "garbage":
        conn.sendall(b"\x1b[2J\x1b]0;pwned\x07 this is no HTTP \x00\xff\r\n\r\n")
    elif behaviour == "junk":
        body = b"\x1b[31m{not json\x07"
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    elif "/a/v1/" in path:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(AASA) + AASA)
    else:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")


def answer(conn, mode, port):
    head = read_head(conn)
    if head is None:
        return
    path = head.split(" ")[1] if " " in head else "/"
    host = header(head, "Host").split(":")[0]
    if mode == "interim-flood":
        flood(conn, b"", b"HTTP/1.1 100 Continue\r\n\r\n")
    elif mode == "trailer-flood":
        flood(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n",
              b"X-Trailer: " + b"t" * 50 + b"\r\n")
    elif mode in ("cut", "close-notify"):
        # A body delimited by the close, cut short: the TLS close with or without close_notify.
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + AASA[:40])
        if mode == "close-notify":
            conn.unwrap()
    elif mode == "whole-close-notify":
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + AASA)
        conn.unwrap()
    elif mode == "signed-chunk":
        body = AASA
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                     + b"+%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
    elif mode == "escape-location":
        conn.sendall(b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://evil.test/\x1b]0;pwned\x07\x1b[2J\r\n"
                     b"Content-Length: 0\r\nConnection: close\r\n\r\n")
    elif mode == "pool":
        # Hosts named slow* never answer; missing* answer 404 after 1.2 s at the well-known
        # path and never at the legacy one; the others get the file at once.
        if host.startswith("slow") or (host.startswith("missing") and "well-known" not in path):
            time.sleep(LIMIT)
            return
        if host.startswith("missing"):
            time.sleep(1.2)
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(AASA) + AASA)
    elif mode == "monitor":
        monitor_origin(conn, host, path)
    elif mode == "retry-after":
        conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 9999999999999999\r\nContent-Type: application/problem+json\r\n"
                     b"Content-Length: 2\r\nConnection: close\r\n\r\n{}")
    elif mode == "http-urls":
        # An ACME directory whose every URL is plain http.
        plain = "http://127.0.0.1:%d" % port
        body = ('{"newNonce":"%s/nonce","newAccount":"%s/account","newOrder":"%s/order"}' % (plain, plain, plain)).encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    else:
        sys.exit("unknown mode " + mode)


def serve_tls(args):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.pem)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(64)

    def handle(raw):
        raw.settimeout(LIMIT)
        try:
            conn = context.wrap_socket(raw, server_side=True)
            answer(conn, args.mode, args.plain_port)
            # Closing the socket without unwrap() sends no close_notify.
        except (OSError, ssl.SSLError):
            pass
        finally:
            raw.close()

    while True:
        raw, _ = listener.accept()
        threading.Thread(target=handle, args=(raw,), daemon=True).start()


def serve_plain(port, mode):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(16)

    def handle(conn):
        conn.settimeout(LIMIT)
        try:
            head = read_head(conn)
            if head is not None:
                monitor_api(conn, head)
        except OSError:
            pass
        finally:
            conn.close()

    while True:
        conn, _ = listener.accept()
        if mode == "monitor":
            threading.Thread(target=handle, args=(conn,), daemon=True).start()
            continue
        print("plain connection", flush=True)
        conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pem", required=True)
    parser.add_argument("--mode", required=True)
    parser.add_argument("--plain-port", type=int, default=0)
    args = parser.parse_args()
    if args.plain_port:
        threading.Thread(target=serve_plain, args=(args.plain_port, args.mode), daemon=True).start()
    print("listening", flush=True)
    serve_tls(args)


if __name__ == "__main__":
    main()
