#!/usr/bin/env python3
"""make bench-sites: aasa with N sites, each with its own certificate (README, "Many sites").

For each N (BENCH_SITES_COUNTS, default "1000 10000"): generates N site folders and N
certificates (distinct names, one shared P-256 key, made with the `cryptography` package and
kept under $BENCH_SITES_CACHE for the next run), starts the release build and measures:
time to ready and the CPU it took, RSS at ready, TLS handshakes to 50 random sites verified
against each site's own certificate, the time from the atomic rename of one site's new file
to its first response with the new content (median of 5) and the CPU the server's control
thread spent on it, RSS after the edits, idle CPU over 10 s, the first page of /status (time,
size) and /metrics (size), RSS once the first minute after ready is over, and how long after
ready every folder was watched (the server's own `watch:` log line). Prints a Markdown table; writes bench/results/sites.json.

Then, side by side with nginx serving the same N sites (one server block and certificate each,
2 workers; skipped when nginx is not installed): the CPU per new TLS connection (a full
handshake and one GET, no resumption) to a random site of the N (cold: most were not asked for
recently) and to one site again and again (warm), for aasa and nginx in turns, BENCH_SITES_TLS
connections a round (default 2000, from 2 client processes), BENCH_SITES_TLS_ROUNDS rounds
(default 2; 0 skips the comparison); and nginx's time to ready with N certificates. Prints a second table.

BENCH_SITES_KEYS=site gives each site a key of its own (default "shared": one key for all,
quicker to make; aasa then parses that key once while it is in use, see docs/performance.md,
"Cold handshakes"), in a data set of its own ($BENCH_SITES_CACHE/N-site-keys-mixed), in the
forms and layouts a platform's volume mixes (pair_form): P-256 keys in PKCS #8 and SEC 1, one
site in 25 an RSA-2048 key in PKCS #1 or PKCS #8; flat NAME.crt + NAME.key, certbot's
NAME/fullchain.pem + privkey.pem and cert-manager's NAME/tls.crt + tls.key in turn.

BENCH_SITES_SHAPE picks the data set's shape:
- "self" (the default): each certificate self-signed, the file holding the leaf alone;
- "ca": what a platform's volume looks like (issue 38's outside data set, and more): each leaf
  signed by a data-set CA and its file holding the chain (leaf, then the CA), the CA's own
  certificate and key on disk beside them (skipped as a CA, said once), 3 sites whose file does
  not validate, 12 sites without a certificate, one key readable by others. Handshakes are
  verified against the CA and skip the sites made faulty on purpose.

The server is started by this script, recorded by its PID and stopped by that PID.
"""
import datetime, json, multiprocessing, os, random, re, shutil, signal, socket, ssl, statistics, subprocess, sys, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AASA = os.environ.get("AASA_BIN", os.path.join(ROOT, ".build", "release", "aasa"))
COUNTS = [int(n) for n in os.environ.get("BENCH_SITES_COUNTS", "1000 10000").split()]
CACHE = os.environ.get("BENCH_SITES_CACHE", "/tmp/aasa-bench-sites")
SHAPE = os.environ.get("BENCH_SITES_SHAPE", "self")
KEYS = os.environ.get("BENCH_SITES_KEYS", "shared")
# The sites the "ca" shape makes faulty: invalid files, then no certificate (never edited or sampled).
INVALID = range(10, 13)
UNCOVERED = range(13, 25)
FAULTY = set(INVALID) | set(UNCOVERED) if SHAPE == "ca" else set()
WORKERS = os.environ.get("BENCH_SITES_WORKERS", "2")
TLS_CONNECTIONS = int(os.environ.get("BENCH_SITES_TLS", "2000"))
TLS_ROUNDS = int(os.environ.get("BENCH_SITES_TLS_ROUNDS", "2"))
PATH = "/.well-known/apple-app-site-association"
TICKS = os.sysconf("SC_CLK_TCK")
STARTED = []


def host(i):
    return f"site{i}.bench.test"


LAYOUTS = {"flat": ("{name}.crt", "{name}.key"), "certbot": ("{name}/fullchain.pem", "{name}/privkey.pem"),
           "kubernetes": ("{name}/tls.crt", "{name}/tls.key")}


