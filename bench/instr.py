#!/usr/bin/env python3
"""make bench-instr: user-space instructions and syscalls each server spends per request.

Wall-clock requests/s on this shared 2-core machine swing by tens of per cent from one minute to
the next; the number of instructions a server executes for a fixed amount of work does not. So each
server (aasa, nginx, h2o) runs under `valgrind --tool=callgrind` with one event-loop thread, a
client makes exactly N requests (each response checked: status 200 and the whole body), the server
is stopped by its own PID with its graceful-stop signal, and callgrind's total Ir is read.

  instructions per request = (Ir(2N) - Ir(N)) / N

which cancels start-up, configuration and shutdown. Each Ir is the minimum of K runs: noise here
only ever adds instructions (glibc malloc settles in one of two heap layouts at start-up; the worse
one costs about 1 % per request). The same runs are traced with `--trace-syscalls=yes`, and the
syscalls per request come from the same difference: kernel time is not in Ir, syscalls show it.

The content and workloads are those of the project's shared yardstick (/work/shared/tools/
perf_instr.py) so the two can be checked against each other: a 727-byte AASA file and a 95,829-byte
one, one ECDSA P-256 certificate, 4 keep-alive connections, h2load -c 4 -m 10.

Caveats, printed with the table:
- aasa always writes its access log (one line per request, to stdout, here a file); nginx and h2o
  run with theirs off. That is one write(2) per request that the others do not make.
- Ir counts instructions, not cycles: no cache misses, no kernel time, no waiting.
- aasa runs as a copy without debug sections (valgrind 3.19 cannot read the toolchain's DWARF 5;
  the code is byte for byte the same), with SWIFT_DETERMINISTIC_HASHING=1 (same hash function,
  a fixed seed: one less source of run-to-run spread).
- Syscalls that natively go through the vDSO (clock_gettime, gettimeofday, time, getcpu) are real
  syscalls under valgrind; they are left out.

Results: bench/results/instr-latest.json and a markdown table on stdout.
"""
import argparse, atexit, datetime, json, os, re, shutil, signal, socket, ssl, subprocess, sys, tempfile, threading, time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results", "instr-latest.json")
HOST = "bench.example.test"
BIG_HOST = "big.example.test"
AASA_PATH = "/.well-known/apple-app-site-association"
BIG_PATH = "/big"          # nginx and h2o serve the big file here; aasa as BIG_HOST's AASA file
CONNECTIONS = 4
VDSO_CALLS = {"clock_gettime", "gettimeofday", "time", "getcpu"}
USER_AGENT = "aasa-bench-instr"

# The same documents as the shared yardstick: 727 bytes (indent 2) and 95,829 bytes (indent 1).
SMALL_DOC = {"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app", "ABCDE12345.com.example.app2"],
             "components": [{"#": "no_universal_links", "exclude": True},
                            {"/": "/buy/*"}, {"/": "/help/website/*", "exclude": True},
                            {"/": "/help/*", "?": {"articleNumber": "????"}}]}]},
             "webcredentials": {"apps": ["ABCDE12345.com.example.app"]},
             "appclips": {"apps": ["ABCDE12345.com.example.MyApp.Clip"]}}
BIG_DOC = {"applinks": {"details": [{"appIDs": [f"ABCDE12345.com.example.app{i}"],
           "components": [{"/": f"/p{i}/{j}/*", "comment": "x" * 40} for j in range(60)]} for i in range(16)]}}


@dataclass(frozen=True)
class Workload:
    key: str
    label: str
    n: int          # N; the second run makes 2N requests
    port: str       # "tls" or "plain"
    big: bool = False


WORKLOADS = [
    Workload("https-keepalive", "HTTPS/1.1 keep-alive, 727 B, 4 connections", 2000, "tls"),
    Workload("tls-new-conn", "new TLS 1.3 connection per request (full handshake), 727 B", 200, "tls"),
    Workload("http-keepalive", "plain HTTP/1.1 keep-alive, 727 B, 4 connections", 2000, "plain"),
    Workload("https-96k", "HTTPS/1.1 keep-alive, 95,829 B, 4 connections", 300, "tls", big=True),
    Workload("h2", "HTTP/2 over TLS, h2load -c 4 -m 10, 727 B", 2000, "tls"),
]
SERVERS = ["aasa", "nginx", "h2o"]


