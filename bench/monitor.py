#!/usr/bin/env python3
"""make bench-monitor: `aasa monitor` at scale (docs/monitor.md, "At scale"), the release build
against fake origins, a fake Apple CDN and a fake Digital Asset Links API on loopback.

D domains (BENCH_MONITOR_DOMAINS, default 10000), all under *.bench.test, reached through
`connect=` in the domains file. One in ten hangs: half connect to a socket that accepts and never
answers (the TLS handshake never ends), half to the HTTPS origin, which completes the handshake
and never answers the request (the check waits out --timeout: the file, the legacy location
and assetlinks.json share the origin's one time-out). The others get a ~700-byte file with an ETag and an assetlinks.json, Apple's
CDN holds the same file (`current`) and Google lists the same app (`current`). The fakes are one
process started by this script, a thread per connection; the origins log when the kernel received
each connection's ClientHello (SO_TIMESTAMPNS, read with MSG_PEEK), so a fake waiting for a core on
a busy machine does not pass its own delay off as the monitor's.

1. schedule: `--rate R` (BENCH_MONITOR_RATE, default 20) and `--interval I`
   (BENCH_MONITOR_INTERVAL, default 1.2 x D / R, 600 s for 10 000 at 20: the schedule then
   starts D / I checks a second, below the rate's 1 / (1.1 / R)); `--timeout 10`. The monitor
   runs for I + 45 s. Domain k of D (byte order) is due at t0 + k x I / D (t0: the earliest
   first start less its k x I / D; the start-up log line comes some milliseconds after the
   schedule is made). Measured: each domain's first check against its due time (the start from
   the ClientHello of its first connection, the end from the story's first `origin pending -> `
   in /status); the same for the checks due while every page of /status is read, halfway;
   checks started in any 1 s (sliding) and any calendar second; second checks, which should
   follow the first by I (all of /status is read again at the end, while they run); VmRSS and
   the thread count four times a second, VmHWM; CPU per check; SIGTERM to exit.
2. burst and idle: a second monitor with the default --interval (3600 s), started on an empty
   domains file that is then replaced by the D domains: domains added at run time are all due
   within 60 s, so the rate alone paces them. Measured: checks started in any second, the time to
   the pass's end, RSS; then, with nothing due for an hour, the monitor's CPU (utime + stime of
   /proc/PID/stat, and schedstat of its threads) over BENCH_MONITOR_IDLE_SECONDS (default 30).

3. trust: `--once` over 300 good domains at --rate 100, with --cacert (one CA) and with the
   system store (SSL_CERT_FILE: the system bundle and the bench CA, what a monitor without
   --cacert loads), twice each: the CPU per check of each run.

Targets (SPEC 9, docs/monitor.md): every domain checked within one interval of its due time; at
most R checks started in any second; RSS under 200 MiB; idle CPU under 1 % of a core; the hanging
origins delay no other domain's check by more than 1 s. Prints a table and writes
bench/results/monitor-DATE.json (BENCH_MONITOR_RESULT for another name); the run's files (the
monitors' logs, the fakes' request log) are removed unless BENCH_MONITOR_KEEP=1. Every process is started
by this script and stopped by its PID (bench/run.py's helpers), also on an error or a signal;
every loop is bounded in count and time.
"""
import bisect, datetime, json, math, os, resource, shutil, signal, socket, ssl, struct, subprocess, sys, tempfile, threading, time, urllib.request

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import free_port, on_signal, run, start, stop, stop_all  # noqa: E402

ROOT = os.path.dirname(HERE)
AASA = os.environ.get("AASA_BIN", os.path.join(ROOT, ".build", "release", "aasa"))
DOMAINS = int(os.environ.get("BENCH_MONITOR_DOMAINS", "10000"))
RATE = int(os.environ.get("BENCH_MONITOR_RATE", "20"))
INTERVAL = int(os.environ.get("BENCH_MONITOR_INTERVAL", "0")) or max(60, math.ceil(1.2 * DOMAINS / RATE))
TIMEOUT = 10
IDLE_SECONDS = float(os.environ.get("BENCH_MONITOR_IDLE_SECONDS", "30"))
HANG_EVERY = 10  # one domain in ten hangs
TAIL = 45  # seconds after the interval: the last domain's check (a hanging one takes TIMEOUT) and some second checks
WELL_KNOWN = "/.well-known/apple-app-site-association"
ASSET_LINKS = "/.well-known/assetlinks.json"
RELATION = "delegate_permission/common.handle_all_urls"
FINGERPRINT = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
TICKS = os.sysconf("SC_CLK_TCK")


