#!/usr/bin/env python3
"""Two aasa builds side by side, alternated three times, on what `make bench-instr` does not see:

  cpu   the server's user + system CPU per HTTPS/1.1 request for the 95,829-byte file, over
        N requests with `h2load --h1 -c 4` (callgrind counts instructions in user space only;
        a change that trades syscalls for a copy shows here as it costs)
  idle  resident memory per idle TLS keep-alive connection: N connections, one request each,
        held open; VmRSS with them less VmRSS before, over N (needs N more descriptors)

  python3 bench/ab.py cpu|idle SITE BEFORE_BINARY AFTER_BINARY [N]

SITE is the site folder `bench/instr.py --keep` leaves (config/, certs/bench.crt, the hosts
bench.example.test and big.example.test). The helpers are `make bench`'s (bench/run.py): servers
started here on free loopback ports and stopped by their PIDs.
"""
import asyncio, os, socket, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import PATH, cpu_seconds, free_port, hold_tls_connections, rss_kb, start, stop  # noqa: E402


def serve(binary, site):
    port = free_port()
    proc = start([binary, "serve", "--config", f"{site}/config", "--certs", f"{site}/certs", "--https", f"127.0.0.1:{port}",
                  "--workers", "1", "--admin", "off", "--default-cert", "bench", "--max-connections-per-client", "0"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    time.sleep(0.3)
    return proc, port


def cpu(binary, site, n):
    proc, port = serve(binary, site)
    try:
        before, t0 = cpu_seconds([proc.pid]), time.time()
        out = subprocess.run(["h2load", "--h1", "-n", str(n), "-c", "4", f"https://127.0.0.1:{port}{PATH}",
                              "-H", ":authority: big.example.test"], capture_output=True, text=True, timeout=300).stdout
        used, wall = cpu_seconds([proc.pid]) - before, time.time() - t0
        done = next((line.strip() for line in out.splitlines() if "succeeded" in line), out[-300:])
        return f"CPU {used / n * 1e6:6.1f} µs/request  wall {wall:5.2f} s  {done}"
    finally:
        stop(proc)


def idle(binary, site, n):
    proc, port = serve(binary, site)
    try:
        base = rss_kb([proc.pid])

        async def hold():
            writers = await hold_tls_connections(port, n, "bench.example.test")
            await asyncio.sleep(1)
            held = rss_kb([proc.pid])
            for w in writers:
                w.close()
            return held, len(writers)
        held, opened = asyncio.run(hold())
        return f"idle {base} kB, with {opened} idle TLS connections {held} kB: {(held - base) / max(opened, 1) * 1024:.0f} B each"
    finally:
        stop(proc)


def main():
    if len(sys.argv) < 5 or sys.argv[1] not in ("cpu", "idle"):
        sys.exit(__doc__)
    mode, site, before, after = sys.argv[1:5]
    n = int(sys.argv[5]) if len(sys.argv) > 5 else (20000 if mode == "cpu" else 5000)
    measure = cpu if mode == "cpu" else idle
    for _ in range(3):
        for name, binary in (("before", before), ("after", after)):
            print(f"{name:6} {measure(binary, site, n)}", flush=True)


if __name__ == "__main__":
    main()
