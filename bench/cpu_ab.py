#!/usr/bin/env python3
"""CPU time per request of two aasa builds, side by side: the server's user + system time
(/proc/PID/stat) over N HTTPS/1.1 requests for the 95,829-byte file with `h2load --h1 -c 4`,
alternating the builds three times. Complements `make bench-instr`, which counts user-space
instructions only: a change that trades syscalls for a copy shows here as it costs.

  python3 bench/cpu_ab.py SITE BEFORE_BINARY AFTER_BINARY [N]

SITE is the site folder `bench/instr.py --keep` leaves (config/, certs/ with bench.crt).
Starts its own servers on free loopback ports and stops them by PID."""
import subprocess, time, os, socket, sys
SITE = sys.argv[1]
BINS = {"before": sys.argv[2], "after": sys.argv[3]}
N = int(sys.argv[4]) if len(sys.argv) > 4 else 20000
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def run(name, n):
    port = free_port()
    p = subprocess.Popen([BINS[name], "serve", "--config", f"{SITE}/config", "--certs", f"{SITE}/certs", "--https", f"127.0.0.1:{port}",
                          "--workers", "1", "--admin", "off", "--default-cert", "bench"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try: socket.create_connection(("127.0.0.1", port), timeout=0.1).close(); break
            except OSError: time.sleep(0.05)
        time.sleep(0.3)
        c0 = cpu(p.pid); t0 = time.time()
        out = subprocess.run(["h2load", "--h1", "-n", str(n), "-c", "4", f"https://127.0.0.1:{port}/.well-known/apple-app-site-association",
                              "-H", ":authority: big.example.test"], capture_output=True, text=True, timeout=300).stdout
        c1 = cpu(p.pid); t1 = time.time()
        ok = [l for l in out.splitlines() if "succeeded" in l]
        return (c1 - c0) / n * 1e6, (t1 - t0), ok[0].strip() if ok else out[-300:]
    finally:
        p.terminate(); p.wait(timeout=10)
for rnd in range(3):
    for name in ("before", "after"):
        us, wall, ok = run(name, N)
        print(f"{name:6} CPU {us:6.1f} µs/request  wall {wall:5.2f} s  {ok}", flush=True)