# MARK: - the domains

def domain(k):
    """Domain k and how its origin behaves: good, http-hang (TLS, then silence) or tls-hang."""
    if k % HANG_EVERY == 0:
        kind = "tls-hang" if (k // HANG_EVERY) % 2 == 0 else "http-hang"
        return f"d{k:06d}-{kind}.bench.test", kind
    return f"d{k:06d}.bench.test", "good"


def aasa_file(host):
    """About 700 bytes, each domain's own (its app and paths name it)."""
    comps = [{"/": f"/{host.split('.')[0]}/section{i}/*", "comment": f"Section {i} pages"} for i in range(6)]
    return json.dumps({"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app", "ABCDE12345.com.example.beta"],
                                                 "components": comps}]},
                       "webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}, indent=1).encode()


ASSET_LINKS_BODY = json.dumps([{"relation": [RELATION], "target": {"namespace": "android_app", "package_name": "com.example.app",
                                                                    "sha256_cert_fingerprints": [FINGERPRINT]}}]).encode()


def google_answer(host):
    return json.dumps({"statements": [{"source": {"web": {"site": f"https://{host}."}}, "relation": RELATION,
                                       "target": {"androidApp": {"packageName": "com.example.app",
                                                                 "certificate": {"sha256Fingerprint": FINGERPRINT}}}}],
                       "maxAge": "3600s"}).encode()


