#!/usr/bin/env python3
"""Resident memory per idle TLS keep-alive connection of two aasa builds, side by side: each
serves the site folder `bench/instr.py --keep` leaves, a bounded asyncio client opens N TLS
connections (200 at a time), makes one request on each and holds them; VmRSS before and after,
over N. Two rounds, the builds alternated.

  python3 bench/idle_rss.py SITE BEFORE_BINARY AFTER_BINARY [N]

Needs N + a few descriptors (`ulimit -n`). Starts its own servers on free loopback ports and
stops them by PID."""
import asyncio, ssl, subprocess, socket, time, sys, os
SITE = sys.argv[1]; N = int(sys.argv[4]) if len(sys.argv) > 4 else 5000
def rss(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"): return int(l.split()[1])
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
async def hold(port, n):
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    conns = []
    sem = asyncio.Semaphore(200)
    async def one():
        async with sem:
            r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="bench.example.test"), 10)
            w.write(b"GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: bench.example.test\r\n\r\n")
            await w.drain()
            data = b""
            while b"\r\n\r\n" not in data or len(data) < 700:
                chunk = await asyncio.wait_for(r.read(4096), 10)
                if not chunk: break
                data += chunk
            conns.append(w)
    await asyncio.gather(*[one() for _ in range(n)])
    return conns
def measure(binary):
    port = free_port()
    p = subprocess.Popen([binary, "serve", "--config", f"{SITE}/config", "--certs", f"{SITE}/certs", "--https", f"127.0.0.1:{port}",
                          "--workers", "1", "--admin", "off", "--default-cert", "bench", "--max-connections-per-client", "0"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try: socket.create_connection(("127.0.0.1", port), timeout=0.1).close(); break
            except OSError: time.sleep(0.05)
        time.sleep(0.5)
        base = rss(p.pid)
        loop = asyncio.new_event_loop()
        conns = loop.run_until_complete(hold(port, N))
        time.sleep(1.0)
        held = rss(p.pid)
        for w in conns: w.close()
        loop.close()
        return base, held
    finally:
        p.terminate(); p.wait(timeout=10)
for rnd in range(2):
    for name, b in (("before", sys.argv[2]), ("after", sys.argv[3])):
        base, held = measure(b)
        print(f"{name:6} idle {base} kB, with {N} idle TLS connections {held} kB: {(held - base) / N * 1024:.0f} B per connection", flush=True)
