#!/usr/bin/env python3
"""make bench-api: the write API of the admin listener, timed against a real release `aasa serve`.

For each size N (--sites, default 10000 100000; the data set of bench/sites.py, kept in
$BENCH_SITES_CACHE) it starts `aasa serve` with --admin-token-file on free loopback ports and
measures:

  put     PUTs of new sites, one at a time: the PUT's own latency, and the time from sending
          it to the first 200 GET of the new content on the HTTP listener of the same replica
          (which should serve it before the PUT is answered); p50 and p99
  replica a second `aasa serve` on the same --config and --certs (other ports): the time from
          the first replica's answer to the second's first 200 with the new content, polled
          with a tight bounded loop; p50 and p99
  load    a paced writer (several keep-alive connections, --rate writes per second for
          --seconds) while a paced reader in a process of its own GETs served files: the
          achieved write rate, write p50/p99, and read p50/p99, with a reader alone before
          for comparison
  fsync   the same sequence the folder store makes (mkdir, fsync of the parent, a temporary
          file written and fsynced, renamed, fsync of the folder), bare, from Python, on the
          same filesystem: the floor under a PUT

The sizes alternate over --rounds rounds (default 3); each figure is the median of the rounds
with the lowest and highest. Prints a table and writes bench/results/api-DATE.json (--output
for another file). Every server is started here, recorded
by its PID and stopped by that PID (bench/run.py's helpers), on an error and on a signal too.
Every loop is bounded in count and in time. Sites written here are named api-K.bench.test and
removed from the data set afterwards, so bench/sites.py finds it as it left it.
"""
import argparse, datetime, json, math, multiprocessing, os, random, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import free_port, on_signal, start, stop, stop_all, cpu_seconds  # noqa: E402
import sites  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AASA = os.environ.get("AASA_BIN", os.path.join(ROOT, ".build", "release", "aasa"))
PATH = "/.well-known/apple-app-site-association"
FILE = "apple-app-site-association"
TOKEN = "bench-" + os.urandom(12).hex()
API_PREFIX = "api-"


def api_host(k):
    return f"{API_PREFIX}{k}.bench.test"