def response(status, body, headers=()):
    head = f"HTTP/1.1 {status}\r\n" + "".join(h + "\r\n" for h in headers)
    return (head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


# MARK: - the fakes (one process: `monitor.py fakes DIR`)

# The kernel's receive time of a connection's first bytes (the monitor's TLS ClientHello), read
# with MSG_PEEK: when a check connected, whenever this process got round to it. A fake that a busy
# machine leaves waiting for a core would otherwise record its own lateness as the monitor's.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def peek_hello(conn):
    """The first bytes the peer sent, left unread, and when the kernel received them."""
    conn.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    data, ancillary, _, _ = conn.recvmsg(16384, socket.CMSG_SPACE(16), socket.MSG_PEEK)
    for level, kind, raw in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            seconds, nanoseconds = struct.unpack("qq", raw[:16])
            return data, seconds + nanoseconds / 1e9
    return data, time.time()


def server_name(hello):
    """The SNI of a TLS ClientHello (RFC 8446 4.1.2, RFC 6066 3), or "-"."""
    try:
        if hello[0] != 22:
            return "-"
        p = 5 + 4 + 2 + 32  # record header, handshake header, legacy_version, random
        p += 1 + hello[p]  # legacy_session_id
        p += 2 + int.from_bytes(hello[p:p + 2], "big")  # cipher_suites
        p += 1 + hello[p]  # legacy_compression_methods
        end = p + 2 + int.from_bytes(hello[p:p + 2], "big")
        p += 2
        while p + 4 <= end:
            kind, length = int.from_bytes(hello[p:p + 2], "big"), int.from_bytes(hello[p + 2:p + 4], "big")
            if kind == 0:  # server_name: list length (2), name type (1), name length (2), name
                n = int.from_bytes(hello[p + 7:p + 9], "big")
                return hello[p + 9:p + 9 + n].decode("ascii")
            p += 4 + length
    except (IndexError, UnicodeDecodeError):
        pass
    return "-"


def read_head(conn):
    """(path, fields) of a request head, or None when the peer went first."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    line, _, rest = data.decode("latin-1").partition("\r\n")
    parts = line.split(" ")
    fields = {}
    for h in rest.split("\r\n"):
        name, _, value = h.partition(":")
        fields[name.strip().lower()] = value.strip()
    return (parts[1] if len(parts) > 1 else "/"), fields


def hold(conn):
    """Never answer: read until the peer gives up (its time-out), at most 60 s."""
    conn.settimeout(60)
    for _ in range(10000):
        if not conn.recv(65536):
            return


def fakes_main(work):
    """The HTTPS origin, the socket that never answers a handshake, and the CDN + Google on plain
    HTTP, a thread per connection. Prints their ports as one JSON line, then serves until SIGTERM.
    Each log line: `time kind host path`; for the origins, the time is the kernel's receipt of the
    ClientHello (the check's connection), the host the request's (or the SNI's)."""
    log = open(os.path.join(work, "requests.log"), "w", buffering=1)
    lock = threading.Lock()

    def record(at, kind, host="-", path="-"):
        with lock:
            log.write(f"{at:.6f} {kind} {host} {path}\n")

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(work, "leaf.pem"))

    def origin(raw):
        try:
            raw.settimeout(30)
            hello, at = peek_hello(raw)
            conn = context.wrap_socket(raw, server_side=True)
            head = read_head(conn)
            if head is None:
                record(at, "origin-none", server_name(hello))
                return
            path, fields = head
            host = fields.get("host", "-")
            record(at, "origin-bot" if "AASA-Bot" in fields.get("user-agent", "") else "origin-other", host, path)
            if "-http-hang." in host:
                hold(conn)
                return
            if path == WELL_KNOWN:
                body = aasa_file(host)
                conn.sendall(response("200 OK", body, ["Content-Type: application/json", f'ETag: "{len(body)}-v1"']))
            elif path == ASSET_LINKS:
                conn.sendall(response("200 OK", ASSET_LINKS_BODY, ["Content-Type: application/json"]))
            else:
                conn.sendall(response("404 Not Found", b"no"))
        except (OSError, ssl.SSLError):
            pass
        finally:
            raw.close()

    def silent(raw):
        try:
            raw.settimeout(30)
            hello, at = peek_hello(raw)
            record(at, "hang-hello", server_name(hello))
            hold(raw)
        except OSError:
            pass
        finally:
            raw.close()

    def apis(conn):
        try:
            conn.settimeout(30)
            head = read_head(conn)
            if head is None:
                return
            path, _ = head
            if path.startswith("/a/v1/"):
                host = path[len("/a/v1/"):]
                record(time.time(), "cdn", host)
                conn.sendall(response("200 OK", aasa_file(host), ["Content-Type: application/json"]))
            elif path.startswith("/v1/statements:list?"):
                host = path.split("source.web.site=https://", 1)[-1].split("&", 1)[0]
                record(time.time(), "google", host)
                conn.sendall(response("200 OK", google_answer(host), ["Content-Type: application/json"]))
            else:
                conn.sendall(response("404 Not Found", b"no"))
        except OSError:
            pass
        finally:
            conn.close()

    def listen(handler):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Also turns on the kernel's receive timestamps.
        listener.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1024)

        def accept():
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=handler, args=(conn,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return listener.getsockname()[1]

    ports = {"origin": listen(origin), "hang": listen(silent), "apis": listen(apis)}
    print(json.dumps(ports), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    while True:
        signal.pause()


# MARK: - the bench

def certificates(work):
    """A CA and a *.bench.test leaf from it (P-256), as the monitor's --cacert and the origin's PEM."""
    ca_key, ca, key, csr, leaf = (os.path.join(work, n) for n in ("ca.key", "ca.pem", "leaf.key", "leaf.csr", "leaf.crt"))
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", ca_key,
         "-out", ca, "-days", "30", "-subj", "/CN=aasa bench-monitor CA", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
         "-out", csr, "-subj", "/CN=*.bench.test"])
    ext = os.path.join(work, "leaf.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:*.bench.test\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n")
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "30", "-sha256",
         "-extfile", ext, "-out", leaf])
    with open(os.path.join(work, "leaf.pem"), "w") as out:
        out.write(open(leaf).read() + open(key).read())
    return ca


