#!/usr/bin/env python3
"""make bench-store: aasa replicas on a PostgreSQL store (docs/replicas.md), against a throwaway
PostgreSQL cluster started by this script.

1. Start-up: N sites and N certificates (bench/sites.py's data set, from its cache) loaded into
   aasa_files and aasa_certificates with psql's \\copy from a generated CSV (bytea as hex); the
   time from process start to /readyz 200, the CPU it took, RSS at ready and 3 s later and the
   time SIGTERM takes to end it, for a replica on the same data in folders, one on the store
   with its local copy under /tmp, and one with the copy on tmpfs (/dev/shm), alternated
   (F S T F S T ...). The server's own log splits the store's start: the rows read and written
   into the local copy, then the snapshot built from that copy.
2. A write through the API of replica A (PUT on its admin listener) until replica B serves it
   over HTTP: p50/p99 over BENCH_STORE_API_WRITES writes.
3. BENCH_STORE_SQL_RATE rows a second written into aasa_files by SQL (100 rows a transaction,
   one transaction every 100 ms, for BENCH_STORE_SQL_SECONDS) with two replicas: the lag from
   each commit until each replica serves a sampled row, and, 1 s after each commit, whether
   every replica serves every row of that transaction.
4. Catch-up: replica C talks to PostgreSQL through a TCP relay this script starts; the relay is
   killed, BENCH_STORE_CATCHUP_CHANGES changes (updates, a tenth deletes) are made over
   BENCH_STORE_CATCHUP_SECONDS, the relay is started again, and the time until C serves exactly
   what the store holds is measured from the relay's restart and from C's reconnection (the
   relay's first accepted connection after the restart).

Prints a table; writes bench/results/store-DATE.json. Every process (the postmaster, the
replicas, the relay, psql) is started by this script, recorded by its PID and stopped by that
PID, also on an error or SIGINT/SIGTERM. Every loop is bounded in count and in time.
"""
import csv, datetime, http.client, json, os, random, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no bench/__pycache__ in the work tree
import sites  # noqa: E402  (the data set: generate, host, body; /proc readings)

ROOT = os.path.dirname(HERE)
AASA = os.environ.get("AASA_BIN", os.path.join(ROOT, ".build", "release", "aasa"))
COUNTS = [int(n) for n in os.environ.get("BENCH_STORE_COUNTS", "10000 100000").split()]
ROUNDS = int(os.environ.get("BENCH_STORE_ROUNDS", "2"))
API_WRITES = int(os.environ.get("BENCH_STORE_API_WRITES", "200"))
SQL_RATE = int(os.environ.get("BENCH_STORE_SQL_RATE", "1000"))
SQL_SECONDS = float(os.environ.get("BENCH_STORE_SQL_SECONDS", "10"))
CATCHUP_CHANGES = int(os.environ.get("BENCH_STORE_CATCHUP_CHANGES", "10000"))
CATCHUP_SECONDS = float(os.environ.get("BENCH_STORE_CATCHUP_SECONDS", "60"))
# Where the replicas of 2-4 keep their local copy ($TMPDIR); default a folder under /tmp.
# BENCH_STORE_RESULT: the results file under bench/results (default store-DATE.json).
COPY_BASE = os.environ.get("BENCH_STORE_TMPDIR")
# Start-up is also measured with the copy on tmpfs, when there is one.
TMPFS = "/dev/shm" if os.path.isdir("/dev/shm") else None
PG_BIN = os.environ.get("PG_BIN") or next((os.path.join("/usr/lib/postgresql", v, "bin")
                                          for v in sorted(os.listdir("/usr/lib/postgresql"), reverse=True)), None) \
    if os.path.isdir("/usr/lib/postgresql") else None
PATH = sites.PATH
FILE = "apple-app-site-association"
ROWS_PER_TRANSACTION = 100
STARTED = []
LOAD_INFO = {}


# MARK: - processes

def start(argv, **kw):
    proc = subprocess.Popen(argv, **kw)
    STARTED.append(proc)
    return proc


def stop(proc, sig=signal.SIGTERM, timeout=20):
    """Our process only, by its PID: `sig`, then SIGKILL after `timeout`."""
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def stop_all():
    for proc in reversed(STARTED):
        stop(proc, timeout=10)


def on_signal(signum, _frame):
    stop_all()
    sys.exit(128 + signum)


def free_port():
    for _ in range(1000):
        port = random.randint(20000, 29999)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                pass
    raise RuntimeError("no free port")


# MARK: - PostgreSQL