# --------------------------------------------------------------------------------------------
# Processes: every server this script starts is recorded here and stopped by its PID, also when
# the script is interrupted. Nothing else is ever signalled.

STARTED: list = []
KEEP = False      # --keep: leave every run's valgrind log and callgrind output in place


def stop_process(proc, sig=signal.SIGTERM, wait=120):
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def stop_all_started():
    for proc in STARTED:
        stop_process(proc, wait=10)


def on_signal(signum, _frame):
    stop_all_started()
    sys.exit(128 + signum)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(ports):
    """True when every port is in LISTEN state on this host, read from /proc/net/tcp: a probe
    connection would be one more request that the server counts."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A":
                        found.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return set(ports) <= found


# --------------------------------------------------------------------------------------------
# Content and servers

class Setup:
    """A temporary directory with the files, the certificate and the server configurations."""

    def __init__(self, aasa_bin):
        self.dir = tempfile.mkdtemp(prefix="aasa-bench-instr-")
        os.chmod(self.dir, 0o755)
        self.small = json.dumps(SMALL_DOC, indent=2).encode()
        self.big = json.dumps(BIG_DOC, indent=1).encode()
        # The content in site/, every run's output in runs/: aasa watches the parent of its config
        # and certs directories (for `..data` swaps), and a valgrind log written there would wake
        # it for every line, each wake-up traced into the log again, without end.
        self.config = os.path.join(self.dir, "site", "config")
        self.www = os.path.join(self.dir, "site", "www")
        self.certs = os.path.join(self.dir, "site", "certs")
        self.runs_dir = os.path.join(self.dir, "runs")
        os.makedirs(self.runs_dir)
        for host, body in ((HOST, self.small), (BIG_HOST, self.big)):
            self._write(os.path.join(self.config, host, "apple-app-site-association"), body)
        self._write(os.path.join(self.www, AASA_PATH.lstrip("/")), self.small)
        self._write(os.path.join(self.www, BIG_PATH.lstrip("/")), self.big)
        os.makedirs(self.certs)
        os.chmod(os.path.join(self.dir, "site"), 0o755)
        self.key, self.crt = os.path.join(self.certs, "bench.key"), os.path.join(self.certs, "bench.crt")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", self.key, "-out", self.crt, "-days", "2", "-subj", f"/CN={HOST}",
                        "-addext", f"subjectAltName=DNS:{HOST},DNS:{BIG_HOST},DNS:localhost",
                        "-addext", "basicConstraints=critical,CA:FALSE"],
                       check=True, capture_output=True)
        os.chmod(self.key, 0o600)
        # valgrind 3.19 stops at the DWARF 5 debug information of Swift 6 binaries; the code
        # executed by a copy without debug sections is the same.
        self.aasa = os.path.join(self.runs_dir, "aasa-nodebug")
        if aasa_bin:
            subprocess.run(["objcopy", "--strip-debug", aasa_bin, self.aasa], check=True)
        self.runs = 0

    @staticmethod
    def _write(path, body):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(body)

    def body(self, workload):
        return self.big if workload.big else self.small

    def target(self, server, workload):
        """(path, Host) of the request for a workload on a server."""
        if workload.big:
            return (AASA_PATH if server == "aasa" else BIG_PATH), BIG_HOST
        return AASA_PATH, HOST

    def command(self, server, tls_port, plain_port, tag):
        """(argv, stop signal, extra environment) for one server with one event-loop thread."""
        if server == "aasa":
            return ([self.aasa, "serve", "--config", self.config, "--certs", self.certs,
                     "--https", f"127.0.0.1:{tls_port}", "--http", f"127.0.0.1:{plain_port}",
                     "--admin", "off", "--workers", "1", "--default-cert", self.crt, "--shutdown-grace", "1",
                     "--cdn-watch", "off"],
                    signal.SIGTERM, {"SWIFT_DETERMINISTIC_HASHING": "1"})
        if server == "nginx":
            conf = os.path.join(self.runs_dir, f"{tag}.nginx.conf")
            with open(conf, "w") as f:
                f.write(f"""daemon off;