def pair_form(i):
    """(key type, key format, layout) of site i: with a key per site, the forms and layouts a
    platform's volume mixes; else one shared P-256 PKCS #8 key, flat."""
    if KEYS != "site":
        return ("ec", "pkcs8", "flat")
    layout = ("flat", "certbot", "kubernetes")[i % 3]
    if i % 25 == 7:
        return ("rsa", ("pkcs1", "pkcs8")[(i // 25) % 2], layout)
    return ("ec", ("pkcs8", "sec1")[(i // 3) % 2], layout)


def pair_paths(root, i):
    """The certificate and key files of site i in the data set at root."""
    crt, key = LAYOUTS[pair_form(i)[2]]
    name = host(i)
    return os.path.join(root, "certs", crt.format(name=name)), os.path.join(root, "certs", key.format(name=name))


def body(i, marker="v1"):
    return ('{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app%d"], '
            '"components": [{"/": "/%s/*"}]}]}}' % (i, marker))


def generate(n):
    """config/ and certs/ for n sites, made once and kept."""
    root = os.path.join(CACHE, (str(n) if SHAPE == "self" else f"{SHAPE}-{n}") + ("-site-keys-mixed" if KEYS == "site" else ""))
    done = os.path.join(root, ".complete")
    if os.path.exists(done):
        return root
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import NameOID
    os.makedirs(os.path.join(root, "config"), exist_ok=True)
    os.makedirs(os.path.join(root, "certs"), exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    now = datetime.datetime.now(datetime.timezone.utc)
    started = time.time()
    ca_key = ca_cert = None
    if SHAPE == "ca":
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "aasa bench data-set CA")])
        ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                   .not_valid_after(now + datetime.timedelta(days=3650))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
                   .sign(ca_key, hashes.SHA256()))
        with open(os.path.join(root, "certs", "ca.crt"), "wb") as f:
            f.write(ca_cert.public_bytes(serialization.Encoding.PEM))
        fd = os.open(os.path.join(root, "certs", "ca.key"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, ca_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        os.close(fd)
    for i in range(n):
        name = host(i)
        folder = os.path.join(root, "config", name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "apple-app-site-association"), "w") as f:
            f.write(body(i) if not (SHAPE == "ca" and i in INVALID) else body(i).replace('"appIDs"', '"appIds"'))
        if SHAPE == "ca" and i in UNCOVERED:
            continue
        if KEYS == "site":
            kind, form, _ = pair_form(i)
            key = rsa.generate_private_key(65537, 2048) if kind == "rsa" else ec.generate_private_key(ec.SECP256R1())
            private_format = serialization.PrivateFormat.PKCS8 if form == "pkcs8" else serialization.PrivateFormat.TraditionalOpenSSL
            key_pem = key.private_bytes(serialization.Encoding.PEM, private_format, serialization.NoEncryption())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        builder = (x509.CertificateBuilder().subject_name(subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(days=90))
                   .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False))
        if ca_cert is None:
            cert = builder.issuer_name(subject).sign(key, hashes.SHA256())
            chain = cert.public_bytes(serialization.Encoding.PEM)
        else:
            cert = (builder.issuer_name(ca_cert.subject)
                    .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                    .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                    .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
                    .sign(ca_key, hashes.SHA256()))
            chain = cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(serialization.Encoding.PEM)
        crt_path, key_path = pair_paths(root, i)
        os.makedirs(os.path.dirname(crt_path), exist_ok=True)
        with open(crt_path, "wb") as f:
            f.write(chain)
        mode = 0o644 if SHAPE == "ca" and i == 25 else 0o600
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        os.write(fd, key_pem)
        os.close(fd)
        os.chmod(key_path, mode)
    open(done, "w").close()
    print(f"generated {n} sites and certificates in {time.time() - started:.1f} s", file=sys.stderr)
    return root


def cpu_seconds(pid, tid=None):
    path = f"/proc/{pid}/task/{tid}/stat" if tid else f"/proc/{pid}/stat"
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def thread_cpu_seconds(pid, tid):
    """CPU time of one thread at nanosecond resolution (schedstat), not clock ticks."""
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def stop(proc, timeout=20):
    """SIGTERM to the process we started, SIGKILL if it is not gone within `timeout` s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def http_get(port, host_name, path=PATH, timeout=5):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host_name}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data
    finally:
        s.close()


def admin_get(port, path):
    started = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
        data = r.read()
    return data, time.perf_counter() - started


def handshake(port, root, i):
    name = host(i)
    ctx = ssl.create_default_context(cafile=os.path.join(root, "certs", "ca.crt") if SHAPE == "ca" else pair_paths(root, i)[0])
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=name) as tls:
            elapsed = time.perf_counter() - started
            tls.sendall(f"GET {PATH} HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
            ok = tls.recv(64).startswith(b"HTTP/1.1 200")
    return elapsed, ok


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(n, root):
    """nginx with one server block per site, its own certificate each, the first the default."""
    prefix = os.path.join(root, "nginx")
    os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
    port = free_port()
    servers = []
    for i in range(n):
        if i in FAULTY:
            continue
        name = host(i)
        servers.append(f"""  server {{
    listen 127.0.0.1:{port} ssl{" default_server" if not servers else ""};
    server_name {name};
    ssl_certificate {pair_paths(root, i)[0]};
    ssl_certificate_key {pair_paths(root, i)[1]};
    location = {PATH} {{ default_type application/json; alias {root}/config/{name}/apple-app-site-association; }}
  }}""")
    conf = f"""user root;
worker_processes 2;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log error;
daemon off;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  ssl_protocols TLSv1.2 TLSv1.3;
  server_names_hash_max_size {4 * n};
  server_names_hash_bucket_size 64;
{chr(10).join(servers)}
}}
"""
    path = os.path.join(prefix, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    started = time.time()
    proc = subprocess.Popen(["nginx", "-c", path, "-p", prefix], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    STARTED.append(proc)
    deadline = time.time() + 600
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"nginx exited: see {prefix}/logs/error.log")
        try:
            if http_get_tls(port, host(0)):
                return proc, port, time.time() - started
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nginx not ready after 600 s")


def http_get_tls(port, name, context=None):
    """One new TLS connection (full handshake, no resumption) and one GET; True for a 200."""
    if context is None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=name) as tls:
            tls.sendall(f"GET {PATH} HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
            return tls.recv(64).startswith(b"HTTP/1.1 200")


def connections(args):
    """A client process's share of a round: `count` connections to random sites or to one."""
    port, n, count, mode, seed = args
    rng = random.Random(seed)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    sites = [i for i in range(n) if i not in FAULTY]
    ok = 0
    for _ in range(count):
        ok += http_get_tls(port, host(rng.choice(sites) if mode == "cold" else sites[1]), context)
    return ok


def process_tree_cpu(pid):
    """CPU seconds of a process and its children (nginx's master and workers)."""
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return cpu_seconds(pid) + sum(cpu_seconds(int(c)) for c in children)


def tls_cpu(pool, pid, port, n, mode, seed):
    """CPU milliseconds the server spent per new TLS connection over one round."""
    before = process_tree_cpu(pid)
    ok = sum(pool.map(connections, [(port, n, TLS_CONNECTIONS // 2, mode, seed), (port, n, TLS_CONNECTIONS // 2, mode, seed + 1)]))
    spent = process_tree_cpu(pid) - before
    if ok != TLS_CONNECTIONS // 2 * 2:
        raise SystemExit(f"{mode}: {ok} of {TLS_CONNECTIONS // 2 * 2} connections answered 200")
    return spent * 1000 / ok


def compare_tls(n, root, aasa, aasa_port):
    """Cold and warm TLS connections, aasa and nginx in turns; medians over the rounds."""
    if TLS_ROUNDS == 0:
        return None
    if shutil.which("nginx") is None:
        print("nginx not installed: no TLS comparison (apt-get install nginx)", file=sys.stderr)
        return None
    nginx, nginx_port, nginx_ready = start_nginx(n, root)
    try:
        figures = {(server, mode): [] for server in ("aasa", "nginx") for mode in ("cold", "warm")}
        seed = time.time_ns()
        with multiprocessing.Pool(2) as pool:
            for k in range(TLS_ROUNDS):
                for mode in ("cold", "warm"):
                    for server, pid, port in (("aasa", aasa.pid, aasa_port), ("nginx", nginx.pid, nginx_port)):
                        # A new seed each round: the sites of a cold round were not asked for before.
                        seed += 2
                        figures[(server, mode)].append(tls_cpu(pool, pid, port, n, mode, seed))
        row = {"sites": n, "tls_connections": TLS_CONNECTIONS, "rounds": TLS_ROUNDS, "nginx_ready_s": nginx_ready,
               "nginx_rss_mib": rss_mib(nginx.pid) + sum(rss_mib(int(c)) for c in subprocess.run(
                   ["pgrep", "-P", str(nginx.pid)], capture_output=True, text=True).stdout.split())}
        for (server, mode), values in figures.items():
            row[f"{server}_{mode}_ms"] = statistics.median(values)
            row[f"{server}_{mode}_all_ms"] = values
        return row
    finally:
        stop(nginx)


def measure(n):
    root = generate(n)
    config, certs = os.path.join(root, "config"), os.path.join(root, "certs")
    # Back to version 1 of every edited site, so each run starts from the same files.
    for i in range(5):
        with open(os.path.join(config, host(i), "apple-app-site-association"), "w") as f:
            f.write(body(i))
    log_path = os.path.join(root, "server.log")
    log = open(log_path, "w")
    started = time.time()
    proc = subprocess.Popen([AASA, "serve", "--config", config, "--certs", certs, "--https", "127.0.0.1:0",
                             "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--workers", WORKERS],
                            stdout=subprocess.DEVNULL, stderr=log)
    STARTED.append(proc)
    try:
        ports, ready_at = {}, None
        deadline = time.time() + 900
        while time.time() < deadline and ready_at is None:
            if proc.poll() is not None:
                raise SystemExit(f"aasa exited: see {log_path}")
            with open(log_path) as f:
                text = f.read()
            for kind, port in re.findall(r"listening (https|http|admin) \S*:(\d+)", text):
                ports[kind] = int(port)
            if "ready:" in text:
                ready_at = time.time()
            else:
                time.sleep(0.02)
        if ready_at is None:
            raise SystemExit(f"not ready after 900 s: see {log_path}")
        row = {"sites": n, "ready_s": ready_at - started, "ready_cpu_s": cpu_seconds(proc.pid), "rss_ready_mib": rss_mib(proc.pid),
               "log_lines": sum(1 for _ in open(log_path))}
        # TLS handshakes for 50 random sites, each verified against its own certificate.
        times, verified = [], 0
        for i in [i for i in random.Random(1).sample(range(n), min(50 + len(FAULTY), n)) if i not in FAULTY][:50]:
            t, ok = handshake(ports["https"], root, i)
            times.append(t)
            verified += ok
        row["handshake_ms"] = statistics.median(times) * 1000
        row["handshakes_verified"] = f"{verified}/{len(times)}"
        # Edits: atomic rename of a new file; poll the site over plain HTTP until it answers with it.
        latencies, reload_cpu = [], []
        for k in range(5):
            i = k
            marker = f"edit{k}-{time.time_ns()}"
            path = os.path.join(config, host(i), "apple-app-site-association")
            with open(path + ".tmp", "w") as f:
                f.write(body(i, marker))
            time.sleep(0.3)
            control_before = thread_cpu_seconds(proc.pid, proc.pid)
            t0 = time.perf_counter()
            os.rename(path + ".tmp", path)
            while time.perf_counter() - t0 < 10:
                if marker.encode() in http_get(ports["http"], host(i)):
                    break
            latencies.append(time.perf_counter() - t0)
            time.sleep(0.3)
            reload_cpu.append(thread_cpu_seconds(proc.pid, proc.pid) - control_before)
        row["edit_served_ms"] = statistics.median(latencies) * 1000
        row["edit_cpu_ms"] = statistics.median(reload_cpu) * 1000
        # More edits, then memory against memory at ready.
        for k in range(30):
            path = os.path.join(config, host(k % 5), "apple-app-site-association")
            with open(path + ".tmp", "w") as f:
                f.write(body(k % 5, f"churn{k}"))
            os.rename(path + ".tmp", path)
            time.sleep(0.15)
        time.sleep(1)
        row["rss_after_edits_mib"] = rss_mib(proc.pid)
        idle_before = cpu_seconds(proc.pid)
        time.sleep(10)
        row["idle_cpu_ms_10s"] = (cpu_seconds(proc.pid) - idle_before) * 1000
        data, elapsed = admin_get(ports["admin"], "/status")
        row["status_page_ms"] = elapsed * 1000
        row["status_page_kib"] = len(data) / 1024
        data, elapsed = admin_get(ports["admin"], "/metrics")
        row["metrics_kib"] = len(data) / 1024
        # Memory once the first minute is over: the watches (added after ready) and the first
        # requests' allocations are in it, which memory at ready understates.
        time.sleep(max(0, ready_at + 60 - time.time()))
        row["rss_minute_mib"] = rss_mib(proc.pid)
        watched = re.search(r"watch: \d+ folders watched (\d+) ms after ready", open(log_path).read())
        row["watch_after_ready_ms"] = int(watched.group(1)) if watched else None
        row["tls"] = compare_tls(n, root, proc, ports["https"])
        return row
    finally:
        stop(proc)
        log.close()


COLUMNS = [("sites", "sites", "{}"), ("ready_s", "ready (s)", "{:.2f}"), ("ready_cpu_s", "CPU to ready (s)", "{:.2f}"),
           ("rss_ready_mib", "RSS ready (MiB)", "{:.0f}"), ("handshake_ms", "TLS handshake (ms, median)", "{:.2f}"),
           ("handshakes_verified", "verified", "{}"), ("edit_served_ms", "edit served (ms, median of 5)", "{:.0f}"),
           ("edit_cpu_ms", "CPU per edit (ms)", "{:.1f}"), ("rss_after_edits_mib", "RSS after 35 edits (MiB)", "{:.0f}"),
           ("idle_cpu_ms_10s", "idle CPU over 10 s (ms)", "{:.0f}"), ("rss_minute_mib", "RSS 60 s after ready (MiB)", "{:.0f}"),
           ("watch_after_ready_ms", "every folder watched after ready (ms)", "{}"), ("status_page_ms", "/status page (ms)", "{:.1f}"),
           ("status_page_kib", "/status page (KiB)", "{:.0f}"), ("metrics_kib", "/metrics (KiB)", "{:.1f}"),
           ("log_lines", "start-up log lines", "{}")]


TLS_COLUMNS = [("aasa_cold_ms", "aasa CPU per cold TLS connection (ms)", "{:.2f}"), ("nginx_cold_ms", "nginx cold (ms)", "{:.2f}"),
               ("aasa_warm_ms", "aasa CPU per warm TLS connection (ms)", "{:.2f}"), ("nginx_warm_ms", "nginx warm (ms)", "{:.2f}"),
               ("nginx_ready_s", "nginx ready (s)", "{:.2f}"), ("nginx_rss_mib", "nginx RSS (MiB)", "{:.0f}")]


def main():
    if not os.path.exists(AASA):
        raise SystemExit(f"no {AASA}: build with swift build -c release")
    rows = []
    try:
        for n in COUNTS:
            rows.append(measure(n))
            print(json.dumps(rows[-1]), file=sys.stderr)
    finally:
        for proc in STARTED:
            stop(proc)
    print("| " + " | ".join(c[1] for c in COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in rows:
        print("| " + " | ".join(fmt.format(row[key]) for key, _, fmt in COLUMNS) + " |")
    tls = [row["tls"] for row in rows if row.get("tls")]
    if tls:
        print()
        print("| sites | " + " | ".join(c[1] for c in TLS_COLUMNS) + " |")
        print("|---|" + "---|" * len(TLS_COLUMNS))
        for row in tls:
            print(f"| {row['sites']} | " + " | ".join(fmt.format(row[key]) for key, _, fmt in TLS_COLUMNS) + " |")
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", ("sites" if SHAPE == "self" else f"sites-{SHAPE}") + ("-site-keys" if KEYS == "site" else "") + ".json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