def domains_text(ports):
    lines = []
    for k in range(DOMAINS):
        host, kind = domain(k)
        port = ports["hang"] if kind == "tls-hang" else ports["origin"]
        lines.append(f"{host} connect=127.0.0.1:{port}\n")
    return "".join(lines)


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                out[name] = int(value.split()[0]) / 1024  # MiB
            elif name == "Threads":
                out[name] = int(value)
    return out


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def schedstat_ns(pid):
    """CPU of the threads alive now, in nanoseconds (a thread that ended meanwhile is not counted)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def http_get(port, path, timeout=30):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.status, r.read()


def iso_seconds(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


class Monitor:
    """One `aasa monitor` on a free admin port, its JSON log in a file."""

    def __init__(self, work, name, domains_file, interval, ca, ports):
        self.admin = free_port()
        self.log_path = os.path.join(work, f"{name}.log")
        self.log = open(self.log_path, "w")
        argv = [AASA, "monitor", "--domains", domains_file, "--admin", f"127.0.0.1:{self.admin}", "--interval", str(interval),
                "--rate", str(RATE), "--timeout", str(TIMEOUT), "--cacert", ca, "--cdn-base", f"http://127.0.0.1:{ports['apis']}",
                "--dal-base", f"http://127.0.0.1:{ports['apis']}", "--log-format", "json"]
        self.started = time.time()
        self.proc = start(argv, stdout=subprocess.DEVNULL, stderr=self.log)
        self.pid = self.proc.pid
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"aasa monitor exited ({self.proc.returncode}): see {self.log_path}")
            try:
                if http_get(self.admin, "/readyz", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            raise SystemExit(f"aasa monitor not ready after 120 s: see {self.log_path}")
        self.ready_s = time.time() - self.started
        self.t0 = None
        for _ in range(100):
            self.log.flush()
            for line in open(self.log_path):
                if '"message":"monitor: ' in line and "admin on" in line:
                    self.t0 = iso_seconds(json.loads(line)["time"])
                    break
            if self.t0:
                break
            time.sleep(0.05)
        if self.t0 is None:
            raise SystemExit(f"no start-up line in {self.log_path}")

    def summary(self):
        return json.loads(http_get(self.admin, "/status?limit=1")[1])["summary"]

    def domains(self):
        """Every domain of /status, page by page (bounded: one page per 1 000 domains, and one more)."""
        out, after = [], None
        for _ in range(DOMAINS // 1000 + 2):
            status = json.loads(http_get(self.admin, "/status?limit=1000" + (f"&after={after}" if after else ""), timeout=60)[1])
            out += status["domains"]
            after = status["next"]
            if after is None:
                break
        return out

    def stop(self):
        """SIGTERM, and the seconds until it exits (stop() kills it after 15 s)."""
        began = time.monotonic()
        stop(self.proc, timeout=15)
        self.log.close()
        return time.monotonic() - began


def read_requests(work, since, until):
    """The fakes' log between two wall-clock times: (time, kind, host, path) tuples, in order."""
    out = []
    with open(os.path.join(work, "requests.log")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 4 and since <= float(parts[0]) <= until:
                out.append((float(parts[0]), parts[1], parts[2], parts[3]))
    return out


def check_starts(requests):
    """When checks started, (time, host): the connection of the bot's GET of the file at the HTTPS
    origin (a check's first, for a good or http-hang domain) and each connection to the silent
    socket (a tls-hang check's only one)."""
    return sorted((t, host) for t, kind, host, path in requests
                  if (kind == "origin-bot" and path == WELL_KNOWN) or kind == "hang-hello")


def busiest(starts):
    """Most starts in any 1 s window (sliding), and in any calendar second."""
    sliding = 0
    for i, t in enumerate(starts):
        sliding = max(sliding, bisect.bisect_right(starts, t + 1 - 1e-9) - i)
    per_second = {}
    for t in starts:
        per_second[int(t)] = per_second.get(int(t), 0) + 1
    return sliding, max(per_second.values(), default=0)


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))] if s else None


def spread(values):
    return {"count": len(values), "p50": percentile(values, 50), "p99": percentile(values, 99),
            "max": max(values) if values else None, "min": min(values) if values else None}