class Cluster:
    """initdb as the postgres user (PostgreSQL refuses root) into a folder of its own, trust
    authentication, a free loopback port, fsync off; the postmaster is setpriv's PID (it execs)."""

    def __init__(self):
        if not PG_BIN:
            raise SystemExit("PostgreSQL is not installed (apt-get install postgresql)")
        self.dir = tempfile.mkdtemp(prefix="aasa-bench-pg-")
        shutil.chown(self.dir, "postgres", "postgres")
        data = os.path.join(self.dir, "data")
        subprocess.run(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", os.path.join(PG_BIN, "initdb"),
                        "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"], check=True, capture_output=True, timeout=120)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "postgres.log"), "w")
        self.proc = start(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", os.path.join(PG_BIN, "postgres"),
                           "-D", data, "-p", str(self.port), "-c", "listen_addresses=127.0.0.1",
                           "-c", f"unix_socket_directories={self.dir}", "-c", "fsync=off", "-c", "synchronous_commit=off",
                           "-c", "full_page_writes=off", "-c", "max_connections=50"],
                          stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.psql("SELECT 1", check=False).returncode == 0:
                return
            time.sleep(0.1)
        raise SystemExit(f"PostgreSQL did not start: see {self.log.name}")

    @property
    def url(self):
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def psql_argv(self):
        return ["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", "postgres"]

    def psql(self, sql=None, file=None, check=True, timeout=900):
        argv = self.psql_argv() + (["-c", sql] if sql is not None else ["-f", file])
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"psql: {r.stderr.strip()}")
        return r

    def stop(self):
        stop(self.proc, sig=signal.SIGINT)  # fast shutdown
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class SQLWriter:
    """One psql session fed on its stdin; after each transaction it prints the database's clock,
    read by a thread: the commit times, by batch number."""

    def __init__(self, cluster):
        self.proc = start(cluster.psql_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.committed = {}
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            m = re.match(r"committed\|(\d+)\|([\d.]+)", line.strip())
            if m:
                with self.cond:
                    self.committed[int(m.group(1))] = float(m.group(2))
                    self.cond.notify_all()

    def send(self, batch, statements):
        self.proc.stdin.write("BEGIN;\n" + statements + "\nCOMMIT;\n"
                              f"SELECT 'committed', {batch}, extract(epoch from clock_timestamp());\n")
        self.proc.stdin.flush()

    def wait(self, batch, timeout=30):
        deadline = time.time() + timeout
        with self.cond:
            while batch not in self.committed and time.time() < deadline:
                self.cond.wait(0.1)
        return self.committed.get(batch)

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            stop(self.proc)
        err = self.proc.stderr.read()
        if self.proc.returncode not in (0, None) or err.strip():
            print(f"psql writer: exit {self.proc.returncode}: {err.strip()[:500]}", file=sys.stderr)


def hex_bytes(data):
    return "\\x" + data.hex()


def upsert(rows):
    """rows: (host, bytes)."""
    values = ",\n".join(f"('{h}', '{FILE}', '{hex_bytes(b)}'::bytea)" for h, b in rows)
    return ("INSERT INTO aasa_files (host, name, content) VALUES\n" + values +
            "\nON CONFLICT (host, name) DO UPDATE SET content = EXCLUDED.content, updated_at = now();")


def load_store(cluster, n, work):
    """bench/sites.py's n sites and certificates into the tables, by \\copy from CSV files."""
    root = sites.generate(n)
    t0 = time.time()
    files_csv, certs_csv = os.path.join(work, f"files-{n}.csv"), os.path.join(work, f"certs-{n}.csv")
    with open(files_csv, "w", newline="") as f, open(certs_csv, "w", newline="") as c:
        fw, cw = csv.writer(f), csv.writer(c)
        for i in range(n):
            name = sites.host(i)
            with open(os.path.join(root, "config", name, FILE), "rb") as b:
                fw.writerow([name, FILE, hex_bytes(b.read())])
            crt_path, key_path = sites.pair_paths(root, i)
            with open(crt_path) as crt, open(key_path) as key:
                cw.writerow([name, crt.read(), key.read()])
    script = os.path.join(work, "load.sql")
    with open(script, "w") as f:
        f.write("TRUNCATE aasa_files, aasa_certificates, aasa_changes;\n"
                f"\\copy aasa_files (host, name, content) FROM '{files_csv}' WITH (FORMAT csv)\n"
                f"\\copy aasa_certificates (name, chain, key) FROM '{certs_csv}' WITH (FORMAT csv)\n"
                "VACUUM ANALYZE aasa_files; VACUUM ANALYZE aasa_certificates; VACUUM ANALYZE aasa_changes;\n")
    cluster.psql(file=script)
    counts = cluster.psql("SELECT (SELECT count(*) FROM aasa_files), (SELECT count(*) FROM aasa_certificates), "
                          "pg_total_relation_size('aasa_files') + pg_total_relation_size('aasa_certificates')").stdout.strip().split("|")
    os.unlink(files_csv)
    os.unlink(certs_csv)
    # The part of a replica's load that is PostgreSQL's: both tables read, as its first load
    # reads them, with the rows sent to /dev/null (median of 3).
    reads = []
    for _ in range(3):
        t = time.time()
        with open(os.devnull, "w") as null:
            subprocess.run(cluster.psql_argv() + ["-c", "COPY (SELECT host, name, content FROM aasa_files) TO STDOUT",
                                                  "-c", "COPY (SELECT name, chain, key FROM aasa_certificates) TO STDOUT"],
                           stdout=null, check=True, timeout=300)
        reads.append(time.time() - t)
    LOAD_INFO[n] = {"copy_in_s": time.time() - t0, "tables_mib": int(counts[2]) / 1048576, "read_all_rows_ms": statistics.median(reads) * 1000}
    print(f"store: {counts[0]} files and {counts[1]} certificates loaded by \\copy in {time.time() - t0:.1f} s "
          f"({int(counts[2]) / 1048576:.0f} MiB of tables)", file=sys.stderr, flush=True)
    return root


# MARK: - replicas

class Replica:
    def __init__(self, name, work, tokens, store=None, root=None, copy_base=None):
        self.name = name
        self.tmp = tempfile.mkdtemp(prefix=f"aasa-bench-store-{name}-", dir=copy_base or COPY_BASE or work)
        self.log_path = os.path.join(work, f"{name}-{time.time_ns()}.log")
        self.log = open(self.log_path, "w")
        source = ["--store", store] if store else ["--config", os.path.join(root, "config"), "--certs", os.path.join(root, "certs")]
        argv = [AASA, "serve", *source, "--admin-token-file", tokens, "--https", "127.0.0.1:0", "--http", "127.0.0.1:0",
                "--admin", "127.0.0.1:0", "--workers", "2", "--cdn-watch", "off", "--max-connections-per-client", "0"]
        self.started = time.time()
        # TMPDIR: where a store replica keeps its local copy (measured, removed with the work folder).
        self.proc = start(argv, stdout=subprocess.DEVNULL, stderr=self.log, env=dict(os.environ, TMPDIR=self.tmp))
        self.ports = {}

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_ready(self, timeout=600):
        """Seconds from process start to the first /readyz 200 (polled every 10 ms)."""
        deadline = self.started + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"aasa exited ({self.proc.returncode}): see {self.log_path}")
            if "admin" not in self.ports:
                for kind, port in re.findall(r"listening (https|http|admin) \S*:(\d+)", self.text()):
                    self.ports[kind] = int(port)
            if "admin" in self.ports:
                try:
                    if raw_get(self.ports["admin"], "localhost", "/readyz", timeout=2)[0] == 200:
                        return time.time() - self.started
                except OSError:
                    pass
            time.sleep(0.01)
        raise SystemExit(f"not ready after {timeout} s: see {self.log_path}")

    def status_store(self):
        data = raw_get(self.ports["admin"], "localhost", "/status?limit=1", timeout=10)[1]
        return json.loads(data)["summary"].get("store", {})

    def copy_bytes(self):
        total = 0
        for folder, _dirs, names in os.walk(self.tmp):
            for n in names:
                try:
                    total += os.lstat(os.path.join(folder, n)).st_blocks * 512
                except FileNotFoundError:
                    pass
        return total

    def stop(self):
        stop(self.proc)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def raw_get(port, host, path=PATH, timeout=5):
    """(status, body) of one GET on a new connection."""
    data = sites.http_get(port, host, path, timeout)
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head[9:12]), body


