#!/usr/bin/env python3
"""make bench-import: `aasa import` at scale (docs/import.md), the release build against fake
origins on loopback.

D domains (BENCH_IMPORT_DOMAINS, default 10000), all under *.bench.test, reached through
`connect=` in the domains file. One in ten hangs: half connect to a socket that accepts and never
answers (the TLS handshake never ends), half to the HTTPS origin, which completes the handshake and
never answers the request. One in a hundred (none of those) trickles its AASA file a byte a second.
The others serve a ~700-byte AASA file and an assetlinks.json (no Apple Pay file, no webauthn: 404).
The fakes are one process started by this script, a thread per connection.

Run: `aasa import --domains FILE --to DIR --parallel 64 --timeout T` (BENCH_IMPORT_TIMEOUT, default
10) with --cacert the bench CA and --format json. Measured: the run's time, its peak RSS (ru_maxrss
of the waited child), and every domain's results: each hanging domain's four files `failed` with the
time-out named, each trickling domain's AASA file `failed` with the time-out named, each good
domain's AASA file and assetlinks.json `imported` and byte-exact in DIR. A good fetch's time is a
one-domain run's (the median of 5).

Targets (the issue's): done within 3 x T + D / 64 x a good fetch, RSS at most 150 MiB. Note that a
pool of 64 domains at a time cannot finish D / 10 hanging domains faster than D / 10 / 64 x T:
the table prints that bound beside the target. Writes bench/results/import-DATE.json; the run's
files are removed unless BENCH_IMPORT_KEEP=1. Every process is started by this script and
stopped by its PID (bench/run.py's helpers); every loop is bounded.
"""
import datetime, json, os, resource, shutil, signal, socket, ssl, statistics, subprocess, sys, tempfile, threading, time

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import on_signal, start, stop, stop_all  # noqa: E402
from monitor import ASSET_LINKS, ASSET_LINKS_BODY, WELL_KNOWN, aasa_file, certificates, hold, read_head, response  # noqa: E402

ROOT = os.path.dirname(HERE)
AASA = os.environ.get("AASA_BIN", os.path.join(ROOT, ".build", "release", "aasa"))
DOMAINS = int(os.environ.get("BENCH_IMPORT_DOMAINS", "10000"))
TIMEOUT = float(os.environ.get("BENCH_IMPORT_TIMEOUT", "10"))
PARALLEL = 64
HANG_EVERY = 10
TRICKLE_EVERY = 100


