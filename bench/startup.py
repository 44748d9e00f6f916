#!/usr/bin/env python3
"""make bench-startup: the instructions and syscalls one start spends, to `ready:`, on N sites.

Start-up time on this shared 2-core machine swings by a second from one run to the next at
100 000 sites (docs/performance.md, "Start-up at 100 000 sites"); the work does not. So the
release build starts on `make bench-sites`' data set (N sites, each with its own certificate;
BENCH_STARTUP_SITES, default 10 000; the same cache, BENCH_SITES_CACHE), twice:

- under `valgrind --tool=callgrind`, dumping its counts on entry to the control loop's `run`,
  which follows the `ready:` line: the instructions of every thread up to there;
- under `strace -f`: every syscall before the write of the `ready:` line, by name, and per site.

The watches are added after ready (docs/serving.md); AASA_TEST_WATCH_DELAY_MS holds them back
so that neither count sees them. Each server is stopped by its own PID. aasa runs as a copy
without debug sections (valgrind 3.19 cannot read the toolchain's DWARF 5), with
SWIFT_DETERMINISTIC_HASHING=1. Prints a Markdown table; writes bench/results/startup.json.
AASA_BIN picks another binary (an older build, side by side).
"""
import collections, json, os, re, shutil, signal, subprocess, sys, tempfile, time

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sites  # noqa: E402  (the data set and its cache)

ROOT = sites.ROOT
SITES = int(os.environ.get("BENCH_STARTUP_SITES", "10000"))
# The symbol callgrind dumps before: ControlLoop.run(), entered right after the `ready:` line.
READY_SYMBOL = "$s10AASAServer11ControlLoopC3runyyF"
STARTED = []


def server_args(binary, root):
    return [binary, "serve", "--config", os.path.join(root, "config"), "--certs", os.path.join(root, "certs"),
            "--https", "127.0.0.1:0", "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--workers", "2"]


def environment():
    return dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1", AASA_TEST_WATCH_DELAY_MS="10000")


def start(command, log_path):
    log = open(log_path, "w")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment())
    STARTED.append(proc)
    return proc


def wait_for(predicate, proc, what, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            raise SystemExit(f"the server ended before {what}")
        time.sleep(0.2)
    raise SystemExit(f"no {what} within {timeout} s")


def stop(proc):
    # A start under callgrind drains slowly.
    sites.stop(proc, timeout=120)


def stop_traced(proc):
    """The server is strace's child: stopped by its own PID (strace, stopped, would detach and
    leave it running), then strace ends with it."""
    if proc.poll() is not None:
        return
    with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
        children = [int(pid) for pid in f.read().split()]
    for pid in children:
        os.kill(pid, signal.SIGTERM)
    try:
        proc.wait(120)
    except subprocess.TimeoutExpired:
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        proc.wait()


def instructions(binary, root, work):
    """Ir of every thread, from the start to ControlLoop.run()."""
    out = os.path.join(work, "callgrind.out")
    proc = start(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--dump-before={READY_SYMBOL}",
                  "--demangle=no", "--dump-instr=no", "--dump-line=no"] + server_args(binary, root), os.path.join(work, "callgrind.log"))
    dump = out + ".1"
    wait_for(lambda: os.path.exists(dump) and "\ntotals:" in open(dump).read()[-4096:], proc, "callgrind's dump at ready", 1800)
    stop(proc)
    with open(dump) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise SystemExit(f"no totals in {dump}")


def syscalls(binary, root, work):
    """Syscalls of every thread before the write of the `ready:` line, by name."""
    trace = os.path.join(work, "strace.txt")
    log = os.path.join(work, "strace.log")
    # -s large enough for a whole write: the log writes its lines in batches, and the batch
    # that holds `ready:` can start with other lines.
    proc = start(["strace", "-f", "-qq", "-s", "65536", "-o", trace] + server_args(binary, root), log)
    wait_for(lambda: "ready:" in open(log).read(), proc, "ready", 900)
    stop_traced(proc)
    counts = collections.Counter()
    call = re.compile(r"^\d+\s+([a-z_0-9]+)\(")
    with open(trace) as f:
        for line in f:
            if "ready:" in line and line.split(None, 1)[1].startswith("write("):
                break
            m = call.match(line)
            if m:
                counts[m.group(1)] += 1
    return counts


def main():
    binary = os.environ.get("AASA_BIN", os.path.join(ROOT, ".build", "release", "aasa"))
    if not os.path.exists(binary):
        raise SystemExit(f"no {binary}: build with swift build -c release --product aasa")
    root = sites.generate(SITES)
    work = tempfile.mkdtemp(prefix="aasa-bench-startup-")
    stripped = os.path.join(work, "aasa")
    subprocess.run(["objcopy", "--strip-debug", binary, stripped], check=True)
    try:
        ir = instructions(stripped, root, work)
        counts = syscalls(stripped, root, work)
    finally:
        for proc in STARTED:
            if proc.args[0] == "strace":
                stop_traced(proc)
            else:
                stop(proc)
        shutil.rmtree(work, ignore_errors=True)
    total = sum(counts.values())
    row = {"sites": SITES, "binary": binary, "instructions_to_ready": ir, "syscalls_to_ready": total,
           "syscalls_per_site": total / SITES, "by_name": dict(counts.most_common())}
    print("| sites | instructions to ready | syscalls to ready | syscalls per site |")
    print("|---|---|---|---|")
    print(f"| {SITES} | {ir / 1e9:.3f} G | {total} | {total / SITES:.2f} |")
    print()
    print("| syscall | count | per site |")
    print("|---|---|---|")
    for name, n in counts.most_common(15):
        print(f"| {name} | {n} | {n / SITES:.2f} |")
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "startup.json"), "w") as f:
        json.dump(row, f, indent=1)


if __name__ == "__main__":
    main()
