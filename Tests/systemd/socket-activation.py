#!/usr/bin/env python3
"""Passes listening sockets to aasa the way systemd does (sd_listen_fds(3): descriptors from 3
on, LISTEN_FDS, LISTEN_PID equal to the child's own PID, LISTEN_FDNAMES), for the tests.

  socket-activation.py once NAMES -- BINARY ARG...
      binds one loopback socket per colon-separated name (`-`: one, without LISTEN_FDNAMES),
      prints `port NAME PORT` for each, and becomes BINARY (exec: its status is the command's).

  socket-activation.py restarts COUNT ADMIN_PORT -- BINARY ARG...
      holds one plain socket, passed as `http`, starts BINARY on it,
      and while a client opens a new connection for every request, stops it with SIGTERM and
      starts it again COUNT times, each time waiting for /readyz on ADMIN_PORT. Prints one JSON
      line: requests, failures (refused, reset, anything but 200), the exit statuses, and the
      longest wait of a request (Host: AASA_TEST_HOST, default example.com). Stops only the
      processes it started, by PID.
"""
import fcntl
import json
import os
import signal
import socket
import sys
import threading
import time


def listening_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(4096)
    return s


def become(sockets, names, argv):
    """In the process that execs: sockets at 3, 4, ..., and the variables that say so."""
    # Copies first, so that no socket is overwritten by another's move into place.
    copies = [fcntl.fcntl(s.fileno(), fcntl.F_DUPFD, 100) for s in sockets]
    for i, fd in enumerate(copies):
        os.dup2(fd, 3 + i, inheritable=True)
    env = dict(os.environ)
    env.update(LISTEN_FDS=str(len(sockets)), LISTEN_PID=str(os.getpid()))
    if names is not None:
        env["LISTEN_FDNAMES"] = names
    os.execve(argv[0], argv, env)


def once(names, argv):
    """`-` passes one socket without LISTEN_FDNAMES."""
    listed = ["-"] if names == "-" else names.split(":")
    sockets = [listening_socket() for _ in listed]
    for name, s in zip(listed, sockets):
        print(f"port {name} {s.getsockname()[1]}", flush=True)
    become(sockets, None if names == "-" else names, argv)


def http_get(port, path, timeout=10.0):
    host = os.environ.get("AASA_TEST_HOST", "example.com")
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as c:
        c.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                return data
            data += chunk


def start(held, argv, log):
    pid = os.fork()
    if pid == 0:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        become([held], "http", argv)
    return pid


def wait_ready(admin_port, pid, limit=30.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
        try:
            if http_get(admin_port, "/readyz", timeout=1).startswith(b"HTTP/1.1 200"):
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def restarts(count, admin_port, argv):
    held = listening_socket()
    port = held.getsockname()[1]
    log = os.environ.get("AASA_TEST_LOG", "/dev/null")
    tally = {"requests": 0, "failures": [], "longest_ms": 0, "exits": [], "port": port}
    stop = threading.Event()
    lock = threading.Lock()

    def client():
        while not stop.is_set():
            began = time.monotonic()
            try:
                answer = http_get(port, "/.well-known/apple-app-site-association")
                ok = answer.startswith(b"HTTP/1.1 200")
                failure = None if ok else answer[:80].decode("latin-1")
            except OSError as e:
                failure = f"{type(e).__name__}: {e}"
            with lock:
                tally["requests"] += 1
                tally["longest_ms"] = max(tally["longest_ms"], int((time.monotonic() - began) * 1000))
                if failure:
                    tally["failures"].append(failure)

    pid = start(held, argv, log)
    if not wait_ready(admin_port, pid):
        os.kill(pid, signal.SIGKILL)
        print(json.dumps({"error": "the first server did not become ready"}), flush=True)
        return
    threads = [threading.Thread(target=client) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(count):
            time.sleep(0.5)
            os.kill(pid, signal.SIGTERM)
            _, status = os.waitpid(pid, 0)
            tally["exits"].append(os.waitstatus_to_exitcode(status))
            pid = start(held, argv, log)
            if not wait_ready(admin_port, pid):
                tally["failures"].append("a restarted server did not become ready")
                break
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        tally["exits"].append(os.waitstatus_to_exitcode(status))
    print(json.dumps(tally), flush=True)


if __name__ == "__main__":
    split = sys.argv.index("--")
    args, argv = sys.argv[1:split], sys.argv[split + 1:]
    if args[0] == "once":
        once(args[1], argv)
    elif args[0] == "restarts":
        restarts(int(args[1]), int(args[2]), argv)
    else:
        sys.exit(f"unknown mode {args[0]}")
