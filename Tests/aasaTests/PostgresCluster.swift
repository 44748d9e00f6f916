import ChildProcess
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster for one test (Debian's `postgresql`): `initdb` into a
/// temporary folder owned by the `postgres` user (PostgreSQL refuses to run as root), a free
/// loopback port, trust authentication, no fsync. Started and stopped by the postmaster's PID.
final class PostgresCluster {
    let directory: String
    let port: Int
    private var process: Process?
    private let log: String

    static var binaries: String? {
        let base = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: base))?.sorted() ?? []
        return versions.last.map { base + "/" + $0 + "/bin" }
    }

    static var isAvailable: Bool { binaries != nil && getpwnam("postgres") != nil }

    var url: String { "postgres://postgres@127.0.0.1:\(port)/postgres" }

    init(port: Int? = nil) throws {
        guard let bin = PostgresCluster.binaries else { throw HarnessError(description: "PostgreSQL is not installed (apt-get install postgresql)") }
        self.port = try port ?? freePort()
        var template = Array((FileManager.default.temporaryDirectory.path + "/aasa-pg-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw HarnessError(description: "mkdtemp") }
        directory = String(cString: made)
        log = directory + ".log"
        let r = try Shell.run("/bin/sh", ["-c", """
            set -e
            chown postgres:postgres '\(directory)'
            touch '\(log)' && chown postgres:postgres '\(log)'
            setpriv --reuid=postgres --regid=postgres --init-groups '\(bin)/initdb' -D '\(directory)/data' -A trust -U postgres --no-sync >/dev/null
            """])
        guard r.status == 0 else { throw HarnessError(description: "initdb: \(r.stderr)") }
        try start()
    }

    deinit {
        stop()
        _ = try? Shell.run("/bin/rm", ["-rf", directory, log])
    }

    /// Starts the postmaster (again) on the same folder and port, and waits until it answers.
    func start() throws {
        guard process == nil, let bin = PostgresCluster.binaries else { return }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--reuid=postgres", "--regid=postgres", "--init-groups", bin + "/postgres", "-D", directory + "/data",
                       "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=\(directory)",
                       "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        p.standardOutput = FileHandle(forWritingAtPath: log)
        p.standardError = FileHandle(forWritingAtPath: log)
        try p.run()
        process = p
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if (try? sql("SELECT 1"))?.status == 0 { return }
            usleep(100_000)
        }
        throw HarnessError(description: "PostgreSQL did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// Stops the postmaster (fast shutdown: clients are disconnected) and waits for it.
    func stop() {
        guard let p = process else { return }
        kill(p.processIdentifier, SIGINT)
        if p.exitStatus(within: 20) == nil { kill(p.processIdentifier, SIGKILL); _ = p.exitStatus(within: 5) }
        process = nil
    }

    /// Runs SQL with psql; fails the statement on the first error.
    @discardableResult
    func sql(_ statement: String) throws -> CommandResult {
        try Shell.run("/usr/bin/psql", ["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U", "postgres",
                                        "-d", "postgres", "-c", statement], timeout: 30)
    }
}

/// A TCP relay on loopback between a replica and PostgreSQL, to cut one replica off the store
/// and bring it back (a Python process of its own, stopped by PID).
final class TCPRelay {
    let port: Int
    let target: Int
    private var process: Process?

    init(to target: Int, port: Int? = nil, start: Bool = true) throws {
        self.target = target
        self.port = try port ?? freePort()
        if start { try self.start() }
    }

    deinit { stop() }

    func start() throws {
        guard process == nil else { return }
        let script = """
        import socket, threading, sys
        listen = socket.socket(); listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listen.bind(("127.0.0.1", \(port))); listen.listen(64)
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
            try: server = socket.create_connection(("127.0.0.1", \(target)))
            except OSError:
                client.close(); continue
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()
        """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        process = p
        _ = out.fileHandleForReading.availableData
    }

    /// Stops the relay: every connection through it is cut at once.
    func stop() {
        guard let p = process else { return }
        kill(p.processIdentifier, SIGKILL)
        _ = p.exitStatus(within: 5)
        process = nil
    }
}
