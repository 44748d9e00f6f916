#!/usr/bin/env python3
"""make test-tls: testssl.sh against `aasa serve` and against nginx, same certificate, loopback.

The certificate is made the way the tests make theirs (Tests/aasaTests/ServerHarness.swift): an
EC P-256 CA and an EC P-256 leaf for example.com and www.example.com, signed with SHA-256; unlike
the tests' it is valid for a year and names a CRL (never fetched), as a public CA's would: a
30-day leaf without a revocation URI is two HIGH findings about the certificate, not the server. testssl
is given the CA (--add-ca), does no DNS lookups (--nodns none) and connects to 127.0.0.1 (--ip)
with SNI example.com. Checks: protocols (-p), server preferences (-P), server defaults and the
certificate (-S), forward secrecy (-f), every cipher per protocol (-E), vulnerabilities (-U) and
HTTP headers (-h).

aasa runs as started with defaults (release build, one worker); nginx with the settings
`make bench` gives it (TLS 1.2 and 1.3, HTTP/2, its default cipher list), as a reference.
Any finding of severity MEDIUM, HIGH or CRITICAL against aasa fails the target; nginx's are
printed beside them. The raw testssl output is kept in .build/test-tls/.
"""
import atexit, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AASA = os.environ.get("AASA_BIN", os.path.join(ROOT, ".build", "release", "aasa"))
OUT = os.path.join(ROOT, ".build", "test-tls")
HOST = "example.com"
FAILING = {"MEDIUM", "HIGH", "CRITICAL"}
VULNERABILITIES = ["heartbleed", "CCS", "ticketbleed", "ROBOT", "secure_renego", "secure_client_renego", "CRIME_TLS",
                   "BREACH", "POODLE_SSL", "fallback_SCSV", "SWEET32", "FREAK", "DROWN", "LOGJAM", "BEAST", "LUCKY13",
                   "winshock", "RC4"]

STARTED = []


def stop_all():
    for proc in STARTED:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


def make_certificates(d):
    script = f"""set -e
cd '{d}'
openssl ecparam -name prime256v1 -genkey -noout -out ca.key
openssl req -x509 -new -key ca.key -sha256 -days 400 -subj '/CN=aasa test CA' -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign' -out ca.pem 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out certs/sites.key
openssl req -new -key certs/sites.key -subj '/CN={HOST}' -out sites.csr 2>/dev/null
printf 'subjectAltName=DNS:{HOST},DNS:www.{HOST}\\nextendedKeyUsage=serverAuth\\ncrlDistributionPoints=URI:http://ca.{HOST}/aasa-test.crl\\n' > sites.ext
openssl x509 -req -in sites.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 365 -sha256 -extfile sites.ext -out certs/sites.crt 2>/dev/null
chmod 600 ca.key certs/sites.key
"""
    subprocess.run(["bash", "-c", script], check=True)


def start_aasa(d):
    port = free_port()
    log = open(os.path.join(OUT, "aasa.log"), "w")
    proc = subprocess.Popen([AASA, "serve", "--config", os.path.join(d, "config"), "--certs", os.path.join(d, "certs"),
                             "--https", f"127.0.0.1:{port}", "--http", f"127.0.0.1:{free_port()}", "--admin", "off",
                             "--workers", "1"], stdout=subprocess.DEVNULL, stderr=log)
    STARTED.append(proc)
    wait_listening(port, proc)
    return port