class KeepAlive:
    """GETs on one keep-alive HTTP/1.1 connection (made again after an error)."""

    def __init__(self, port):
        self.port = port
        self.conn = None

    def get(self, host):
        for _ in range(3):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                self.conn.request("GET", PATH, headers={"Host": host})
                r = self.conn.getresponse()
                return r.status, r.read()
            except (OSError, http.client.HTTPException):
                if self.conn:
                    self.conn.close()
                self.conn = None
        raise RuntimeError(f"GET {host} on port {self.port} failed three times")


def pipelined(port, hosts, timeout=30):
    """GETs for every host pipelined on one connection (the last one closes it): [(status, body)]."""
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        req = "".join(f"GET {PATH} HTTP/1.1\r\nHost: {h}\r\n{'Connection: close' if i == len(hosts) - 1 else ''}\r\n\r\n"
                      for i, h in enumerate(hosts))
        s.sendall(req.encode())
        buf = bytearray()
        deadline = time.time() + timeout
        while len(out) < len(hosts) and time.time() < deadline:
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                head = bytes(buf[:end])
                m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
                length = int(m.group(1)) if m else 0
                if len(buf) < end + 4 + length:
                    break
                out.append((int(head[9:12]), bytes(buf[end + 4:end + 4 + length])))
                del buf[:end + 4 + length]
            if len(out) == len(hosts):
                break
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
    if len(out) != len(hosts):
        raise RuntimeError(f"pipelined GETs: {len(out)} answers to {len(hosts)} requests")
    return out