master_process off;
worker_processes 1;
pid {self.runs_dir}/{tag}.pid;
error_log {self.runs_dir}/{tag}.error.log error;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  types {{ }}
  default_type application/json;
  server {{
    listen 127.0.0.1:{tls_port} ssl http2;
    listen 127.0.0.1:{plain_port};
    server_name {HOST} {BIG_HOST};
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_certificate {self.crt};
    ssl_certificate_key {self.key};
    root {self.www};
    location = {AASA_PATH} {{ }}
    location = {BIG_PATH} {{ }}
  }}
}}
""")
            # SIGQUIT: nginx's graceful stop; it returns from main, so callgrind writes its totals.
            return ["nginx", "-c", conf, "-p", self.runs_dir], signal.SIGQUIT, {}
        if server == "h2o":
            conf = os.path.join(self.runs_dir, f"{tag}.h2o.conf")
            with open(conf, "w") as f:
                # neverbleed OFF: otherwise the private-key operations run in a forked helper,
                # outside the count. OCSP updates off: no extra thread or fetch.
                f.write(f"""num-threads: 1
user: root
error-log: {self.runs_dir}/{tag}.error.log
pid-file: {self.runs_dir}/{tag}.pid
file.mime.setdefaulttype: application/json
listen:
  host: 127.0.0.1
  port: {tls_port}
  ssl:
    certificate-file: {self.crt}
    key-file: {self.key}
    minimum-version: TLSv1.2
    ocsp-update-interval: 0
    neverbleed: OFF
listen:
  host: 127.0.0.1
  port: {plain_port}
hosts:
  default:
    paths:
      {AASA_PATH}:
        file.file: {self.www}{AASA_PATH}
      {BIG_PATH}:
        file.file: {self.www}{BIG_PATH}
