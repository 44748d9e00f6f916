#!/usr/bin/env python3
"""make bench: aasa against nginx and h2o, side by side on loopback, alternating A B C A B C.

Measures throughput (wrk for HTTP/1.1, h2load for HTTP/2), each server's CPU time per request,
resident memory (idle and with 10 000 idle TLS keep-alive connections), scale (10 000 sites
against 3) and reload latency. Prints one table and writes bench/results/latest.json.

Every loop is bounded. Every server is started by this script, recorded by its PID, and stopped
by that PID (and the PIDs of its own children) at the end, on an error and on SIGINT/SIGTERM:
nothing else on the machine is signalled, so a user's own nginx or h2o is left alone.
"""
import asyncio, atexit, json, os, random, re, resource, shutil, signal, socket, ssl, statistics, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
DURATION = int(os.environ.get("BENCH_SECONDS", "5"))
IDLE_CONNECTIONS = int(os.environ.get("BENCH_IDLE_CONNECTIONS", "10000"))
SCALE_SITES = int(os.environ.get("BENCH_SITES", "10000"))
AASA = os.path.join(ROOT, ".build", "release", "aasa")
PATH = "/.well-known/apple-app-site-association"


# Every server process this script starts, stopped by stop_all() whatever happens.
STARTED = []


def start(argv, **kw):
    proc = subprocess.Popen(argv, **kw)
    STARTED.append(proc)
    return proc


def stop(proc, timeout=15):
    """SIGTERM to our process, then SIGKILL to it and to the children it had, by PID."""
    if proc.poll() is not None:
        return
    kids = children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def stop_all():
    for proc in STARTED:
        stop(proc, timeout=5)


def on_signal(signum, _frame):
    stop_all()
    sys.exit(128 + signum)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def free_port():
    while True:
        port = random.randint(20000, 29999)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                pass


def small_file():
    """About 700 bytes: a realistic file for two apps."""
    comps = [{"/": f"/section{i}/*", "comment": f"Section {i} pages"} for i in range(6)]
    doc = {"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app", "ABCDE12345.com.example.beta"], "components": comps}]},
           "webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}
    return json.dumps(doc, indent=1)


def big_file(size=100_000):
    """About 100 KB, valid, under the 128 KB limit."""
    comps = []
    doc = {"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": comps}]}}
    i = 0
    while len(json.dumps(doc)) < size:
        comps.append({"/": f"/products/category-{i}/item/*", "comment": f"Category {i} product pages and their variants"})
        i += 1
    return json.dumps(doc)