class Sampler:
    """VmRSS and threads four times a second while `wait` runs (a thread is a check under way)."""

    def __init__(self, pid):
        self.pid, self.rss, self.threads = pid, [], []

    def wait(self, seconds, until=None):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            s = proc_status(self.pid)
            self.rss.append(s["VmRSS"])
            self.threads.append(s["Threads"])
            if until and until():
                return True
            time.sleep(min(0.25, max(0.0, end - time.monotonic())))
        return False


def first_event_time(d):
    for e in d.get("story", []):
        if e["event"].startswith("origin pending -> "):
            return iso_seconds(e["at"])
    return None


def phase_schedule(work, ca, ports, domains_file):
    print(f"schedule: {DOMAINS} domains, --interval {INTERVAL}, --rate {RATE}: {INTERVAL + TAIL} s", file=sys.stderr, flush=True)
    m = Monitor(work, "schedule", domains_file, INTERVAL, ca, ports)
    cpu0 = cpu_ticks(m.pid)
    sampler = Sampler(m.pid)
    # Halfway, every page of /status, as an operator would read it: are the checks due meanwhile late?
    sampler.wait(m.t0 + INTERVAL / 2 - time.time())
    paging = [time.time()]
    m.domains()
    paging.append(time.time())
    sampler.wait(m.t0 + INTERVAL + TAIL - time.time())
    status = proc_status(m.pid)
    cpu = (cpu_ticks(m.pid) - cpu0) / TICKS
    began = time.monotonic()
    listed = m.domains()
    status_s = time.monotonic() - began
    end = time.time()
    exit_s = m.stop()
    requests = read_requests(work, m.started, end)
    starts = check_starts(requests)

    # Due times: domain k of D (byte order of name) at t0 + k x I / D.
    names = sorted(domain(k)[0] for k in range(DOMAINS))
    offset = {host: k * INTERVAL / DOMAINS for k, host in enumerate(names)}
    kinds = {domain(k)[0]: domain(k)[1] for k in range(DOMAINS)}
    arrivals = {}
    for t, host in starts:
        if host in offset:
            arrivals.setdefault(host, []).append(t)
    t0 = min((times[0] - offset[host] for host, times in arrivals.items()), default=m.t0)
    due = {host: t0 + offset[host] for host in names}
    late = {"good": [], "http-hang": [], "tls-hang": []}
    during_paging = []
    gaps = []
    for host, times in arrivals.items():
        late[kinds[host]].append(times[0] - due[host])
        if paging[0] <= due[host] <= paging[1] + 1:
            during_paging.append(times[0] - due[host])
        gaps += [b - a - INTERVAL for a, b in zip(times, times[1:])]
    ends = {d["host"]: first_event_time(d) for d in listed}
    first_end = {host: (ends[host] - due[host]) if ends.get(host) else None for host in names}
    unchecked = [h for h, v in first_end.items() if v is None]
    within = sum(1 for v in first_end.values() if v is not None and v <= INTERVAL)
    sliding, calendar = busiest([t for t, _ in starts])
    checks = sum(1 for t, kind, _, path in requests if kind == "cdn")
    cdn_busiest = busiest(sorted(t for t, kind, _, _ in requests if kind == "cdn"))[0]
    google_busiest = busiest(sorted(t for t, kind, _, _ in requests if kind == "google"))[0]
    by_state = {}
    for d in listed:
        by_state[d["origin"]["state"]] = by_state.get(d["origin"]["state"], 0) + 1
    return {
        "interval_s": INTERVAL, "rate": RATE, "domains": DOMAINS, "ready_s": m.ready_s,
        "start_up_line_after_schedule_s": m.t0 - t0, "domains_with_a_start": len(arrivals),
        "listed": len(listed), "origin_states": by_state,
        "checked_within_interval_of_due": within, "never_checked": len(unchecked), "never_checked_sample": unchecked[:5],
        "first_check_end_after_due_s": spread([v for v in first_end.values() if v is not None]),
        "first_start_after_due_s": dict({k: spread(v) for k, v in late.items()}, hanging=spread(late["http-hang"] + late["tls-hang"])),
        "second_check_after_first_minus_interval_s": spread(gaps),
        "status_paging_halfway_s": paging[1] - paging[0], "first_start_after_due_while_paging_s": spread(during_paging),
        "starts": len(starts), "busiest_second_sliding": sliding, "busiest_second_calendar": calendar,
        "cdn_busiest_second_sliding": cdn_busiest, "google_busiest_second_sliding": google_busiest,
        "checks_at_cdn": checks, "cpu_s": cpu, "cpu_ms_per_check": cpu * 1000 / checks if checks else None,
        "rss_mib_max_sampled": max(sampler.rss), "vmhwm_mib": status["VmHWM"], "vmrss_mib_end": status["VmRSS"],
        "threads_max_sampled": max(sampler.threads), "status_all_pages_s": status_s, "sigterm_to_exit_s": exit_s,
    }


