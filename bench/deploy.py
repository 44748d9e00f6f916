#!/usr/bin/env python3
"""make bench-deploy: restarts that lose nothing (docs/deployment.md, "Restarts that lose nothing").

1. Two aasa replicas (--drain-delay, --proxy-protocol) behind haproxy (TLS passed through in TCP
   mode, /readyz checked every 100 ms, out after one failure), clients for the whole run: threads
   opening a new TLS connection per request and threads keeping theirs alive (reconnecting when told
   `Connection: close`); each replica restarted in turn (SIGTERM, exit, start on the same ports,
   ready) DEPLOY_RESTARTS times. Reports requests, failures of any kind, and p99 latency during
   restarts beside the steady state.
2. Socket activation: one server on a socket held as systemd holds it
   (Tests/systemd/socket-activation.py), restarted DEPLOY_SOCKET_RESTARTS times under new-connection
   clients: refused, reset and failed requests, and the longest wait.

Every process is started by this script and stopped by its PID. Not part of `make test`.
"""
import http.client
import json
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import AASA, ROOT, STARTED, Workdir, free_port, on_signal, start, stop, stop_all  # noqa: E402

# The release build by default (make bench-deploy builds it); AASA_BIN for another.
AASA = os.environ.get("AASA_BIN", AASA)
RESTARTS = int(os.environ.get("DEPLOY_RESTARTS", "50"))
SOCKET_RESTARTS = int(os.environ.get("DEPLOY_SOCKET_RESTARTS", "20"))
DELAY = os.environ.get("DEPLOY_DRAIN_DELAY", "2")
PATH = "/.well-known/apple-app-site-association"


def wait_ready(admin, limit=30):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", admin, timeout=1)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def replica(work, ports):
    https, admin = ports
    proc = start([AASA, "serve", "--config", work.config, "--certs", work.certs, "--https", f"127.0.0.1:{https}",
                  "--admin", f"127.0.0.1:{admin}", "--workers", "1", "--proxy-protocol", "--drain-delay", DELAY,
                  "--shutdown-grace", "5", "--cdn-watch", "off"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_ready(admin):
        raise SystemExit("a replica did not become ready")
    return proc


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.failures = []
        self.steady = []
        self.restarting = []
        self.during = False

    def record(self, seconds, failure):
        with self.lock:
            (self.restarting if self.during else self.steady).append(seconds)
            if failure:
                self.failures.append(failure)


class Connection(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1 with SNI and Host bench.example; connects again by itself after a close."""

    def connect(self):
        raw = socket.create_connection(("127.0.0.1", self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname="bench.example")


def client(port, work, tally, stop_event, keep_alive):
    """Requests until told to stop: each on a new connection, or on one kept alive until the server
    says `Connection: close` (http.client then opens a new one for the next request)."""
    context = ssl.create_default_context(cafile=work.crt)
    c = Connection("bench.example", port, timeout=10, context=context)
    headers = {} if keep_alive else {"Connection": "close"}
    while not stop_event.is_set():
        began = time.monotonic()
        failure = None
        try:
            c.request("GET", PATH, headers=headers)
            r = c.getresponse()
            r.read()
            if r.status != 200:
                failure = f"status {r.status}"
        except (OSError, http.client.HTTPException) as e:
            failure = f"{'keep-alive' if keep_alive else 'new connection'}: {type(e).__name__}: {e}"
            c.close()
        tally.record(time.monotonic() - began, failure)
    c.close()


def p99(values):
    return statistics.quantiles(values, n=100)[98] * 1000 if len(values) >= 100 else float("nan")


def balanced(work):
    ports = [(free_port(), free_port()) for _ in range(2)]
    replicas = [replica(work, p) for p in ports]
    front = free_port()
    config = os.path.join(work.dir, "haproxy.cfg")
    servers = "\n".join(f"  server aasa{i} 127.0.0.1:{https} send-proxy check port {admin} inter 100 fall 1 rise 1"
                        for i, (https, admin) in enumerate(ports))
    with open(config, "w") as f:
        f.write(f"""global
  maxconn 4000
defaults
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  retries 3
  option redispatch
  option httpchk GET /readyz
frontend passthrough
  mode tcp
  bind 127.0.0.1:{front}
  default_backend aasa
backend aasa
  mode tcp
{servers}
""")
    haproxy = start(["/usr/sbin/haproxy", "-db", "-f", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    tally, stop_event = Tally(), threading.Event()
    threads = [threading.Thread(target=client, args=(front, work, tally, stop_event, False)) for _ in range(3)]
    threads += [threading.Thread(target=client, args=(front, work, tally, stop_event, True)) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(3)
    began = time.monotonic()
    tally.during = True
    for _ in range(RESTARTS):
        for i in range(2):
            stop(replicas[i], timeout=30)
            STARTED.remove(replicas[i])
            replicas[i] = replica(work, ports[i])
            time.sleep(0.3)
    tally.during = False
    restarting = time.monotonic() - began
    time.sleep(3)
    stop_event.set()
    for t in threads:
        t.join(30)
    return {"restarts_per_replica": RESTARTS, "drain_delay_s": float(DELAY), "restart_phase_s": round(restarting, 1),
            "requests": len(tally.steady) + len(tally.restarting), "failed": len(tally.failures),
            "failures": tally.failures[:10], "p99_ms_steady": round(p99(tally.steady), 1),
            "p99_ms_restarting": round(p99(tally.restarting), 1)}


def socket_activation(work):
    admin = free_port()
    r = subprocess.run([sys.executable, os.path.join(ROOT, "Tests/systemd/socket-activation.py"), "restarts", str(SOCKET_RESTARTS),
                        str(admin), "--", AASA, "serve", "--config", work.config, "--admin", f"127.0.0.1:{admin}",
                        "--workers", "1", "--cdn-watch", "off"], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, AASA_TEST_HOST="bench.example"))
    tally = json.loads(r.stdout)
    return {"restarts": SOCKET_RESTARTS, "requests": tally["requests"], "failed": len(tally["failures"]),
            "failures": tally["failures"][:10], "longest_wait_ms": tally["longest_ms"], "exits": sorted(set(tally["exits"]))}


def main():
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    work = Workdir()
    try:
        result = {"balanced": balanced(work), "socket_activation": socket_activation(work)}
    finally:
        stop_all()
        work.cleanup()
    print(json.dumps(result, indent=2))
    b, s = result["balanced"], result["socket_activation"]
    print(f"rolling restarts: {b['restarts_per_replica']} of each of 2 replicas behind haproxy, drain delay {b['drain_delay_s']} s: "
          f"{b['failed']} failed of {b['requests']} requests; p99 {b['p99_ms_steady']} ms steady, {b['p99_ms_restarting']} ms during restarts")
    print(f"socket activation: {s['restarts']} restarts: {s['failed']} failed (refused, reset or not 200) of {s['requests']}; "
          f"longest wait {s['longest_wait_ms']} ms")
    return 0 if b["failed"] == 0 and s["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