def domain(k):
    """Domain k and how its origin behaves: good, tls-hang, http-hang or trickle."""
    if k % HANG_EVERY == 0:
        kind = "tls-hang" if (k // HANG_EVERY) % 2 == 0 else "http-hang"
    elif k % TRICKLE_EVERY == 5:
        kind = "trickle"
    else:
        kind = "good"
    return f"d{k:06d}-{kind}.bench.test" if kind != "good" else f"d{k:06d}.bench.test", kind


def fakes_main(work):
    """The HTTPS origin and the socket that never answers a handshake, a thread per connection.
    Prints their ports as one JSON line, then serves until SIGTERM."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(work, "leaf.pem"))

    def origin(raw):
        try:
            raw.settimeout(60)
            conn = context.wrap_socket(raw, server_side=True)
            head = read_head(conn)
            if head is None:
                return
            path, fields = head
            host = fields.get("host", "-")
            if "-http-hang." in host:
                hold(conn)
            elif path == WELL_KNOWN and "-trickle." in host:
                body = aasa_file(host)
                conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode())
                for i in range(min(len(body), 120)):  # a byte a second, until the client gives up
                    conn.sendall(body[i:i + 1])
                    time.sleep(1)
            elif path == WELL_KNOWN:
                conn.sendall(response("200 OK", aasa_file(host), ["Content-Type: application/json"]))
            elif path == ASSET_LINKS:
                conn.sendall(response("200 OK", ASSET_LINKS_BODY, ["Content-Type: application/json"]))
            else:
                conn.sendall(response("404 Not Found", b"no"))
        except OSError:
            pass
        finally:
            raw.close()

    def silent(raw):
        try:
            hold(raw)
        except OSError:
            pass
        finally:
            raw.close()

    def listen(handler):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(4096)

        def accept():
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=handler, args=(conn,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return listener.getsockname()[1]

    ports = {"origin": listen(origin), "hang": listen(silent)}
    print(json.dumps(ports), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


def import_run(ca, domains_file, out, parallel=PARALLEL):
    """One `aasa import`: (seconds, its JSON report)."""
    started = time.monotonic()
    proc = start([AASA, "import", "--domains", domains_file, "--to", out, "--parallel", str(parallel), "--timeout", f"{TIMEOUT:g}",
                  "--cacert", ca, "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = proc.communicate(timeout=3600)
    seconds = time.monotonic() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"aasa import exited {proc.returncode}: {stderr.decode()[:2000]}")
    return seconds, json.loads(stdout)


def verify(report, out):
    """The domains whose results are not what their origin's behaviour says they must be."""
    wrong = []
    by_host = {d["host"]: d["files"] for d in report["domains"]}
    for k in range(DOMAINS):
        host, kind = domain(k)
        files = {f["name"]: f for f in by_host.get(host, [])}
        aasa, links = files.get("apple-app-site-association", {}), files.get("assetlinks.json", {})
        if kind in ("tls-hang", "http-hang"):
            ok = len(files) == 4 and all(f["result"] == "failed" and "within" in f["message"] for f in files.values())
        elif kind == "trickle":
            ok = aasa.get("result") == "failed" and "within" in aasa.get("message", "")
        else:
            try:
                written = open(os.path.join(out, host, "apple-app-site-association"), "rb").read()
                written_links = open(os.path.join(out, host, "assetlinks.json"), "rb").read()
            except OSError:
                written, written_links = None, None
            ok = (aasa.get("result") == "imported" and links.get("result") == "imported"
                  and written == aasa_file(host) and written_links == ASSET_LINKS_BODY)
        if not ok:
            wrong.append((host, kind, [(n, f["result"], f["message"][:120]) for n, f in files.items()]))
    return wrong


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "fakes":
        return fakes_main(sys.argv[2])
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    work = tempfile.mkdtemp(prefix="aasa-bench-import-")
    try:
        ca = certificates(work)
        fakes = start([sys.executable, os.path.abspath(__file__), "fakes", work], stdout=subprocess.PIPE)
        ports = json.loads(fakes.stdout.readline())
        lines = []
        for k in range(DOMAINS):
            host, kind = domain(k)
            lines.append(f"{host} connect=127.0.0.1:{ports['hang'] if kind == 'tls-hang' else ports['origin']}\n")
        domains_file = os.path.join(work, "domains.txt")
        with open(domains_file, "w") as f:
            f.writelines(lines)
        one_file = os.path.join(work, "one.txt")
        with open(one_file, "w") as f:
            f.write(lines[1])

        singles = []
        for i in range(5):
            out = os.path.join(work, f"one-{i}")
            os.mkdir(out)
            singles.append(import_run(ca, one_file, out)[0])
        good_fetch = statistics.median(singles)

        out = os.path.join(work, "out")
        os.mkdir(out)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        seconds, report = import_run(ca, domains_file, out)
        rss_mib = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        stop(fakes)
        wrong = verify(report, out)

        hanging = sum(1 for k in range(DOMAINS) if domain(k)[1] in ("tls-hang", "http-hang", "trickle"))
        target = 3 * TIMEOUT + DOMAINS / PARALLEL * good_fetch
        bound = hanging / PARALLEL * TIMEOUT
        rows = [
            ("domains", f"{DOMAINS} ({hanging} hanging or trickling)"),
            ("--parallel / --timeout", f"{PARALLEL} / {TIMEOUT:g} s"),
            ("a good fetch (one domain, median of 5)", f"{good_fetch:.3f} s"),
            ("run", f"{seconds:.1f} s"),
            ("target: 3 x timeout + D / 64 x good fetch", f"{target:.1f} s ({'met' if seconds <= target else 'missed'})"),
            ("lower bound: hanging / 64 x timeout", f"{bound:.1f} s"),
            ("peak RSS", f"{rss_mib:.1f} MiB (target 150: {'met' if rss_mib <= 150 else 'missed'})"),
            ("summary", json.dumps(report["summary"])),
            ("domains with a wrong result", f"{len(wrong)}"),
        ]
        text = "\n".join(f"{k:<44} {v}" for k, v in rows)
        print(text)
        for w in wrong[:10]:
            print("  wrong:", w)
        now = datetime.datetime.now(datetime.timezone.utc)
        path = os.path.join(ROOT, "bench", "results", os.environ.get("BENCH_IMPORT_RESULT", f"import-{now.date().isoformat()}.json"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"date": now.isoformat(), "domains": DOMAINS, "parallel": PARALLEL, "timeout": TIMEOUT, "goodFetch": good_fetch,
                       "seconds": seconds, "target": target, "lowerBound": bound, "rssMiB": rss_mib, "summary": report["summary"],
                       "wrong": wrong[:100], "table": text}, f, indent=1)
        print(f"\nwritten to {os.path.relpath(path, ROOT)}")
    finally:
        stop_all()
        if os.environ.get("BENCH_IMPORT_KEEP") == "1":
            print(f"the run's files in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