def phase_idle(work, ca, ports, domains_text_all):
    print(f"burst and idle: {DOMAINS} domains added at run time, --interval 3600, --rate {RATE}", file=sys.stderr, flush=True)
    path = os.path.join(work, "domains-idle.txt")
    with open(path, "w") as f:
        f.write("# filled once the monitor runs\n")
    m = Monitor(work, "idle", path, 3600, ca, ports)
    sampler = Sampler(m.pid)
    sampler.wait(2)
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(domains_text_all)
    added = time.time()
    os.rename(tmp, path)
    bound = DOMAINS / RATE * 1.5 + 180
    polls = 0

    def done():
        nonlocal polls
        polls += 1
        if polls % 20:  # /status every 5 s
            return False
        s = m.summary()
        return s["domains"] == DOMAINS and s["pending"] == 0

    finished = sampler.wait(bound, until=done)
    pass_s = time.time() - added
    # The last checks under way end within a time-out (a hanging origin's); two, to be sure.
    sampler.wait(2 * TIMEOUT + 5)
    quiet_from = time.time()
    ticks0, ns0, t0 = cpu_ticks(m.pid), schedstat_ns(m.pid), time.monotonic()
    time.sleep(IDLE_SECONDS)
    ticks1, ns1, t1 = cpu_ticks(m.pid), schedstat_ns(m.pid), time.monotonic()
    quiet_to = time.time()
    status = proc_status(m.pid)
    summary = m.summary()
    end = time.time()
    exit_s = m.stop()
    requests = read_requests(work, added, end)
    starts = [t for t, _ in check_starts([r for r in requests if r[0] <= quiet_from])]
    sliding, calendar = busiest(starts)
    cdn_busiest = busiest(sorted(r[0] for r in requests if r[1] == "cdn" and r[0] <= quiet_from))[0]
    google_busiest = busiest(sorted(r[0] for r in requests if r[1] == "google" and r[0] <= quiet_from))[0]
    during_idle = sum(1 for r in requests if quiet_from <= r[0] <= quiet_to)
    return {
        "pass_finished": finished, "pass_s": pass_s, "starts": len(starts),
        "achieved_rate": len(starts) / (starts[-1] - starts[0]) if len(starts) > 1 else None,
        "busiest_second_sliding": sliding, "busiest_second_calendar": calendar,
        "cdn_busiest_second_sliding": cdn_busiest, "google_busiest_second_sliding": google_busiest,
        "idle_seconds": t1 - t0, "idle_cpu_ticks": ticks1 - ticks0,
        "idle_cpu_percent_stat": (ticks1 - ticks0) / TICKS / (t1 - t0) * 100,
        "idle_cpu_percent_schedstat": (ns1 - ns0) / 1e9 / (t1 - t0) * 100,
        "requests_during_idle": during_idle, "summary": summary,
        "rss_mib_max_sampled": max(sampler.rss), "vmhwm_mib": status["VmHWM"], "vmrss_mib_end": status["VmRSS"],
        "threads_end": status["Threads"], "threads_max_sampled": max(sampler.threads), "sigterm_to_exit_s": exit_s,
    }


SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
TRUST_DOMAINS = 300