""")
            return ["h2o", "-c", conf], signal.SIGTERM, {}
        raise ValueError(server)


# --------------------------------------------------------------------------------------------
# Clients: each returns (responses that were 200 with the whole body, failures, first notes).

class Outcome:
    def __init__(self):
        self.ok, self.failed, self.notes, self.tls = 0, 0, [], None
        self.lock = threading.Lock()

    def add(self, ok, failed, note=None):
        with self.lock:
            self.ok += ok
            self.failed += failed
            if note and len(self.notes) < 3:
                self.notes.append(note)


def tls_context():
    """TLS 1.3 only, no certificate check, ALPN http/1.1; a new context per connection offers no
    session, so every handshake is a full one."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def request_bytes(path, host, close=False):
    return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {USER_AGENT}\r\nAccept: */*\r\n"
            + ("Connection: close\r\n" if close else "") + "\r\n").encode()


def read_response(sock, buffer):
    """Reads one response with a Content-Length from sock; returns (status, body length)."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(262144)
        if not chunk:
            raise ConnectionError("closed before the end of a response head")
        buffer += chunk
    end = buffer.index(b"\r\n\r\n")
    head = bytes(buffer[:end]).decode("latin-1")
    del buffer[:end + 4]
    status = int(head.split(" ", 2)[1])
    m = re.search(r"(?im)^content-length:\s*(\d+)", head)
    if not m:
        raise ValueError(f"response without Content-Length: {head!r}")
    length = int(m.group(1))
    while len(buffer) < length:
        chunk = sock.recv(262144)
        if not chunk:
            raise ConnectionError("closed inside a body")
        buffer += chunk
    del buffer[:length]
    return status, length


def connect(port, tls, host):
    sock = socket.create_connection(("127.0.0.1", port), timeout=300)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls:
        sock = tls_context().wrap_socket(sock, server_hostname=host)
    return sock


def keepalive(port, tls, path, host, n, expected, outcome):
    """CONNECTIONS threads, each sending its share of n requests one after another on one connection."""
    shares = [n // CONNECTIONS + (1 if i < n % CONNECTIONS else 0) for i in range(CONNECTIONS)]
    request = request_bytes(path, host)

    def one(share):
        done = 0
        try:
            sock = connect(port, tls, host)
            if tls and outcome.tls is None:
                outcome.tls = f"{sock.version()} {sock.cipher()[0]} ALPN {sock.selected_alpn_protocol()}"
            buffer = bytearray()
            for _ in range(share):
                sock.sendall(request)
                status, length = read_response(sock, buffer)
                done += 1
                if status == 200 and length == expected:
                    outcome.add(1, 0)
                else:
                    outcome.add(0, 1, f"status {status}, {length} bytes")
            sock.close()
        except Exception as e:
            outcome.add(0, share - done, f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=one, args=(s,)) for s in shares]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def new_connection_each(port, path, host, n, expected, outcome):
    request = request_bytes(path, host, close=True)
    for _ in range(n):
        try:
            sock = connect(port, True, host)
            if outcome.tls is None:
                outcome.tls = (f"{sock.version()} {sock.cipher()[0]} ALPN {sock.selected_alpn_protocol()}"
                               f" resumed {sock.session_reused}")
            sock.sendall(request)
            status, length = read_response(sock, bytearray())
            sock.close()
            if status == 200 and length == expected:
                outcome.add(1, 0)
            else:
                outcome.add(0, 1, f"status {status}, {length} bytes")
        except Exception as e:
            outcome.add(0, 1, f"{type(e).__name__}: {e}")


def h2load(port, path, host, n, expected, outcome):
    cmd = ["h2load", "-n", str(n), "-c", str(CONNECTIONS), "-m", "10", "-t", "1",
           "-H", f":authority: {host}", f"https://127.0.0.1:{port}{path}"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900).stdout
    except subprocess.TimeoutExpired:
        outcome.add(0, n, "h2load timed out")
        return
    alpn = re.search(r"Application protocol: (\S+)", out)
    version, cipher = re.search(r"TLS Protocol: (\S+)", out), re.search(r"Cipher: (\S+)", out)
    outcome.tls = f"{version.group(1) if version else '?'} {cipher.group(1) if cipher else '?'} ALPN {alpn.group(1) if alpn else None}"
    codes = re.search(r"status codes: (\d+) 2xx", out)
    data = re.search(r"traffic: .*\((\d+)\) data", out)
    if not alpn or alpn.group(1) != "h2" or not codes or not data:
        outcome.add(0, n, "h2load: no h2, or output not understood: " + out[-300:])
        return
    ok = int(codes.group(1))
    if int(data.group(1)) != ok * expected:
        outcome.add(0, n, f"h2load: {data.group(1)} body bytes for {ok} responses of {expected}")
        return
    outcome.add(ok, n - ok, None if ok == n else f"h2load: {ok} of {n} were 2xx")


# --------------------------------------------------------------------------------------------
# Measurement

SYSCALL_LINE = re.compile(r"^SYSCALL\[\d+,\d+\]\(\s*\d+\) (?:sys_)?([a-z0-9_]+)")


def count_syscalls(valgrind_log):
    """{name: count} from valgrind's --trace-syscalls lines. A call that blocks is printed twice
    (its start, then "... [async] --> ..." when it returns); the second line is not counted."""
    counts = {}
    with open(valgrind_log, errors="replace") as f:
        for line in f:
            m = SYSCALL_LINE.match(line)
            if m and m.group(1) not in VDSO_CALLS:
                counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


@dataclass
class Run:
    ir: int
    syscalls: dict
    ok: int
    failed: int
    notes: list
    tls: str


def run_once(setup, server, workload, n):
    """One server under callgrind serving exactly n requests of the workload."""
    setup.runs += 1
    tag = f"{server}-{workload.key}-{n}-{setup.runs}"
    tls_port, plain_port = free_port(), free_port()
    argv, stop_signal, extra_env = setup.command(server, tls_port, plain_port, tag)
    callgrind_out = os.path.join(setup.runs_dir, f"{tag}.callgrind")
    valgrind_log = os.path.join(setup.runs_dir, f"{tag}.valgrind")
    vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind_out}", f"--log-file={valgrind_log}",
          "--trace-children=no", "--trace-syscalls=yes", "--dump-instr=no", "--compress-strings=no", "--compress-pos=no"]
    output = open(os.path.join(setup.runs_dir, f"{tag}.out"), "w")   # aasa's access log, servers' messages
    proc = subprocess.Popen(vg + argv, stdout=output, stderr=subprocess.STDOUT, cwd=setup.runs_dir,
                            env={**os.environ, **extra_env})
    STARTED.append(proc)
    outcome = Outcome()
    try:
        deadline = time.monotonic() + 180
        while not listening((tls_port, plain_port)):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{server} did not start listening; see {setup.runs_dir}/{tag}.out and {valgrind_log}")
            time.sleep(0.1)
        path, host = setup.target(server, workload)
        expected = len(setup.body(workload))
        if workload.key == "tls-new-conn":
            new_connection_each(tls_port, path, host, n, expected, outcome)
        elif workload.key == "h2":
            h2load(tls_port, path, host, n, expected, outcome)
        else:
            keepalive(tls_port if workload.port == "tls" else plain_port, workload.port == "tls", path, host, n, expected, outcome)
        time.sleep(0.3)   # let the server see the clients' closes before it is told to stop
    finally:
        stop_process(proc, stop_signal, wait=180)
        output.close()
    ir = None
    with open(callgrind_out) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                ir = int(line.split()[1])
                break
    if ir is None:
        raise RuntimeError(f"no total in {callgrind_out}")
    syscalls = count_syscalls(valgrind_log)
    if not KEEP:
        os.unlink(valgrind_log)
        os.unlink(callgrind_out)
    return Run(ir, syscalls, outcome.ok, outcome.failed, outcome.notes, outcome.tls)


def measure(setup, server, workload, n, runs, log):
    """Instructions and syscalls per request of one server on one workload."""
    results = {n: [], 2 * n: []}
    for _ in range(runs):
        for count in (n, 2 * n):
            results[count].append(run_once(setup, server, workload, count))
    best = {count: min(rs, key=lambda r: r.ir) for count, rs in results.items()}
    per_request = (best[2 * n].ir - best[n].ir) / n
    names = set(best[n].syscalls) | set(best[2 * n].syscalls)
    syscalls = {k: (best[2 * n].syscalls.get(k, 0) - best[n].syscalls.get(k, 0)) / n for k in names}
    syscalls = {k: round(v, 3) for k, v in sorted(syscalls.items(), key=lambda kv: -kv[1]) if abs(v) >= 0.005}
    failed = sum(r.failed for rs in results.values() for r in rs)
    notes = list(dict.fromkeys(note for rs in results.values() for r in rs for note in r.notes))[:3]
    spread = max((max(r.ir for r in rs) - min(r.ir for r in rs)) / min(r.ir for r in rs) * 100 for rs in results.values())
    entry = {
        "instructions_per_request": round(per_request),
        "syscalls_per_request": round(sum(syscalls.values()), 2),
        "syscalls": syscalls,
        "ir": {str(count): [r.ir for r in rs] for count, rs in results.items()},
        "ir_spread_percent": round(spread, 2),
        "tls": best[n].tls,
        "failed_responses": failed,
        "notes": notes,
    }
    top = " ".join(f"{k} {v:.2f}" for k, v in list(syscalls.items())[:6])
    log(f"  {server:5} {workload.key:15} {per_request:>10,.0f} instr/req  {entry['syscalls_per_request']:5.2f} syscalls/req"
        f"  [{top}]  Ir spread {spread:.2f} %  {best[n].tls or ''}"
        + (f"  FAILED {failed}: {'; '.join(notes)}" if failed else ""))
    return entry


# --------------------------------------------------------------------------------------------
# Report

def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout.strip()


def markdown(results, servers, workloads):
    def cell(server, w):
        e = results["servers"].get(server, {}).get(w.key)
        if not e:
            return "n/a"
        if e["failed_responses"]:
            return "invalid"
        return f"{e['instructions_per_request']:,} ({e['syscalls_per_request']:.2f})"

    def ratio(other, w):
        a = results["servers"].get("aasa", {}).get(w.key)
        o = results["servers"].get(other, {}).get(w.key)
        if not a or not o or a["failed_responses"] or o["failed_responses"]:
            return "n/a"
        return f"{o['instructions_per_request'] / a['instructions_per_request']:.2f}"

    others = [s for s in servers if s != "aasa"]
    head = ["workload"] + [f"{s} instr/req (syscalls/req)" for s in servers]
    if "aasa" in servers:
        head += [f"{s} / aasa" for s in others]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in workloads:
        row = [w.label] + [cell(s, w) for s in servers]
        if "aasa" in servers:
            row += [ratio(s, w) for s in others]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def save(results, servers, workloads, output, complete):
    results["complete"] = complete
    results["table"] = markdown(results, servers, workloads)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with open(output + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    os.replace(output + ".tmp", output)
    return results["table"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--aasa", default=os.path.join(ROOT, ".build", "release", "aasa"), help="the aasa binary (release build)")
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--workloads", default=",".join(w.key for w in WORKLOADS))
    parser.add_argument("--runs", type=int, default=3, help="server runs per N; the minimum Ir is used (default 3)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every N (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (configs, logs, callgrind outputs)")
    parser.add_argument("--output", default=RESULTS)
    args = parser.parse_args()

    servers = [s for s in args.servers.split(",") if s]
    by_key = {w.key: w for w in WORKLOADS}
    unknown = [k for k in args.workloads.split(",") if k and k not in by_key] + [s for s in servers if s not in SERVERS]
    if unknown:
        sys.exit(f"unknown: {', '.join(unknown)}; workloads {', '.join(by_key)}; servers {', '.join(SERVERS)}")
    workloads = [Workload(w.key, w.label, max(10, int(w.n * args.scale)), w.port, w.big)
                 for w in WORKLOADS if w.key in args.workloads.split(",")]
    needed = ["valgrind", "objcopy", "openssl"] + [s for s in servers if s != "aasa"] + (["h2load"] if any(w.key == "h2" for w in workloads) else [])
    missing = [t for t in needed if not shutil.which(t)]
    if missing:
        sys.exit(f"missing: {', '.join(missing)} (make bench-instr installs them)")
    if "aasa" in servers and not os.access(args.aasa, os.X_OK):
        sys.exit(f"no aasa binary at {args.aasa}: swift build -c release --product aasa")

    global KEEP
    KEEP = args.keep
    atexit.register(stop_all_started)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    started = time.monotonic()
    setup = Setup(args.aasa if "aasa" in servers else None)
    dirty = bool(git("status", "--porcelain", "--", "Sources", "Package.swift"))
    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git("rev-parse", "HEAD") + (" (with uncommitted changes under Sources/)" if dirty else ""),
        "aasa_binary": os.path.realpath(args.aasa),
        "versions": {"valgrind": subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip(),
                     "nginx": subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip(),
                     "h2o": subprocess.run(["h2o", "--version"], capture_output=True, text=True).stdout.split("\n")[0]},
        "method": "(Ir(2N) - Ir(N)) / N under valgrind --tool=callgrind, each Ir the minimum of "
                  f"{args.runs} runs; syscalls from --trace-syscalls of the same runs, vDSO calls left out",
        "caveats": ["aasa writes its access log (one write per request); nginx and h2o have theirs off",
                    "Ir counts user-space instructions of all the server's threads, not cycles or kernel time"],
        "workloads": {w.key: {"label": w.label, "n": w.n} for w in workloads},
        "servers": {s: {} for s in servers},
    }
    print(f"bench-instr: {', '.join(servers)}; {args.runs} runs per N; temporary directory {setup.dir}", flush=True)
    failed = False
    try:
        for w in workloads:
            print(f"{w.key}: {w.label}, N = {w.n} and {2 * w.n}", flush=True)
            for s in servers:
                try:
                    entry = measure(setup, s, w, w.n, args.runs, lambda line: print(line, flush=True))
                except (RuntimeError, OSError) as e:
                    print(f"  {s:5} {w.key:15} no result: {e}", flush=True)
                    failed = True
                    continue
                results["servers"][s][w.key] = entry
                failed |= entry["failed_responses"] > 0
                save(results, servers, workloads, args.output, complete=False)   # an interrupted run keeps what it measured
    finally:
        stop_all_started()
        if not args.keep:
            shutil.rmtree(setup.dir, ignore_errors=True)

    results["wall_seconds"] = round(time.monotonic() - started)
    table = save(results, servers, workloads, args.output, complete=True)
    print(f"\nInstructions per request (callgrind Ir, (Ir(2N) - Ir(N)) / N, minimum of {args.runs} runs) and, in "
          f"brackets, syscalls per request; {results['date']}, commit {results['commit'][:12]}\n")
    print(table)
    print("\nCaveats: " + "; ".join(results["caveats"]) + ".")
    print(f"written to {os.path.relpath(args.output, ROOT)}; {results['wall_seconds']} s"
          + ("; SOME RUNS FAILED: their figures are missing or marked invalid" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