def rss_kb(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def cpu_seconds(pids):
    """User + system CPU time of the processes, from /proc (clock ticks)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except FileNotFoundError:
            pass
    return total / ticks


def children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


class Workdir:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="aasa-bench-")
        self.certs = os.path.join(self.dir, "certs")
        self.config = os.path.join(self.dir, "config")
        os.makedirs(self.certs)
        for host, body in (("bench.example", small_file()), ("big.example", big_file()), ("www.bench.example", small_file())):
            os.makedirs(os.path.join(self.config, host))
            with open(os.path.join(self.config, host, "apple-app-site-association"), "w") as f:
                f.write(body)
        key, crt = os.path.join(self.certs, "bench.key"), os.path.join(self.certs, "bench.crt")
        run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
             "-out", crt, "-days", "30", "-subj", "/CN=bench.example",
             "-addext", "subjectAltName=DNS:bench.example,DNS:www.bench.example,DNS:big.example,DNS:*.bench.example,DNS:localhost,IP:127.0.0.1",
             "-addext", "basicConstraints=critical,CA:FALSE"])
        os.chmod(key, 0o600)
        self.key, self.crt = key, crt

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Server:
    """One server under test: start, ports, pids, stop."""
    name = ""

    def urls(self):
        return {"https": f"https://127.0.0.1:{self.https}", "http": f"http://127.0.0.1:{self.http}"}

    def pids(self):
        return [self.proc.pid] + children(self.proc.pid)

    def stop(self):
        stop(self.proc)


class Aasa(Server):
    name = "aasa"

    def __init__(self, work, config=None):
        self.https, self.http, self.admin = free_port(), free_port(), free_port()
        self.started = time.monotonic()
        self.log = open(os.path.join(work.dir, "aasa.err"), "w")
        self.proc = start([AASA, "serve", "--config", config or work.config, "--certs", work.certs,
                           "--https", f"127.0.0.1:{self.https}", "--http", f"127.0.0.1:{self.http}",
                           "--admin", f"127.0.0.1:{self.admin}", "--workers", "2", "--max-connections", "20000",
                           # every client here is 127.0.0.1: no per-address cap (default 256)
                           "--max-connections-per-client", "0",
                           # measured alone: no requests to Apple's CDN
                           "--cdn-watch", "off"],
                          stdout=subprocess.DEVNULL, stderr=self.log)
        self.ready_seconds = wait_ready(self.admin, "/readyz", self.started)


class Nginx(Server):
    name = "nginx"

    def __init__(self, work):
        self.https, self.http = free_port(), free_port()
        prefix = os.path.join(work.dir, "nginx")
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        # HTTP/2 on the TLS port (ALPN h2): `http2 on` from nginx 1.25.1, `listen … http2` before.
        version = tuple(int(x) for x in re.findall(r"nginx/(\d+)\.(\d+)\.(\d+)", run(["nginx", "-v"]).stderr)[0])
        h2_listen, h2_directive = ("", "http2 on;") if version >= (1, 25, 1) else (" http2", "")
        servers = ""
        for host in ("bench.example", "big.example", "www.bench.example"):
            servers += f"""
  server {{
    listen 127.0.0.1:{self.https} ssl{h2_listen} {"default_server" if host == "bench.example" else ""};
    {h2_directive}
    listen 127.0.0.1:{self.http} {"default_server" if host == "bench.example" else ""};
    server_name {host};
    ssl_certificate {work.crt};
    ssl_certificate_key {work.key};
    location = {PATH} {{
      default_type application/json;
      alias {work.config}/{host}/apple-app-site-association;
      add_header Cache-Control "public, max-age=3600";
      add_header X-Content-Type-Options nosniff;
    }}
    location / {{ return 404; }}
  }}"""
        conf = f"""
user root;
worker_processes 2;
worker_rlimit_nofile 19000;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log error;
daemon off;
events {{ worker_connections 20000; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 60s;
  sendfile on;
  tcp_nodelay on;
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:SSL:10m;
  ssl_session_tickets on;
  etag on;
  {servers}
}}
"""
        path = os.path.join(prefix, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        self.started = time.monotonic()
        self.proc = start(["nginx", "-c", path, "-p", prefix], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ready_seconds = wait_ready(self.http, PATH, self.started, host="bench.example")


class H2o(Server):
    name = "h2o"

    def __init__(self, work):
        self.https, self.http = free_port(), free_port()
        prefix = os.path.join(work.dir, "h2o")
        os.makedirs(prefix, exist_ok=True)
        hosts = ""
        for host in ("bench.example", "big.example", "www.bench.example"):
            hosts += f"""
  "{host}":
    paths:
      "{PATH}":
        file.file: {work.config}/{host}/apple-app-site-association
        header.add: "Cache-Control: public, max-age=3600"
        header.add: "X-Content-Type-Options: nosniff"
"""
        # Access log off (not configured), two threads like the others' two workers, timeouts and
        # connection limit raised for the idle-connection test, OCSP stapling updates off (they
        # would fetch from the network), the private key in process (neverbleed's helper is a
        # child process, counted by pids() either way).
        conf = f"""user: root
num-threads: 2
max-connections: 20000
http1-request-timeout: 60
http2-idle-timeout: 60
pid-file: {prefix}/h2o.pid
error-log: {prefix}/error.log
file.mime.setdefaulttype: application/json
listen:
  host: 127.0.0.1
  port: {self.https}
  ssl:
    certificate-file: {work.crt}
    key-file: {work.key}
    minimum-version: TLSv1.2
    ocsp-update-interval: 0
listen:
  host: 127.0.0.1
  port: {self.http}
hosts:{hosts}"""
        path = os.path.join(prefix, "h2o.conf")
        with open(path, "w") as f:
            f.write(conf)
        self.started = time.monotonic()
        self.proc = start(["h2o", "-c", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ready_seconds = wait_ready(self.http, PATH, self.started, host="bench.example")


SERVERS = (Aasa, Nginx, H2o)
NAMES = [kind.name for kind in SERVERS]


def wait_ready(port, path, started, host="localhost"):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
                if s.recv(12).startswith(b"HTTP/1.1 200"):
                    return time.monotonic() - started
        except OSError:
            pass
        time.sleep(0.01)
    raise RuntimeError(f"server on {port} did not become ready")


def wrk(url, host, connections, extra=(), duration=DURATION):
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "-H", f"Host: {host}", *extra, url + PATH]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60).stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    errors = 0
    for pattern in (r"Non-2xx or 3xx responses: (\d+)", r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)"):
        e = re.search(pattern, out)
        if e:
            errors += sum(int(g) for g in e.groups())
    return (float(m.group(1)) if m else 0.0), errors


def h2load(url, host, connections, extra=(), duration=DURATION, streams=10):
    """h2load over TLS (ALPN h2) for `duration` seconds: (req/s, errors). Anything but h2, or
    any request that failed or was not 2xx, counts as an error."""
    cmd = ["h2load", "-t1", f"-c{connections}", f"-m{streams}", "-D", str(duration), "-H", f":authority: {host}", *extra, url + PATH]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60).stdout
    m = re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", out)
    if not m or not re.search(r"Application protocol: h2\b", out):
        return 0.0, 1
    done = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", out)
    codes = re.search(r"status codes: (\d+) 2xx", out)
    errors = int(done.group(3)) + int(done.group(4)) + (int(done.group(2)) - int(codes.group(1)))
    return float(m.group(1)), errors


# key, label, client, scheme, Host, connections, extra arguments
THROUGHPUT = [
    ("https_keepalive_rps", "HTTPS keep-alive, 700 B (req/s)", wrk, "https", "bench.example", 64, ()),
    ("https_new_connection_rps", "HTTPS new TLS connection per request (req/s)", wrk, "https", "bench.example", 16, ("-H", "Connection: close")),
    ("http_keepalive_rps", "HTTP keep-alive, 700 B (req/s)", wrk, "http", "bench.example", 64, ()),
    ("https_100kb_rps", "HTTPS keep-alive, 100 KB (req/s)", wrk, "https", "big.example", 16, ()),
    ("h2_rps", "HTTP/2 (h2load -c16 -m10), 700 B (req/s)", h2load, "https", "bench.example", 16, ()),
]


async def hold_tls_connections(port, count, host):
    """Opens `count` TLS connections, sends one request on each, keeps them open."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    sem = asyncio.Semaphore(200)
    writers = []

    async def one():
        async with sem:
            for _ in range(3):
                try:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname=host), 20)
                    writer.write(f"GET {PATH} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                    await writer.drain()
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
                    length = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))
                    await reader.readexactly(length)
                    writers.append(writer)
                    return
                except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ssl.SSLError):
                    await asyncio.sleep(0.1)

    await asyncio.gather(*(one() for _ in range(count)))
    return writers