def phase_trust(work, ca, ports):
    """CPU per check of `--once` over good domains, trusting --cacert (one CA) and the system
    store (SSL_CERT_FILE: the system bundle and the bench CA, which is what a monitor without
    --cacert loads), twice each, alternated; from the rusage of each finished run."""
    if not os.path.exists(SYSTEM_BUNDLE):
        return None
    good = [domain(k)[0] for k in range(10 * TRUST_DOMAINS) if domain(k)[1] == "good"][:min(TRUST_DOMAINS, DOMAINS)]
    print(f"trust: --once over {len(good)} domains, with --cacert and with the system store", file=sys.stderr, flush=True)
    bundle = os.path.join(work, "system-and-bench-ca.pem")
    with open(bundle, "w") as out:
        out.write(open(SYSTEM_BUNDLE).read() + open(ca).read())
    domains_file = os.path.join(work, "domains-trust.txt")
    with open(domains_file, "w") as f:
        f.write("".join(f"{host} connect=127.0.0.1:{ports['origin']}\n" for host in good))
    argv = [AASA, "monitor", "--domains", domains_file, "--once", "--rate", "100", "--timeout", str(TIMEOUT),
            "--cdn-base", f"http://127.0.0.1:{ports['apis']}", "--dal-base", f"http://127.0.0.1:{ports['apis']}"]
    out = {"domains": len(good), "cacert_ms_per_check": [], "system_store_ms_per_check": [], "summaries": []}
    for _ in range(2):
        for key, extra, env in (("cacert_ms_per_check", ["--cacert", ca], {}), ("system_store_ms_per_check", [], {"SSL_CERT_FILE": bundle})):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = start(argv + extra, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=dict(os.environ, **env))
            stdout, _ = proc.communicate(timeout=600)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            out[key].append(cpu * 1000 / len(good))
            out["summaries"].append(stdout.strip().splitlines()[-1] if stdout.strip() else f"exit {proc.returncode}")
    return out