def start_nginx(d):
    port = free_port()
    prefix = os.path.join(d, "nginx")
    os.makedirs(prefix)
    version = tuple(int(x) for x in re.findall(r"nginx/(\d+)\.(\d+)\.(\d+)",
                                               subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr)[0])
    listen_h2, h2_on = ("", "http2 on;") if version >= (1, 25, 1) else (" http2", "")
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log error;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:SSL:10m;
  server {{
    listen 127.0.0.1:{port} ssl{listen_h2};
    {h2_on}
    server_name {HOST} www.{HOST};
    ssl_certificate {d}/certs/sites.crt;
    ssl_certificate_key {d}/certs/sites.key;
    location = /.well-known/apple-app-site-association {{
      default_type application/json;
      alias {d}/config/{HOST}/apple-app-site-association;
    }}
    location / {{ return 404; }}
  }}
}}
""")
    proc = subprocess.Popen(["nginx", "-c", conf, "-p", prefix], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    STARTED.append(proc)
    wait_listening(port, proc)
    return port


def testssl(name, port, ca):
    """Runs testssl.sh; returns its findings (the flat JSON list)."""
    out = os.path.join(OUT, f"{name}.json")
    if os.path.exists(out):
        os.unlink(out)
    cmd = ["testssl", "--quiet", "--color", "0", "--warnings", "off", "--nodns", "none", "--ip", "127.0.0.1",
           "--add-ca", ca, "--connect-timeout", "10", "--openssl-timeout", "10", "--jsonfile", out,
           "-p", "-P", "-S", "-f", "-E", "-U", "-h", f"{HOST}:{port}"]
    with open(os.path.join(OUT, f"{name}.txt"), "w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=1800, cwd=OUT)
    with open(out) as f:
        return json.load(f)


def summary(findings):
    by_id = {f["id"]: f for f in findings}

    def finding(i):
        return by_id[i]["finding"] if i in by_id else "n/a"

    protocols = [p for p, i in (("SSLv2", "SSLv2"), ("SSLv3", "SSLv3"), ("TLS 1.0", "TLS1"), ("TLS 1.1", "TLS1_1"),
                                ("TLS 1.2", "TLS1_2"), ("TLS 1.3", "TLS1_3"))
                 if i in by_id and by_id[i]["finding"].startswith("offered")]
    ciphers = {}
    for f in findings:
        m = re.match(r"cipher-(tls1(?:_\d)?|ssl\d)_x", f["id"])
        if m:
            proto = {"tls1": "TLS 1.0", "tls1_1": "TLS 1.1", "tls1_2": "TLS 1.2", "tls1_3": "TLS 1.3"}.get(m.group(1), m.group(1))
            ciphers.setdefault(proto, []).append(f["finding"].split()[3])
    vulnerable = {v: f"{by_id[v]['severity']}: {by_id[v]['finding']}" for v in VULNERABILITIES
                  if v in by_id and by_id[v]["severity"] not in ("OK", "INFO")}
    return {
        "protocols": protocols,
        "alpn": ", ".join(finding(i) for i in ("ALPN_HTTP2", "ALPN") if i in by_id) or "n/a",
        # testssl 3.0 says PFS, 3.1 FS
        "forward_secrecy": finding("FS" if "FS" in by_id else "PFS"),
        "fs_curves": finding("FS_ECDHE_curves" if "FS_ECDHE_curves" in by_id else "PFS_ECDHE_curves"),
        "cipher_order": finding("cipher_order"),
        "ciphers": ciphers,
        "session_resumption": finding("sessionresumption_ticket") + "; IDs: " + finding("sessionresumption_ID"),
        "vulnerabilities_checked": [v for v in VULNERABILITIES if v in by_id],
        "vulnerabilities_not_ok": vulnerable,
        "at_least_medium": [f"{f['severity']} {f['id']}: {f['finding']}" for f in findings if f["severity"] in FAILING],
        "low": [f"{f['id']}: {f['finding']}" for f in findings if f["severity"] == "LOW"],
        # engine_problem: the local openssl has no GOST engine, which only GOST ciphers need
        "scan_problems": [f"{f['id']}: {f['finding']}" for f in findings
                          if f["severity"] in ("WARN", "FATAL") and f["id"] != "engine_problem"],
    }


def table(results):
    names = list(results)

    def row(label, fn):
        return f"| {label} | " + " | ".join(fn(results[n]) for n in names) + " |"

    def ciphers(s, proto):
        return ", ".join(s["ciphers"].get(proto, [])) or "none"

    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names),
             row("protocols offered", lambda s: ", ".join(s["protocols"])),
             row("ALPN", lambda s: s["alpn"]),
             row("forward secrecy", lambda s: s["forward_secrecy"]),
             row("key exchange groups", lambda s: s["fs_curves"]),
             row("TLS 1.2 ciphers", lambda s: ciphers(s, "TLS 1.2")),
             row("TLS 1.3 ciphers", lambda s: ciphers(s, "TLS 1.3")),
             row("server cipher order", lambda s: s["cipher_order"]),
             row("session resumption", lambda s: s["session_resumption"]),
             row("vulnerabilities (of " + str(len(VULNERABILITIES)) + " checked)",
                 lambda s: "none found" if not s["vulnerabilities_not_ok"] else "; ".join(f"{k} {v}" for k, v in s["vulnerabilities_not_ok"].items())),
             row("findings MEDIUM or above", lambda s: str(len(s["at_least_medium"])) + ("" if not s["at_least_medium"] else ": " + "; ".join(s["at_least_medium"]))),
             row("LOW findings", lambda s: "; ".join(s["low"]) or "none")]
    return "\n".join(lines)


def main():
    for tool in ("testssl", "nginx", "openssl"):
        if not shutil.which(tool):
            sys.exit(f"missing {tool} (make test-tls installs it)")
    if not os.access(AASA, os.X_OK):
        sys.exit(f"no aasa at {AASA}: swift build -c release --product aasa")
    atexit.register(stop_all)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _: (stop_all(), sys.exit(128 + signum)))
    os.makedirs(OUT, exist_ok=True)
    d = tempfile.mkdtemp(prefix="aasa-test-tls-")
    try:
        os.makedirs(os.path.join(d, "certs"))
        os.makedirs(os.path.join(d, "config", HOST))
        with open(os.path.join(d, "config", HOST, "apple-app-site-association"), "w") as f:
            f.write('{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}}')
        make_certificates(d)
        ports = {"aasa": start_aasa(d), "nginx": start_nginx(d)}
        print(f"test-tls: testssl.sh against aasa on {ports['aasa']} and nginx on {ports['nginx']} (a few minutes)", flush=True)
        findings = {}

        def scan(name):
            findings[name] = testssl(name, ports[name], os.path.join(d, "ca.pem"))

        threads = [threading.Thread(target=scan, args=(n,)) for n in ports]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stop_all()
        shutil.rmtree(d, ignore_errors=True)

    if set(findings) != {"aasa", "nginx"}:
        sys.exit("test-tls: a testssl run gave no result; see .build/test-tls/*.txt")
    results = {n: summary(findings[n]) for n in ("aasa", "nginx")}
    with open(os.path.join(OUT, "summary.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(table(results))
    for name, s in results.items():
        if s["scan_problems"]:
            print(f"\n{name}: testssl could not complete some checks: " + "; ".join(s["scan_problems"]))
    bad = results["aasa"]["at_least_medium"]
    if bad:
        print("\ntest-tls: FAILED, findings of severity MEDIUM or above against aasa:\n  " + "\n  ".join(bad))
        return 1
    print("\ntest-tls: no finding of severity MEDIUM or above against aasa (raw output in .build/test-tls/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