def idle_memory(server):
    async def main():
        writers = await hold_tls_connections(server.https, IDLE_CONNECTIONS, "bench.example")
        await asyncio.sleep(1)
        rss = rss_kb(server.pids())
        for w in writers:
            w.close()
        return rss, len(writers)
    return asyncio.run(main())


def reload_latency(server, work, edits=100):
    """Time from a file's write to the first response with the new content."""
    path = os.path.join(work.config, "bench.example", "apple-app-site-association")
    original = open(path).read()
    times = []
    sock = socket.create_connection(("127.0.0.1", server.http))
    sock.settimeout(5)

    def fetch():
        sock.sendall(f"GET {PATH} HTTP/1.1\r\nHost: bench.example\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, body = data.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))
        while len(body) < length:
            body += sock.recv(65536)
        return body

    try:
        for i in range(edits):
            marker = f"edit-{i}-{random.random()}"
            doc = json.loads(original)
            doc["applinks"]["details"][0]["components"][0]["comment"] = marker
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(json.dumps(doc))
            start = time.monotonic()
            os.rename(tmp, path)
            while marker.encode() not in fetch():
                if time.monotonic() - start > 5:
                    break
                time.sleep(0.0005)
            times.append(time.monotonic() - start)
    finally:
        sock.close()
        with open(path, "w") as f:
            f.write(original)
    times.sort()
    return times[len(times) // 2] * 1000, times[min(len(times) - 1, int(len(times) * 0.99))] * 1000


def rewrite_under_load(server, work):
    """wrk for 10 s while the file is rewritten 10 times a second: throughput and errors."""
    path = os.path.join(work.config, "bench.example", "apple-app-site-association")
    original = open(path).read()
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            doc = json.loads(original)
            doc["applinks"]["details"][0]["components"][0]["comment"] = f"rewrite {i}"
            with open(path + ".tmp", "w") as f:
                f.write(json.dumps(doc))
            os.rename(path + ".tmp", path)
            i += 1
            stop.wait(0.1)

    t = threading.Thread(target=writer)
    t.start()
    try:
        rps, errors = wrk(server.urls()["http"], "bench.example", 32, duration=10)
    finally:
        stop.set()
        t.join()
        with open(path, "w") as f:
            f.write(original)
    return rps, errors


def scale(work):
    """aasa with SCALE_SITES sites against 3: start-up, memory, keep-alive throughput."""
    config = os.path.join(work.dir, "config-scale")
    body = small_file()
    for i in range(SCALE_SITES):
        d = os.path.join(config, f"site{i}.bench.example")
        os.makedirs(d)
        with open(os.path.join(d, "apple-app-site-association"), "w") as f:
            f.write(body)
    results = {}
    for label, cfg in (("3", work.config), (str(SCALE_SITES), config)):
        server = Aasa(work, config=cfg)
        try:
            host = "bench.example" if label == "3" else f"site{SCALE_SITES // 2}.bench.example"
            rps = statistics.median(wrk(server.urls()["https"], host, 64)[0] for _ in range(ROUNDS))
            results[label] = {"startup_s": server.ready_seconds, "rss_kb": rss_kb(server.pids()), "https_keepalive_rps": rps}
        finally:
            server.stop()
    return results


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < IDLE_CONNECTIONS + 1000:
        sys.exit(f"the open-file limit ({hard}) is below {IDLE_CONNECTIONS + 1000}: raise it (ulimit -Hn) or set BENCH_IDLE_CONNECTIONS")
    atexit.register(stop_all)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    work = Workdir()
    results = {"machine": {"cores": os.cpu_count(), "rounds": ROUNDS, "seconds_per_run": DURATION}, **{n: {} for n in NAMES}}
    try:
        raw = {n: {k[0]: [] for k in THROUGHPUT} for n in NAMES}
        cpu = {n: {k[0]: [] for k in THROUGHPUT} for n in NAMES}
        idle = {n: [] for n in NAMES}
        # A B C A B C …: each round starts every server afresh, so drift on this shared machine hits all three.
        for r in range(ROUNDS):
            for kind in SERVERS:
                server = kind(work)
                try:
                    idle[server.name].append(rss_kb(server.pids()))
                    for key, _, client, scheme, host, conns, extra in THROUGHPUT:
                        pids = server.pids()
                        before = cpu_seconds(pids)
                        rps, errors = client(server.urls()[scheme], host, conns, extra)
                        # The server's own CPU per request: wrk shares the machine, so when it
                        # saturates, req/s hides how much work each server does.
                        us = (cpu_seconds(pids) - before) / max(1, rps * DURATION) * 1e6
                        raw[server.name][key].append(rps)
                        cpu[server.name][key].append(us)
                        print(f"round {r + 1} {server.name:5} {key:26} {rps:10.0f} req/s  {us:6.1f} us CPU/req  errors {errors}", flush=True)
                finally:
                    server.stop()
        for name in NAMES:
            for key in raw[name]:
                results[name][key] = summary(raw[name][key])
                results[name][key + "_cpu_us"] = summary(cpu[name][key])
            results[name]["rss_idle_kb"] = summary(idle[name])

        for kind in SERVERS:
            server = kind(work)
            try:
                rss, opened = idle_memory(server)
                results[server.name]["rss_10k_idle_tls_kb"] = summary([rss])
                results[server.name]["idle_tls_connections_opened"] = opened
                print(f"{server.name:5} RSS with {opened} idle TLS connections: {rss} kB", flush=True)
            finally:
                server.stop()

        server = Aasa(work)
        try:
            p50, p99 = reload_latency(server, work)
            rps, errors = rewrite_under_load(server, work)
            results["aasa"]["reload_p50_ms"] = summary([p50])
            results["aasa"]["reload_p99_ms"] = summary([p99])
            results["aasa"]["rewrite_load_rps"] = summary([rps])
            results["aasa"]["rewrite_load_errors"] = summary([errors])
            print(f"aasa  reload p50 {p50:.1f} ms p99 {p99:.1f} ms; under rewrites {rps:.0f} req/s, {errors} errors", flush=True)
        finally:
            server.stop()

        results["aasa"]["scale"] = scale(work)
    finally:
        stop_all()
        work.cleanup()

    rows = [(label, key) for key, label, *_ in THROUGHPUT] + [
        (label.replace("(req/s)", "(server CPU µs/req)"), key + "_cpu_us") for key, label, *_ in THROUGHPUT] + [
        ("RSS idle (kB)", "rss_idle_kb"), (f"RSS, {IDLE_CONNECTIONS} idle TLS connections (kB)", "rss_10k_idle_tls_kb")]
    # Each cell: the median of the rounds and, in brackets, the spread (max - min) / median.
    lines = [f"{'figure':58}" + "".join(f"{n + ' median (spread)':>26}" for n in NAMES)
             + "".join(f"{'aasa/' + n:>12}" for n in NAMES[1:])]
    for label, key in rows:
        digits = 1 if key.endswith("_cpu_us") else 0
        cells = ""
        for n in NAMES:
            v = results[n][key]
            spread = (v["max"] - v["min"]) / v["median"] * 100 if v["median"] else 0
            cells += f"{v['median']:>18.{digits}f} ({spread:3.0f} %)"
        ratios = "".join(f"{results['aasa'][key]['median'] / results[n][key]['median']:>12.2f}" if results[n][key]["median"] else f"{'n/a':>12}"
                         for n in NAMES[1:])
        lines.append(f"{label:58}{cells}{ratios}")
    s = results["aasa"]["scale"]
    big = str(SCALE_SITES)
    lines += [
        f"{'aasa start-up, 3 / ' + big + ' sites (s)':58} {s['3']['startup_s']:>12.3f} / {s[big]['startup_s']:.3f}",
        f"{'aasa RSS, 3 / ' + big + ' sites (kB)':58} {s['3']['rss_kb']:>12} / {s[big]['rss_kb']}",
        f"{'aasa HTTPS keep-alive, 3 / ' + big + ' sites (req/s)':58} {s['3']['https_keepalive_rps']:>12.0f} / {s[big]['https_keepalive_rps']:.0f}"
        f"   ratio {s[big]['https_keepalive_rps'] / s['3']['https_keepalive_rps']:.2f}",
        f"{'aasa reload, write to new content p50 / p99 (ms)':58} {results['aasa']['reload_p50_ms']['median']:>12.1f} / {results['aasa']['reload_p99_ms']['median']:.1f}",
        f"{'aasa HTTP under 10 rewrites/s (req/s, errors)':58} {results['aasa']['rewrite_load_rps']['median']:>12.0f}, {results['aasa']['rewrite_load_errors']['median']:.0f} errors",
    ]
    for n in NAMES:
        opened = results[n].get("idle_tls_connections_opened", IDLE_CONNECTIONS)
        if opened < IDLE_CONNECTIONS:
            lines.append(f"WARNING: {n} accepted only {opened} of {IDLE_CONNECTIONS} idle TLS connections: its RSS row is not comparable")
    table = "\n".join(lines)
    print("\n" + table)
    results["table"] = table
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "latest.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("\nwritten to bench/results/latest.json")


if __name__ == "__main__":
    main()