def fmt(v, digits=2):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def table(s, i, trust):
    late_good = s["first_start_after_due_s"]["good"]
    late_hang = s["first_start_after_due_s"]["hanging"]
    idle = max(i["idle_cpu_percent_stat"], i["idle_cpu_percent_schedstat"])
    rows = [
        ("domains (one in ten hanging)", DOMAINS, ""),
        ("schedule: --interval / --rate", f"{INTERVAL} s / {RATE}", ""),
        ("schedule: first check ended within one interval of its due time", f"{s['checked_within_interval_of_due']} of {DOMAINS}",
         "all" if s["checked_within_interval_of_due"] == DOMAINS else "MISSED"),
        ("schedule: first check ended after its due time, p50 / p99 / max (s)",
         " / ".join(fmt(s["first_check_end_after_due_s"][k]) for k in ("p50", "p99", "max")), ""),
        ("schedule: good domains' first start after due, p50 / p99 / max (s)",
         " / ".join(fmt(late_good[k], 3) for k in ("p50", "p99", "max")), "max ≤ 1 s" if (late_good["max"] or 0) <= 1 else "MISSED"),
        ("schedule: hanging domains' first start after due, p50 / p99 / max (s)",
         " / ".join(fmt(late_hang[k], 3) for k in ("p50", "p99", "max")), ""),
        ("schedule: every /status page read halfway (s); checks due meanwhile, start after due, max (s)",
         f"{fmt(s['status_paging_halfway_s'])}; {fmt(s['first_start_after_due_while_paging_s']['max'], 3)}", ""),
        ("schedule: second check after the first, less the interval, p50 / max (s)",
         " / ".join(fmt(s["second_check_after_first_minus_interval_s"][k], 3) for k in ("p50", "max")), ""),
        ("schedule: checks started in any 1 s, sliding / calendar", f"{s['busiest_second_sliding']} / {s['busiest_second_calendar']}",
         f"≤ {RATE}" if s["busiest_second_sliding"] <= RATE else "MISSED"),
        ("schedule: requests to Apple's CDN / to Google started in any 1 s, sliding",
         f"{s['cdn_busiest_second_sliding']} / {s['google_busiest_second_sliding']}",
         f"≤ {RATE}" if max(s["cdn_busiest_second_sliding"], s["google_busiest_second_sliding"]) <= RATE else "MISSED"),
        ("schedule: CPU per check (ms)", fmt(s["cpu_ms_per_check"]), ""),
        ("schedule: VmHWM / VmRSS at the end (MiB)", f"{fmt(s['vmhwm_mib'], 1)} / {fmt(s['vmrss_mib_end'], 1)}",
         "< 200" if s["vmhwm_mib"] < 200 else "MISSED"),
        ("schedule: threads, most sampled", s["threads_max_sampled"], ""),
        ("schedule: all /status pages (s)", fmt(s["status_all_pages_s"]), ""),
        ("burst: checks started in any 1 s, sliding / calendar", f"{i['busiest_second_sliding']} / {i['busiest_second_calendar']}",
         f"≤ {RATE}" if i["busiest_second_sliding"] <= RATE else "MISSED"),
        ("burst: requests to Apple's CDN / to Google started in any 1 s, sliding",
         f"{i['cdn_busiest_second_sliding']} / {i['google_busiest_second_sliding']}",
         f"≤ {RATE}" if max(i["cdn_busiest_second_sliding"], i["google_busiest_second_sliding"]) <= RATE else "MISSED"),
        ("burst: pass of every domain (s); starts a second", f"{fmt(i['pass_s'], 1)}; {fmt(i['achieved_rate'])}", ""),
        ("burst: VmHWM / VmRSS at the end (MiB)", f"{fmt(i['vmhwm_mib'], 1)} / {fmt(i['vmrss_mib_end'], 1)}",
         "< 200" if i["vmhwm_mib"] < 200 else "MISSED"),
        (f"idle: CPU over {fmt(i['idle_seconds'], 0)} s, stat / schedstat (% of a core)",
         f"{fmt(i['idle_cpu_percent_stat'], 3)} / {fmt(i['idle_cpu_percent_schedstat'], 3)}", "< 1 %" if idle < 1 else "MISSED"),
        ("idle: requests to the fakes meanwhile", i["requests_during_idle"], ""),
        ("idle: threads", i["threads_end"], ""),
        ("SIGTERM to exit, schedule / idle (s)", f"{fmt(s['sigterm_to_exit_s'])} / {fmt(i['sigterm_to_exit_s'])}", ""),
    ]
    if trust:
        rows.append((f"trust: CPU per check of --once over {trust['domains']} domains, --cacert / system store (ms)",
                     f"{' '.join(fmt(v, 1) for v in trust['cacert_ms_per_check'])} / {' '.join(fmt(v, 1) for v in trust['system_store_ms_per_check'])}", ""))
    lines = ["| figure | measured | target |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "fakes":
        fakes_main(sys.argv[2])
        return
    if not os.path.exists(AASA):
        raise SystemExit(f"no {AASA}: build with swift build -c release")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    work = tempfile.mkdtemp(prefix="aasa-bench-monitor-")
    try:
        ca = certificates(work)
        fakes = start([sys.executable, os.path.abspath(__file__), "fakes", work], stdout=subprocess.PIPE, text=True)
        ports = json.loads(fakes.stdout.readline())
        text = domains_text(ports)
        domains_file = os.path.join(work, "domains.txt")
        with open(domains_file, "w") as f:
            f.write(text)
        load = os.getloadavg()[0]
        schedule = phase_schedule(work, ca, ports, domains_file)
        print(json.dumps(schedule), file=sys.stderr, flush=True)
        idle = phase_idle(work, ca, ports, text)
        print(json.dumps(idle), file=sys.stderr, flush=True)
        trust = phase_trust(work, ca, ports)
        print(json.dumps(trust), file=sys.stderr, flush=True)
        stop(fakes)
    finally:
        stop_all()
    text = table(schedule, idle, trust)
    print(text)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc)
    out = {"date": now.isoformat(timespec="seconds"), "commit": commit, "cores": os.cpu_count(), "load_average_before": load,
           "domains": DOMAINS, "rate": RATE, "interval": INTERVAL, "timeout": TIMEOUT, "schedule": schedule, "idle": idle, "trust": trust,
           "table": text}
    path = os.path.join(ROOT, "bench", "results", os.environ.get("BENCH_MONITOR_RESULT", f"monitor-{now.date().isoformat()}.json"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    if os.environ.get("BENCH_MONITOR_KEEP") == "1":
        print(f"\nwritten to {os.path.relpath(path, ROOT)}; the run's files in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
        print(f"\nwritten to {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
