import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Child processes for the tests, with every wait bounded.
//
// Foundation's `Process.waitUntilExit()` spins a run loop until the exit notification arrives.
// Under the load of a whole test run, called from a worker thread, it has parked a thread for
// good on a child that had long exited: a CI run stopped after 90 minutes inside a test whose
// curl commands each finish in under 5 s. So nothing here calls it. A child's end is asked of
// the kernel with `waitid(WNOWAIT)`, which sees an exited child without reaping it (Foundation
// still reaps it and keeps its own bookkeeping), and every wait has a deadline.

/// What a finished command printed, and how it ended.
public struct CommandResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// True when the command outlived its time limit and was killed.
    public var timedOut = false

    public init(status: Int32, stdout: String, stderr: String, timedOut: Bool = false) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
        self.timedOut = timedOut
    }

    /// stdout parsed as JSON.
    public func json() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
        guard let dict = object as? [String: Any] else { throw CocoaError(.coderReadCorrupt) }
        return dict
    }
}

extension Process {
    /// The exit status (or the signal that ended it) once the child has exited; nil if it is
    /// still running after `timeout` seconds (0: look once).
    public func exitStatus(within timeout: Double = 0) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            var info = siginfo_t()
            if waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) == 0 {
                if info._sifields._sigchld.si_pid == processIdentifier { return info._sifields._sigchld.si_status }
            } else if errno == ECHILD, !isRunning {
                // Foundation has reaped it and recorded how it ended.
                return terminationStatus
            }
            if Date() >= deadline { return nil }
            usleep(10_000)
        }
    }

    /// True once the child has exited.
    public var hasExited: Bool { exitStatus() != nil }

    /// Waits up to `grace` seconds for the child to exit, then kills it; returns how it ended.
    @discardableResult
    public func finish(within grace: Double) -> Int32 {
        if let status = exitStatus(within: grace) { return status }
        kill(processIdentifier, SIGKILL)
        return exitStatus(within: 30) ?? -1
    }

    /// Sends `signal` and waits up to `grace` seconds for the child to exit, then kills it.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, grace: Double = 15) -> Int32 {
        if hasExited { return exitStatus() ?? -1 }
        kill(processIdentifier, signal)
        return finish(within: grace)
    }
}

/// Runs a command to its end: its output read as it comes (so a full pipe never stalls it),
/// killed after `timeout` seconds. Input, if any, is written to its stdin first.
public func runCommand(_ executable: URL, _ arguments: [String], input: Data? = nil, directory: URL? = nil,
                       environment: [String: String] = [:], timeout: Double = 300) throws -> CommandResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let out = Pipe()
    let err = Pipe()
    let stdin = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(input) }
    try? stdin.fileHandleForWriting.close()

    var outputs: [(fd: Int32, data: [UInt8], open: Bool)] = [
        (out.fileHandleForReading.fileDescriptor, [], true),
        (err.fileHandleForReading.fileDescriptor, [], true),
    ]
    let deadline = Date().addingTimeInterval(timeout)
    var timedOut = false
    var buffer = [UInt8](repeating: 0, count: 65536)
    // Read until both pipes are closed. A pipe another process holds open never closes, so once
    // the child has exited an empty pipe counts as done too.
    while outputs.contains(where: \.open) {
        var fds = outputs.filter(\.open).map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        let ready = poll(&fds, nfds_t(fds.count), 50)
        if ready > 0 {
            for p in fds where p.revents != 0 {
                let i = outputs.firstIndex { $0.fd == p.fd }!
                let n = read(p.fd, &buffer, buffer.count)
                if n > 0 { outputs[i].data += buffer[..<n] } else if n == 0 || errno != EINTR { outputs[i].open = false }
            }
        } else if ready == 0, process.hasExited {
            break
        }
        if !timedOut, Date() >= deadline {
            timedOut = true
            kill(process.processIdentifier, SIGKILL)
        }
    }
    let status = process.finish(within: 30)
    var stderr = String(decoding: outputs[1].data, as: UTF8.self)
    if timedOut { stderr += "\n[test harness: \(executable.lastPathComponent) killed after \(Int(timeout)) s]\n" }
    return CommandResult(status: status, stdout: String(decoding: outputs[0].data, as: UTF8.self), stderr: stderr, timedOut: timedOut)
}