def thread_sched(pid):
    """{tid: (CPU ms, runqueue wait ms)} of every thread of the process."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run, wait, _ = f.read().split()
            out[tid] = (int(run) / 1e6, int(wait) / 1e6)
        except (FileNotFoundError, ValueError):
            pass
    return out


def iso_seconds(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(p / 100 * (len(values) - 1)))))]


# MARK: - 1. start-up

STORE_LOADED = re.compile(r"store: loaded (\d+) sites \((\d+) files\) and (\d+) certificates from PostgreSQL in (\d+) ms")
RELOADED = re.compile(r"reloaded: (\d+) sites, (\d+) serving, (\d+) stale, (\d+) rejected .* in (\d+) ms")
FOLDERS_LOADED = re.compile(r"loaded (\d+) sites \((\d+) serving\) from \S+ in (\d+) ms")


def start_once(kind, n, work, tokens, cluster, root):
    r = Replica(kind, work, tokens, store=cluster.url if kind != "folders" else None, root=root,
                copy_base=TMPFS if kind == "store-tmpfs" else None)
    try:
        ready = r.wait_ready()
        row = {"kind": kind, "sites": n, "ready_s": ready, "cpu_s": sites.cpu_seconds(r.proc.pid), "rss_ready_mib": sites.rss_mib(r.proc.pid)}
        time.sleep(3)
        row["rss_3s_mib"] = sites.rss_mib(r.proc.pid)
        text = r.text()
        if kind != "folders":
            m = STORE_LOADED.search(text)
            # The reload logged just before: the snapshot built from the copy (inside the load's time).
            reloads = [x for x in RELOADED.finditer(text) if x.start() < m.start()] if m else []
            row["served"] = int(m.group(1)) if m else 0
            row["load_ms"] = int(m.group(4)) if m else None
            row["build_ms"] = int(reloads[-1].group(5)) if reloads else None
            if row["load_ms"] is not None and row["build_ms"] is not None:
                row["rows_to_copy_ms"] = row["load_ms"] - row["build_ms"]
            row["copy_mib"] = r.copy_bytes() / 1048576
        else:
            m = FOLDERS_LOADED.search(text)
            row["served"] = int(m.group(2)) if m else 0
            row["build_ms"] = int(m.group(3)) if m else None
        # Spot checks: a site over HTTP, and TLS with a site's own certificate.
        for i in random.Random(n).sample(range(n), 3):
            status, body = raw_get(r.ports["http"], sites.host(i))
            _, ok = sites.handshake(r.ports["https"], root, i)
            if status != 200 or not ok:
                raise RuntimeError(f"{kind} replica does not serve {sites.host(i)} ({status}, TLS {ok}): see {r.log_path}")
        # SIGTERM to exit: a store replica removes its copy on the way out (the stop waits
        # 20 s, then SIGKILL).
        t = time.time()
        stop(r.proc)
        row["stop_s"] = time.time() - t
        return row
    finally:
        r.stop()


KINDS = ("folders", "store") + (("store-tmpfs",) if TMPFS else ())


def startup(n, work, tokens, cluster, root):
    rows = []
    for k in range(ROUNDS):
        for kind in KINDS:
            row = start_once(kind, n, work, tokens, cluster, root)
            row["round"] = k
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    out = {}
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        out[kind] = {key: statistics.median(r[key] for r in mine) for key in mine[0]
                     if isinstance(mine[0][key], (int, float)) and key != "round" and all(r.get(key) is not None for r in mine)}
    out["rounds"] = rows
    return out


# MARK: - 2. API write on A, served by B

def api_writes(a, b, token, n):
    rng = random.Random(2)
    latencies, put_ms, a_stale = [], [], 0
    writes = KeepAlive(a.ports["admin"])
    reads_a, reads_b = KeepAlive(a.ports["http"]), KeepAlive(b.ports["http"])
    for k in range(API_WRITES):
        i = rng.randrange(n)
        marker = f"api{k}t{time.time_ns()}"
        body = sites.body(i, marker).encode()
        t0 = time.perf_counter()
        writes.conn = writes.conn or http.client.HTTPConnection("127.0.0.1", writes.port, timeout=10)
        writes.conn.request("PUT", f"/sites/{sites.host(i)}/{FILE}", body=body, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        resp = writes.conn.getresponse()
        resp.read()
        t_put = time.perf_counter()
        if resp.status not in (200, 201):
            raise RuntimeError(f"PUT answered {resp.status}")
        if marker.encode() not in reads_a.get(sites.host(i))[1]:
            a_stale += 1
        seen = None
        for _ in range(20000):
            if marker.encode() in reads_b.get(sites.host(i))[1]:
                seen = time.perf_counter()
                break
            if time.perf_counter() - t0 > 10:
                break
            time.sleep(0.0005)
        if seen is None:
            raise RuntimeError(f"B did not serve write {k} within 10 s")
        latencies.append((seen - t0) * 1000)
        put_ms.append((t_put - t0) * 1000)
        time.sleep(rng.uniform(0.02, 0.05))
    return {"writes": len(latencies), "p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99), "max_ms": max(latencies),
            "put_p50_ms": percentile(put_ms, 50), "put_p99_ms": percentile(put_ms, 99), "a_not_serving_after_put": a_stale}


# MARK: - 3. SQL writes at a rate, two replicas

def sql_writes(cluster, replicas, n, run_id):
    interval = ROWS_PER_TRANSACTION / SQL_RATE
    batches = int(SQL_SECONDS / interval)
    sample_every = 10  # rows of each transaction whose lag is measured
    marker = lambda b: f"sql{run_id}b{b}"  # noqa: E731
    which = lambda b, k: (b * ROWS_PER_TRANSACTION + k) % n  # noqa: E731
    pattern = re.compile(rb"/sql(\d+)b(\d+)/")

    def newer(body, b):
        m = pattern.search(body)
        return bool(m) and int(m.group(1)) == run_id and int(m.group(2)) >= b

    writer = SQLWriter(cluster)
    seen = {r.name: {} for r in replicas}        # (b, k) -> wall time first served
    late = {r.name: 0 for r in replicas}         # rows not served 1 s after their commit
    check_delay = {r.name: [] for r in replicas}  # when the 1 s check ran, after the commit (ms)

    def sampler(r):
        conn = KeepAlive(r.ports["http"])
        pending = set()
        next_batch = 0
        deadline = time.time() + SQL_SECONDS + 30
        while time.time() < deadline:
            while next_batch < batches and next_batch in writer.committed:
                pending |= {(next_batch, k) for k in range(0, ROWS_PER_TRANSACTION, sample_every)}
                next_batch += 1
            if not pending:
                if next_batch >= batches:
                    return
                time.sleep(0.002)
                continue
            for b, k in sorted(pending):
                if newer(conn.get(sites.host(which(b, k)))[1], b):
                    seen[r.name][(b, k)] = time.time()
                    pending.discard((b, k))

    def checker(r):
        for b in range(batches):
            committed = writer.wait(b, timeout=SQL_SECONDS + 30)
            if committed is None:
                late[r.name] += ROWS_PER_TRANSACTION
                continue
            delay = committed + 1.0 - time.time()
            if delay > 0:
                time.sleep(delay)
            check_delay[r.name].append((time.time() - committed) * 1000)
            answers = pipelined(r.ports["http"], [sites.host(which(b, k)) for k in range(ROWS_PER_TRANSACTION)])
            late[r.name] += sum(1 for status, body in answers if status != 200 or not newer(body, b))

    threads = [threading.Thread(target=f, args=(r,), daemon=True) for r in replicas for f in (sampler, checker)]
    sched_before = {r.name: thread_sched(r.proc.pid) for r in replicas}
    log_before = {r.name: len(r.text()) for r in replicas}
    for t in threads:
        t.start()
    t0 = time.time()
    sent = {}
    for b in range(batches):
        delay = t0 + b * interval - time.time()
        if delay > 0:
            time.sleep(delay)
        rows = [(sites.host(which(b, k)), sites.body(which(b, k), marker(b)).encode()) for k in range(ROWS_PER_TRANSACTION)]
        sent[b] = time.time()
        writer.send(b, upsert(rows))
    elapsed = time.time() - t0
    writer.wait(batches - 1)
    for t in threads:
        t.join(SQL_SECONDS + 60)
    sched_after = {r.name: thread_sched(r.proc.pid) for r in replicas}
    writer.close()
    commit_lag_ms = [(writer.committed[b] - sent[b]) * 1000 for b in sent if b in writer.committed]
    out = {"rows": batches * ROWS_PER_TRANSACTION, "transactions": batches, "seconds": elapsed,
           "rows_per_s": batches * ROWS_PER_TRANSACTION / elapsed, "send_to_commit_p50_ms": percentile(commit_lag_ms, 50),
           "sampled_rows": batches * ROWS_PER_TRANSACTION // sample_every, "replicas": {}}
    all_lags = []
    keys = [(b, k) for b in range(batches) for k in range(0, ROWS_PER_TRANSACTION, sample_every) if b in writer.committed]
    for r in replicas:
        lags = [(seen[r.name][key] - writer.committed[key[0]]) * 1000 for key in keys if key in seen[r.name]]
        by_batch = [max(((seen[r.name][(b, k)] - writer.committed[b]) * 1000 for k in range(0, ROWS_PER_TRANSACTION, sample_every)
                         if (b, k) in seen[r.name]), default=None) for b in range(batches) if b in writer.committed]
        # The store's thread: the one that spent the most CPU over the run (schedstat: CPU, and
        # time runnable but waiting for a core); and the snapshot builds it logged meanwhile.
        deltas = {tid: (run - sched_before[r.name].get(tid, (0, 0))[0], wait - sched_before[r.name].get(tid, (0, 0))[1])
                  for tid, (run, wait) in sched_after[r.name].items()}
        busiest = max(deltas.values(), default=(0, 0))
        builds = [int(m.group(5)) for m in RELOADED.finditer(r.text()[log_before[r.name]:])]
        out["replicas"][r.name] = {"served_samples": len(lags), "p50_ms": percentile(lags, 50), "p99_ms": percentile(lags, 99),
                                   "max_ms": max(lags) if lags else None, "rows_late_at_1s_check": late[r.name],
                                   "check_at_p50_ms": percentile(check_delay[r.name], 50), "check_at_max_ms": max(check_delay[r.name], default=None),
                                   "lag_by_transaction_ms": by_batch, "store_thread_cpu_ms": busiest[0], "store_thread_runqueue_wait_ms": busiest[1],
                                   "snapshot_builds": len(builds), "snapshot_build_ms_total": sum(builds)}
    for key in keys:
        if all(key in seen[r.name] for r in replicas):
            all_lags.append((max(seen[r.name][key] for r in replicas) - writer.committed[key[0]]) * 1000)
    out["all_replicas_p50_ms"] = percentile(all_lags, 50)
    out["all_replicas_p99_ms"] = percentile(all_lags, 99)
    out["all_replicas_max_ms"] = max(all_lags) if all_lags else None
    out["all_rows_within_1s"] = all(v == 0 for v in late.values()) and len(all_lags) == len(keys)
    return out


# MARK: - 4. catch-up through a relay

RELAY = r"""
import socket, sys, threading, time
listen = socket.socket(); listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listen.bind(("127.0.0.1", int(sys.argv[1]))); listen.listen(64)
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data: break
            b.sendall(data)
    except OSError: pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