def percentile(values, p):
    """Nearest-rank percentile of a non-empty list."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))]


def p50_p99(seconds):
    return {"p50_ms": percentile(seconds, 50) * 1000, "p99_ms": percentile(seconds, 99) * 1000,
            "max_ms": max(seconds) * 1000, "count": len(seconds)}


class KeepAlive:
    """One HTTP/1.1 keep-alive connection over a raw socket (lighter than http.client: the
    client shares the two cores with the server): request(...) ->
    (status, body). Reconnects when the server closes it; every read has a timeout; the
    answers read are the server's own (Content-Length framed, or none)."""

    def __init__(self, port, timeout=10):
        self.port, self.timeout, self.sock = port, timeout, None

    def _read_answer(self):
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionResetError("closed before an answer")
            buf += chunk
            if len(buf) > 1 << 20:
                raise ConnectionResetError("answer head too large")
        head, body = buf.split(b"\r\n\r\n", 1)
        status = int(head[9:12])
        m = re.search(rb"\r\ncontent-length:\s*(\d+)", head, re.I)
        length = int(m.group(1)) if m else 0
        while len(body) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionResetError("closed in a body")
            body += chunk
        if re.search(rb"\r\nconnection:\s*close", head, re.I):
            self.close()
        return status, body[:length]

    def request(self, method, path, host="localhost", body=b"", headers=""):
        message = (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n{headers}"
                   + (f"Content-Length: {len(body)}\r\n" if method in ("PUT", "POST") else "") + "\r\n").encode() + body
        for attempt in range(2):
            if self.sock is None:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                self.sock.sendall(message)
                return self._read_answer()
            except (ConnectionResetError, BrokenPipeError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def put(conn, host, content):
    return conn.request("PUT", f"/sites/{host}/{FILE}", body=content.encode(),
                        headers=f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n")


class Replica:
    """One `aasa serve` on the data set's folders, on free loopback ports."""

    def __init__(self, root, work, name, api):
        self.https, self.http, self.admin = free_port(), free_port(), free_port()
        self.log_path = os.path.join(work, f"{name}.log")
        self.log = open(self.log_path, "w")
        argv = [AASA, "serve", "--config", os.path.join(root, "config"), "--certs", os.path.join(root, "certs"),
                "--https", f"127.0.0.1:{self.https}", "--http", f"127.0.0.1:{self.http}", "--admin", f"127.0.0.1:{self.admin}",
                "--workers", "2", "--cdn-watch", "off", "--max-connections-per-client", "0"]
        if api:
            tokens = os.path.join(work, "tokens")
            with open(tokens, "w") as f:
                f.write(f"bench:{TOKEN}\n")
            argv += ["--admin-token-file", tokens]
        started = time.monotonic()
        self.proc = start(argv, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = started + 600
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"aasa exited ({self.proc.returncode}): see {self.log_path}")
            try:
                with socket.create_connection(("127.0.0.1", self.admin), timeout=1) as s:
                    s.sendall(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                    if s.recv(12).startswith(b"HTTP/1.1 200"):
                        break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            raise SystemExit(f"aasa not ready after 600 s: see {self.log_path}")
        self.ready_s = time.monotonic() - started

    def reload_times_ms(self):
        """The server's own `reloaded: ... in N ms` figures, in order."""
        with open(self.log_path) as f:
            return [int(m) for m in re.findall(r"reloaded: .* in (\d+) ms", f.read())]

    def stop(self):
        stop(self.proc)
        self.log.close()


def wait_served(conn, host, content, deadline_s=5.0, max_polls=5_000_000):
    """GETs until a 200 with exactly `content`, or the bound: (ok, polls)."""
    want = content.encode()
    end = time.perf_counter() + deadline_s
    for polls in range(1, max_polls + 1):
        status, body = conn.request("GET", PATH, host=host)
        if status == 200 and body == want:
            return True, polls
        if time.perf_counter() > end:
            return False, polls
    return False, max_polls


def cpu_since_ns(pid, before):
    """CPU time the process's threads spent since `before` (thread_times), at nanosecond
    resolution where /proc/PID/stat counts 10 ms ticks. Threads that ended meanwhile (the
    start-up's loaders) are left out, not subtracted."""
    return sum(run - before.get(tid, (0, 0))[0] for tid, (run, _) in thread_times(pid).items())


def measure_puts(replica, count, first_key):
    """PUT of a new site, then GET on the same replica until it serves it."""
    admin, http = KeepAlive(replica.admin), KeepAlive(replica.http)
    put_times, served_times, first_get_ok, failures = [], [], 0, []
    reloads_before = len(replica.reload_times_ms())
    cpu_before = thread_times(replica.proc.pid)
    try:
        for i in range(count):
            host = api_host(first_key + i)
            content = sites.body(first_key + i, f"put{i}-{time.time_ns()}")
            t0 = time.perf_counter()
            status, answer = put(admin, host, content)
            t1 = time.perf_counter()
            if status != 201:
                failures.append(f"{host}: PUT {status} {answer[:200]!r}")
                continue
            ok, polls = wait_served(http, host, content)
            t2 = time.perf_counter()
            put_times.append(t1 - t0)
            # A write never seen within the bound counts with the time waited, a lower bound:
            # leaving it out would flatter the tail.
            served_times.append(t2 - t0)
            if not ok:
                failures.append(f"{host}: not served after {polls} GETs in {t2 - t0:.1f} s")
                continue
            first_get_ok += polls == 1
    finally:
        admin.close()
        http.close()
    cpu = cpu_since_ns(replica.proc.pid, cpu_before) / 1e9
    reloads = replica.reload_times_ms()[reloads_before:]
    return {"put": p50_p99(put_times), "put_to_served": p50_p99(served_times), "first_get_served": f"{first_get_ok}/{len(served_times)}",
            "server_cpu_ms_per_put": cpu * 1000 / max(1, count), "server_reload_ms": p50_p99([r / 1000 for r in reloads]) if reloads else None,
            "failures": failures[:10], "failed": len(failures)}


def measure_replica(first, second, count, first_key):
    """PUT through the first replica; poll the second until it serves the new content."""
    admin, http = KeepAlive(first.admin), KeepAlive(second.http)
    times, polls_total, failures = [], 0, []
    try:
        for i in range(count):
            host = api_host(first_key + i)
            content = sites.body(first_key + i, f"replica{i}-{time.time_ns()}")
            status, answer = put(admin, host, content)
            t_answer = time.perf_counter()
            if status != 201:
                failures.append(f"{host}: PUT {status} {answer[:200]!r}")
                continue
            ok, polls = wait_served(http, host, content)
            waited = time.perf_counter() - t_answer
            times.append(waited)  # not seen within the bound: the time waited, a lower bound
            polls_total += polls
            if not ok:
                failures.append(f"{host}: second replica not serving after {polls} GETs in {waited:.1f} s")
    finally:
        admin.close()
        http.close()
    with open(second.log_path) as f:
        # Past fs.inotify.max_user_watches (per user, shared by both replicas here) a folder
        # goes unwatched and is found by a slower scan of stamps (docs/serving.md).
        inotify_limit = "per-user limit on inotify watches" in f.read()
    return {"answer_to_second_served": p50_p99(times) if times else None, "polls_per_put": polls_total / max(1, len(times)),
            "over_bound": len(failures), "inotify_limit_reached": inotify_limit,
            "failures": failures[:10], "failed": len(failures)}


def reader(port, hosts, rate, seconds, out):
    """A process of its own (no lock shared with the writers): GETs at `rate` per second, paced,
    over one keep-alive connection; each latency from the request's own start."""
    # Forked: the parent's handlers would stop the parent's servers from here.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    conn = KeepAlive(port)
    rng = random.Random(7)
    times, errors = [], 0
    start_at = time.perf_counter()
    total = int(rate * seconds)
    for k in range(total):
        due = start_at + k / rate
        now = time.perf_counter()
        if due > now:
            time.sleep(due - now)
        if time.perf_counter() - start_at > seconds + 5:
            break
        t0 = time.perf_counter()
        try:
            status, _ = conn.request("GET", PATH, host=rng.choice(hosts))
        except OSError:
            status = 0
        times.append(time.perf_counter() - t0)
        errors += status != 200
    conn.close()
    out.put({"reads": len(times), "errors": errors, "elapsed_s": time.perf_counter() - start_at, **p50_p99(times)})


def run_reader(port, hosts, rate, seconds):
    queue = multiprocessing.Queue()
    proc = multiprocessing.Process(target=reader, args=(port, hosts, rate, seconds, queue), daemon=True)
    proc.start()
    return proc, queue


def collect(proc, queue, seconds):
    try:
        result = queue.get(timeout=seconds + 30)
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
    return result


def thread_times(pid):
    """Per thread: (CPU ns, ns waiting on a run queue for a core), from schedstat."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run, wait, _ = f.read().split()
            out[tid] = (int(run), int(wait))
        except (FileNotFoundError, ValueError):
            pass
    return out


def measure_load(replica, n, rate, seconds, connections, pool, read_rate):
    """Writes paced at `rate` per second over `connections` keep-alive connections to the admin
    listener, each to one of `pool` API sites (a create the first time, then a replacement),
    while a reader in its own process GETs the data set's sites at `read_rate` per second."""
    hosts = [sites.host(i) for i in random.Random(3).sample(range(n), min(n, 2000))]
    proc, queue = run_reader(replica.http, hosts, read_rate, 5)
    alone = collect(proc, queue, 5)

    total = int(rate * seconds)
    lock = threading.Lock()
    next_slot = [0]
    results = []  # (sent - due, latency, done - due, status, done - start)
    start_at = time.perf_counter() + 0.5

    def writer():
        conn = KeepAlive(replica.admin)
        try:
            while True:
                with lock:
                    k = next_slot[0]
                    next_slot[0] += 1
                if k >= total:
                    return
                due = start_at + k / rate
                now = time.perf_counter()
                if due > now:
                    time.sleep(due - now)
                if time.perf_counter() - start_at > seconds + 10:
                    return
                sent = time.perf_counter()
                try:
                    status, _ = put(conn, api_host(k % pool), sites.body(k % pool, f"load{k}"))
                except OSError:
                    status = 0
                done = time.perf_counter()
                with lock:
                    results.append((sent - due, done - sent, done - due, status, done - start_at))
        finally:
            conn.close()

    reads_proc, reads_queue = run_reader(replica.http, hosts, read_rate, seconds + 0.5)
    cpu_before = cpu_seconds([replica.proc.pid])
    threads_before = thread_times(replica.proc.pid)
    own_before = os.times()
    threads = [threading.Thread(target=writer) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 30)
    elapsed = max(time.perf_counter() - start_at, 1e-9)
    cpu = cpu_seconds([replica.proc.pid]) - cpu_before
    threads_after = thread_times(replica.proc.pid)
    # The admin listener's loop is the thread that worked most during the writes: its time
    # split into running, waiting for a core, and the rest (blocked in fsync and other I/O,
    # or idle when no write was waiting).
    deltas = [(a[0] - threads_before.get(t, (0, 0))[0], a[1] - threads_before.get(t, (0, 0))[1]) for t, a in threads_after.items()]
    busiest = max(deltas, default=(0, 0))
    own = os.times()
    writers_cpu = (own.user - own_before.user) + (own.system - own_before.system)
    during = collect(reads_proc, reads_queue, seconds + 0.5)
    ok = [r for r in results if r[3] in (200, 201)]
    # Writes answered over the time from the first slot to the last answer (at least the
    # schedule's length): a writer that falls behind stretches it.
    last_done = max((r[4] for r in ok), default=0.0)
    return {
        "target_rate": rate, "seconds": seconds, "connections": connections, "sent": len(results), "ok": len(ok),
        "achieved_rate": len(ok) / max(last_done, seconds), "writes_span_s": last_done,
        "write": p50_p99([r[1] for r in ok]) if ok else None,
        # From the time the write was due, so a writer held up by a slow answer still counts the wait.
        "write_from_schedule": p50_p99([r[2] for r in ok]) if ok else None,
        "admin_thread": {"cpu_s": busiest[0] / 1e9, "run_queue_wait_s": busiest[1] / 1e9,
                         "rest_s": max(0.0, last_done - busiest[0] / 1e9 - busiest[1] / 1e9), "span_s": last_done},
        "server_cpu_share": cpu / elapsed, "writers_cpu_share": writers_cpu / elapsed,
        "load_average_after": os.getloadavg()[0], "late_sends": sum(1 for r in ok if r[0] > 0.005),
        "reads_alone": alone, "reads_during_writes": during,
    }


def bare_fsync(directory, count):
    """What the folder store does for a new site, from Python on the same filesystem: mkdir and
    fsync of the parent, a temporary file written, fsynced, renamed, and the folder fsynced."""
    parent = os.path.join(directory, "fsync-probe")
    shutil.rmtree(parent, ignore_errors=True)
    os.makedirs(parent)
    data = sites.body(1, "probe").encode()
    whole, file_only = [], []
    try:
        for i in range(count):
            t0 = time.perf_counter()
            folder = os.path.join(parent, f"site{i}")
            os.mkdir(folder)
            fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(fd)
            os.close(fd)
            t1 = time.perf_counter()
            tmp = os.path.join(folder, ".file.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, data)
            os.fsync(fd)
            os.close(fd)
            os.rename(tmp, os.path.join(folder, FILE))
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(fd)
            os.close(fd)
            t2 = time.perf_counter()
            whole.append(t2 - t0)
            file_only.append(t2 - t1)
        # Back to back, as one writer at a time does it: replacements of 20 files in turn,
        # for at most 2 000 writes or 10 s. How many a second this disk takes one at a time.
        sustained = []
        started = time.perf_counter()
        for i in range(2000):
            if time.perf_counter() - started > 10:
                break
            folder = os.path.join(parent, f"site{i % 20}")
            t0 = time.perf_counter()
            tmp = os.path.join(folder, ".file.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, data)
            os.fsync(fd)
            os.close(fd)
            os.rename(tmp, os.path.join(folder, FILE))
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(fd)
            os.close(fd)
            sustained.append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    return {"new_site": p50_p99(whole), "replace_file": p50_p99(file_only),
            "replace_back_to_back": {**p50_p99(sustained), "per_second": len(sustained) / sum(sustained)}}


def remove_api_sites(config):
    """The sites this script wrote, gone from the data set (only names it makes)."""
    removed = 0
    with os.scandir(config) as entries:
        for e in entries:
            if e.name.startswith(API_PREFIX) and e.name.endswith(".bench.test"):
                shutil.rmtree(e.path, ignore_errors=True)
                removed += 1
    return removed


def measure(n, args):
    root = sites.generate(n)
    config = os.path.join(root, "config")
    remove_api_sites(config)
    work = tempfile.mkdtemp(prefix="aasa-bench-api-")
    row = {"sites": n, "load_average_before": os.getloadavg()[0]}
    try:
        row["fsync"] = bare_fsync(root, args.puts)
        first = Replica(root, work, "first", api=True)
        row["ready_s"] = first.ready_s
        try:
            # A few writes first: the first ones pay for code and pages not touched yet.
            measure_puts(first, 5, 900_000)
            row["puts"] = measure_puts(first, args.puts, 0)
            print(f"{n}: PUT {json.dumps(row['puts'])}", file=sys.stderr, flush=True)
            if args.replica_puts:
                second = Replica(root, work, "second", api=False)
                try:
                    row["replica"] = measure_replica(first, second, args.replica_puts, 100_000)
                finally:
                    second.stop()
                print(f"{n}: replica {json.dumps(row['replica'])}", file=sys.stderr, flush=True)
            if args.seconds > 0:
                row["load"] = measure_load(first, n, args.rate, args.seconds, args.connections, args.pool, args.read_rate)
                print(f"{n}: load {json.dumps(row['load'])}", file=sys.stderr, flush=True)
        finally:
            first.stop()
    finally:
        remove_api_sites(config)
        shutil.rmtree(work, ignore_errors=True)
    return row


def fmt(v, digits=1):
    if v is None:
        return "—"
    if isinstance(v, int):
        return str(v)
    return f"{v:.{digits + 1}f}" if abs(v) < 1 else f"{v:.{digits}f}"


def _dig(row, keys):
    v = row
    for k in keys:
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    return v


def table(sizes):
    """`sizes`: for each size, its rows (one per round). A cell is the median of the rounds
    and, with more than one, (min–max); the last column is the ratio of the medians."""
    lines = []
    head = ["figure"] + [f"{rows[0]['sites']:,} sites" for rows in sizes]
    if len(sizes) >= 2:
        head.append(f"{sizes[-1][0]['sites']:,} / {sizes[0][0]['sites']:,}")

    def values(rows, pick):
        return [v for v in (pick(r) for r in rows) if v is not None]

    def line(label, pick, ratio=True):
        cells, medians = [label], []
        for rows in sizes:
            vs = values(rows, pick)
            m = statistics.median(vs) if vs else None
            medians.append(m)
            cells.append(fmt(m) + (f" ({fmt(min(vs))}–{fmt(max(vs))})" if len(vs) > 1 else ""))
        if len(sizes) >= 2:
            a, b = medians[0], medians[-1]
            cells.append(f"{b / a:.2f}" if ratio and a and b is not None else "")
        lines.append("| " + " | ".join(cells) + " |")

    def text_line(label, cell):
        lines.append("| " + " | ".join([label] + [cell(rows) for rows in sizes] + ([""] if len(sizes) >= 2 else [])) + " |")

    def total(rows, *keys):
        return sum(_dig(r, keys) or 0 for r in rows)

    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    g = lambda *keys: (lambda r: _dig(r, keys))
    line("machine load average (1 min) before", g("load_average_before"), ratio=False)
    line("ready (s)", g("ready_s"))
    line("PUT answered, p50 (ms)", g("puts", "put", "p50_ms"))
    line("PUT answered, p99 (ms)", g("puts", "put", "p99_ms"))
    line("PUT sent to first 200 GET of it, p50 (ms)", g("puts", "put_to_served", "p50_ms"))
    line("PUT sent to first 200 GET of it, p99 (ms)", g("puts", "put_to_served", "p99_ms"))

    def first_get(rows):
        ok = sum(int(str(_dig(r, ("puts", "first_get_served")) or "0/0").split("/")[0]) for r in rows)
        return f"{ok} of {total(rows, 'puts', 'put', 'count')}"
    text_line("served by the first GET after the PUT's answer", first_get)
    line("server: its reload for the new site, p99 (ms, whole ms in its log)", g("puts", "server_reload_ms", "p99_ms"))
    line("server CPU per PUT (ms)", g("puts", "server_cpu_ms_per_put"))
    line("bare mkdir+fsync, write+fsync+rename+fsync, p50 (ms)", g("fsync", "new_site", "p50_ms"))
    line("bare mkdir+fsync, write+fsync+rename+fsync, p99 (ms)", g("fsync", "new_site", "p99_ms"))
    line("bare write+fsync+rename+fsync back to back, p99 (ms)", g("fsync", "replace_back_to_back", "p99_ms"))
    line("bare write+fsync+rename+fsync back to back (per s)", g("fsync", "replace_back_to_back", "per_second"), ratio=False)
    line("second replica: PUT answer to its first 200, p50 (ms)", g("replica", "answer_to_second_served", "p50_ms"))
    line("second replica: PUT answer to its first 200, p99 (ms)", g("replica", "answer_to_second_served", "p99_ms"))
    text_line("second replica: not seen within 5 s",
              lambda rows: f"{total(rows, 'replica', 'over_bound')} of {total(rows, 'replica', 'answer_to_second_served', 'count')}")
    text_line("second replica: inotify watch limit reached",
              lambda rows: "yes" if any(_dig(r, ("replica", "inotify_limit_reached")) for r in rows) else "no")
    line("paced writes: achieved (writes/s)", g("load", "achieved_rate"))
    line("paced writes: PUT p50 (ms)", g("load", "write", "p50_ms"))
    line("paced writes: PUT p99 (ms)", g("load", "write", "p99_ms"))
    line("paced writes: from due time, p99 (ms)", g("load", "write_from_schedule", "p99_ms"))
    line("paced writes: server CPU (cores)", g("load", "server_cpu_share"), ratio=False)
    per_write = lambda key: (lambda r: _dig(r, ("load", "admin_thread", key)) * 1000 / r["load"]["ok"] if _dig(r, ("load", "ok")) else None)
    line("paced writes: admin thread per write, running (ms)", per_write("cpu_s"))
    line("paced writes: admin thread per write, waiting for a core (ms)", per_write("run_queue_wait_s"))
    line("paced writes: admin thread per write, blocked or idle (ms)", per_write("rest_s"))
    line("paced writes: the writers' own CPU (cores)", g("load", "writers_cpu_share"), ratio=False)
    line("reads alone: GET p50 (ms)", g("load", "reads_alone", "p50_ms"))
    line("reads alone: GET p99 (ms)", g("load", "reads_alone", "p99_ms"))
    line("reads during writes: GET p50 (ms)", g("load", "reads_during_writes", "p50_ms"))
    line("reads during writes: GET p99 (ms)", g("load", "reads_during_writes", "p99_ms"))
    text_line("reads during writes: errors", lambda rows: str(total(rows, "load", "reads_during_writes", "errors")))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sites", type=int, nargs="+", default=[10000, 100000], help="data set sizes (default 10000 100000)")
    parser.add_argument("--puts", type=int, default=200, help="PUTs of new sites per size (default 200)")
    parser.add_argument("--replica-puts", type=int, default=200, help="PUTs watched on a second replica (default 200; 0: none)")
    parser.add_argument("--rate", type=float, default=500, help="paced writes per second (default 500)")
    parser.add_argument("--seconds", type=float, default=10, help="length of the paced writes (default 10; 0: none)")
    parser.add_argument("--connections", type=int, default=4, help="writer connections (default 4)")
    parser.add_argument("--pool", type=int, default=500, help="API sites the paced writes cycle over (default 500)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, the sizes alternated in each (default 3)")
    parser.add_argument("--output", help="results file (default bench/results/api-DATE.json)")
    parser.add_argument("--read-rate", type=float, default=1000, help="paced GETs per second of the reader (default 1000)")
    args = parser.parse_args()
    if not os.path.exists(AASA):
        raise SystemExit(f"no {AASA}: build with swift build -c release")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    # 10k, 100k, 10k, 100k, ...: drift on a shared machine hits every size.
    sizes = {n: [] for n in args.sites}
    try:
        for r in range(args.rounds):
            for n in args.sites:
                print(f"round {r + 1} of {args.rounds}, {n} sites", file=sys.stderr, flush=True)
                sizes[n].append(measure(n, args))
    finally:
        stop_all()
    text = table(list(sizes.values()))
    print(text)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc)
    out = {"date": now.isoformat(timespec="seconds"), "commit": commit, "cores": os.cpu_count(), "args": vars(args),
           "rounds": {str(n): rows for n, rows in sizes.items()}, "table": text}
    path = args.output or os.path.join(ROOT, "bench", "results", f"api-{now.date().isoformat()}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