print("ready", flush=True)
while True:
    client, _ = listen.accept()
    print("accept", time.time(), flush=True)
    try: server = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    except OSError:
        client.close(); continue
    for a, b in ((client, server), (server, client)):
        threading.Thread(target=pipe, args=(a, b), daemon=True).start()
"""


class Relay:
    def __init__(self, port, target):
        self.accepts = []
        self.proc = start([sys.executable, "-c", RELAY, str(port), str(target)], stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("relay did not start")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("accept "):
                self.accepts.append(float(line.split()[1]))

    def kill(self):
        stop(self.proc, sig=signal.SIGKILL)


def served_as_expected(status, body, want):
    return status == 404 if want is None else (status == 200 and body == want)


def mismatches(replica, hosts, expected, chunk=500):
    """How many of `hosts` the replica does not serve as `expected` (pipelined GETs)."""
    wrong = 0
    for start_at in range(0, len(hosts), chunk):
        part = hosts[start_at:start_at + chunk]
        for h, (status, body) in zip(part, pipelined(replica.ports["http"], part)):
            wrong += not served_as_expected(status, body, expected[h])
    return wrong


def catch_up(cluster, work, tokens, n, direct):
    port = free_port()
    relay = Relay(port, cluster.port)
    c = Replica("C", work, tokens, store=f"postgres://postgres@127.0.0.1:{port}/postgres")
    try:
        c.wait_ready()
        # What the store holds now, which C serves: the start of the expected state.
        expected = {}
        for line in cluster.psql(f"SELECT host, encode(content, 'hex') FROM aasa_files WHERE name = '{FILE}'").stdout.splitlines():
            host, _, content = line.partition("|")
            expected[host] = bytes.fromhex(content)
        start_wrong = mismatches(c, sorted(expected), expected)
        t_cut = time.time()
        relay.kill()
        disconnected = None
        for _ in range(200):
            if not c.status_store().get("connected", True):
                disconnected = time.time() - t_cut
                break
            time.sleep(0.05)
        # The changes: random sites (some more than once), one in ten a delete, one statement a
        # change, ROWS_PER_TRANSACTION to a transaction, spread over CATCHUP_SECONDS.
        rng = random.Random(4)
        writer = SQLWriter(cluster)
        batches = max(1, CATCHUP_CHANGES // ROWS_PER_TRANSACTION)
        deleted, last = 0, None
        t0 = time.time()
        for b in range(batches):
            delay = t0 + b * CATCHUP_SECONDS / batches - time.time()
            if delay > 0:
                time.sleep(delay)
            statements = []
            for k in range(ROWS_PER_TRANSACTION):
                i = rng.randrange(n)
                last = sites.host(i)
                if rng.random() < 0.1:
                    statements.append(f"DELETE FROM aasa_files WHERE host = '{last}' AND name = '{FILE}';")
                    expected[last] = None
                    deleted += 1
                else:
                    content = sites.body(i, f"cu{b}k{k}").encode()
                    statements.append(upsert([(last, content)]))
                    expected[last] = content
            writer.send(b, "\n".join(statements))
        writer.wait(batches - 1, timeout=120)
        writer.close()
        changes_s = time.time() - t0
        store_count = int(cluster.psql(f"SELECT count(*) FROM aasa_files WHERE name = '{FILE}'").stdout.strip())
        if store_count != sum(v is not None for v in expected.values()):
            raise RuntimeError(f"the store holds {store_count} files, expected {sum(v is not None for v in expected.values())}")
        hosts = sorted(expected)
        # The replica connected all along serves it within a second or so (a sanity check).
        direct_wrong = None
        for _ in range(10):
            direct_wrong = mismatches(direct, hosts, expected) if direct else None
            if not direct_wrong:
                break
            time.sleep(0.5)
        c_wrong_before = mismatches(c, hosts, expected)
        a_deleted = next(h for h in hosts if expected[h] is None)
        relay = Relay(port, cluster.port)
        t_restore = time.time()
        # The last change and a deleted site are watched until served as the store has them,
        # then every site is compared (a catch-up pass publishes once, at its end).
        probe = KeepAlive(c.ports["http"])
        t_sentinel, t_exact, sweeps = None, None, 0
        deadline = t_restore + 75
        while time.time() < deadline:
            if all(served_as_expected(*probe.get(h), expected[h]) for h in (last, a_deleted)):
                t_sentinel = t_sentinel or time.time()
                sweeps += 1
                if mismatches(c, hosts, expected) == 0:
                    t_exact = time.time()
                    break
            time.sleep(0.005)
        t_reconnect = relay.accepts[0] if relay.accepts else None
        time.sleep(0.5)
        status = c.status_store()
        text = c.text()
        reloads = [int(m.group(5)) for m in RELOADED.finditer(text)]
        return {"changes": batches * ROWS_PER_TRANSACTION, "deletes": deleted, "changes_s": changes_s,
                "disconnected_after_s": disconnected, "cut_s": t_restore - t_cut, "sites_compared": len(hosts),
                "wrong_at_start": start_wrong, "wrong_before_restore": c_wrong_before, "direct_replica_wrong": direct_wrong,
                "reconnect_after_restore_s": (t_reconnect - t_restore) if t_reconnect else None,
                "served_after_reconnect_s": (t_sentinel - t_reconnect) if t_sentinel and t_reconnect else None,
                "exact_after_reconnect_s": (t_exact - t_reconnect) if t_exact and t_reconnect else None,
                "exact_after_restore_s": (t_exact - t_restore) if t_exact else None,
                # `since` turns when a reconnection's catch-up pass has been applied.
                "connected_since_after_reconnect_s": (iso_seconds(status["since"]) - t_reconnect) if t_reconnect and status.get("connected") else None,
                "full_sweeps": sweeps, "catch_up_reload_ms": reloads[-1] if reloads else None,
                "failed_connection_attempts_logged": len(re.findall(r"store: .*\(retry in \d+ s\)", text))}
    finally:
        c.stop()
        relay.kill()


# MARK: - main

def fmt(v, digits=0, unit=""):
    if v is None or (isinstance(v, float) and v != v):
        return "n/a"
    return f"{v:.{digits}f}{unit}"


def table(results):
    lines = ["| start-up | folders | store, copy in /tmp | store, copy on tmpfs | store (/tmp) / folders | target |", "|---|---|---|---|---|---|"]
    for n, s in results["startup"].items():
        f, st, sm = s["folders"], s["store"], s.get("store-tmpfs", {})
        label = f"{int(n):,}".replace(",", " ") + " sites"

        def row(name, key, digits=0, target=""):
            ratio = st[key] / f[key] if f.get(key) and st.get(key) is not None else None
            lines.append(f"| {label}: {name} | {fmt(f.get(key), digits)} | {fmt(st.get(key), digits)} | {fmt(sm.get(key), digits)} | "
                         f"{fmt(ratio, 2)} | {target} |")
        row("ready (s)", "ready_s", 2, "≤ 5 s at 100 000")
        row("CPU to ready (s)", "cpu_s", 2)
        row("RSS at ready (MiB)", "rss_ready_mib", 0, "≤ 1.1 × folders")
        row("RSS 3 s after ready (MiB)", "rss_3s_mib", 0, "≤ 1.1 × folders")
        lines.append(f"| {label}: snapshot built (ms) | {fmt(f.get('build_ms'))} | {fmt(st.get('build_ms'))} | {fmt(sm.get('build_ms'))} | | |")
        lines.append(f"| {label}: rows read and written into the copy (ms) | | {fmt(st.get('rows_to_copy_ms'))} | {fmt(sm.get('rows_to_copy_ms'))} | | |")
        if s.get("data"):
            lines.append(f"| {label}: both tables read by psql, to /dev/null (ms) | | {fmt(s['data']['read_all_rows_ms'])} | | | |")
        lines.append(f"| {label}: the local copy (MiB, disk or tmpfs) | | {fmt(st.get('copy_mib'))} | {fmt(sm.get('copy_mib'))} | | |")
        lines.append(f"| {label}: SIGTERM to exit (s) | {fmt(f.get('stop_s'), 2)} | {fmt(st.get('stop_s'), 2)} | {fmt(sm.get('stop_s'), 2)} | | |")
    lines += ["", "| following the store (10 000 sites) | measured | target |", "|---|---|---|"]
    if "api" in results:
        a = results["api"]
        lines.append(f"| PUT on A's API until B serves it, p50 / p99 / max (ms), {a['writes']} writes | "
                     f"{fmt(a['p50_ms'], 1)} / {fmt(a['p99_ms'], 1)} / {fmt(a['max_ms'], 1)} | ≤ 50 / ≤ 200 |")
        lines.append(f"| … the PUT answered by A, p50 / p99 (ms) | {fmt(a['put_p50_ms'], 1)} / {fmt(a['put_p99_ms'], 1)} | |")
    if "sql" in results:
        q = results["sql"]
        reps = list(q["replicas"].values())
        lines.append(f"| SQL, {q['rows']} rows at {fmt(q['rows_per_s'])} rows/s: commit to served, A / B, p50 (ms) | "
                     + " / ".join(fmt(r["p50_ms"]) for r in reps) + " | |")
        lines.append("| … p99, A / B (ms) | " + " / ".join(fmt(r["p99_ms"]) for r in reps) + " | |")
        lines.append(f"| … served by both, p50 / p99 / max (ms) | {fmt(q['all_replicas_p50_ms'])} / {fmt(q['all_replicas_p99_ms'])} / "
                     f"{fmt(q['all_replicas_max_ms'])} | ≤ 1000 |")
        lines.append(f"| … rows not yet served 1 s after their commit, A / B (of {q['rows']}) | "
                     + " / ".join(str(r["rows_late_at_1s_check"]) for r in reps) + " | 0 |")
        lines.append("| … the store thread's CPU over the run, A / B (ms; of it snapshot builds) | "
                     + " / ".join(f"{fmt(r['store_thread_cpu_ms'])} ({fmt(r['snapshot_build_ms_total'])} in {r['snapshot_builds']} builds)" for r in reps) + " | |")
        lines.append("| … the store thread runnable but waiting for a core, A / B (ms) | "
                     + " / ".join(fmt(r["store_thread_runqueue_wait_ms"]) for r in reps) + " | |")
    if "catchup" in results:
        c = results["catchup"]
        lines.append(f"| catch-up, {c['changes']} changes ({c['deletes']} deletes) in {fmt(c['changes_s'])} s cut off: "
                     f"reconnected after relay restore (s) | {fmt(c['reconnect_after_restore_s'], 2)} | back-off ≤ 30 s |")
        lines.append(f"| … serves exactly what the store holds, after its reconnection (s) | {fmt(c['exact_after_reconnect_s'], 2)} | ≤ 3 |")
        lines.append(f"| … after relay restore (s) | {fmt(c['exact_after_restore_s'], 2)} | |")
    return "\n".join(lines)


def main():
    if not os.path.exists(AASA):
        raise SystemExit(f"no {AASA}: build with swift build -c release")
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    work = tempfile.mkdtemp(prefix="aasa-bench-store-")
    tokens = os.path.join(work, "tokens")
    token = "bench-" + os.urandom(12).hex()
    with open(tokens, "w") as f:
        f.write(f"bench:{token}\n")
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "commit": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
               "loadavg_at_start": os.getloadavg(), "copy_base_2_to_4": COPY_BASE or tempfile.gettempdir(), "startup": {}}
    cluster = None
    try:
        cluster = Cluster()
        # The tables, made by the server itself: one start on the empty store.
        r = Replica("init", work, tokens, store=cluster.url)
        r.wait_ready(60)
        r.stop()
        for index, n in enumerate(COUNTS):
            root = load_store(cluster, n, work)
            results["startup"][str(n)] = startup(n, work, tokens, cluster, root)
            results["startup"][str(n)]["data"] = LOAD_INFO.get(n)
            if index == 0:
                # 2-4 on the first (smaller) data set.
                a = Replica("A", work, tokens, store=cluster.url)
                b = Replica("B", work, tokens, store=cluster.url)
                a.wait_ready()
                b.wait_ready()
                results["api"] = api_writes(a, b, token, n)
                print(json.dumps(results["api"]), file=sys.stderr, flush=True)
                results["sql"] = sql_writes(cluster, [a, b], n, run_id=random.randrange(1000000))
                print(json.dumps(results["sql"]), file=sys.stderr, flush=True)
                b.stop()
                results["catchup"] = catch_up(cluster, work, tokens, n, direct=a)
                print(json.dumps(results["catchup"]), file=sys.stderr, flush=True)
                a.stop()
    finally:
        stop_all()
        if cluster:
            shutil.rmtree(cluster.dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    results["loadavg_at_end"] = os.getloadavg()
    results["table"] = table(results)
    print(results["table"])
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    out = os.path.join(ROOT, "bench", "results", os.environ.get("BENCH_STORE_RESULT", f"store-{datetime.date.today().isoformat()}.json"))
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nwritten to {os.path.relpath(out, ROOT)}")


if __name__ == "__main__":
    main()
