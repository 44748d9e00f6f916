import AASACore
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// A listening socket another process made and passed down: which listener it is.
public struct PassedListener: Sendable, Equatable {
    public let fd: Int32
    public let kind: ListenerKind

    public init(fd: Int32, kind: ListenerKind) {
        self.fd = fd
        self.kind = kind
    }
}

/// systemd's socket activation, read as sd_listen_fds(3) describes it, without libsystemd:
/// `LISTEN_PID` names the process the sockets are for (another process's are not ours),
/// `LISTEN_FDS` counts them from descriptor 3 on, and `LISTEN_FDNAMES` names them, colon-
/// separated, from the socket unit's `FileDescriptorName=` (docs/deployment.md, "systemd").
/// The names say which listener each is: `https`, `http` or `admin`; a single socket with no
/// name (systemd's `unknown`) is the HTTPS listener.
public enum SocketActivation {
    public struct Problem: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// SD_LISTEN_FDS_START.
    static let firstDescriptor: Int32 = 3

    /// The listeners the three variables describe, for the process `ownPID`; none when the
    /// variables are unset or meant for another process.
    public static func listeners(pid: String?, count: String?, names: String?, ownPID: Int32) throws(Problem) -> [PassedListener] {
        guard let pid, let count else { return [] }
        guard let target = Int32(pid), target > 0 else { throw Problem(description: "LISTEN_PID is not a process id: \(pid)") }
        guard target == ownPID else { return [] }
        // A bound on what a peer-free but hand-set variable may ask for: far more than any unit passes.
        guard let n = Int32(count), (0...4096).contains(n) else { throw Problem(description: "LISTEN_FDS is not a count of descriptors: \(count)") }
        guard n > 0 else { return [] }
        let given = names.map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? Array(repeating: "unknown", count: Int(n))
        guard given.count == Int(n) else {
            throw Problem(description: "LISTEN_FDNAMES names \(given.count) sockets, LISTEN_FDS passes \(n)")
        }
        if n == 1, given[0] == "unknown" || given[0].isEmpty {
            return [PassedListener(fd: firstDescriptor, kind: .https)]
        }
        var listeners: [PassedListener] = []
        for (i, name) in given.enumerated() {
            let fd = firstDescriptor + Int32(i)
            guard let kind = ListenerKind(passedName: name) else {
                let shown = name.isEmpty || name == "unknown" ? "no name" : "the name \(name.escapingControlCharacters)"
                throw Problem(description: "passed socket \(i + 1) of \(n) (descriptor \(fd)) has \(shown): set FileDescriptorName=https, http or admin in the socket unit")
            }
            if kind == .admin, listeners.contains(where: { $0.kind == .admin }) {
                throw Problem(description: "two passed sockets are named admin: there is one admin listener")
            }
            listeners.append(PassedListener(fd: fd, kind: kind))
        }
        return listeners
    }

    /// Reads the variables and unsets them, as sd_listen_fds(unset_environment=1) does, so a
    /// process this one starts does not take the sockets for its own.
    public static func take() throws(Problem) -> [PassedListener] {
        func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        let (pid, count, names) = (variable("LISTEN_PID"), variable("LISTEN_FDS"), variable("LISTEN_FDNAMES"))
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        return try listeners(pid: pid, count: count, names: names, ownPID: getpid())
    }
}

extension ListenerKind {
    /// The listener a passed socket's name (`FileDescriptorName=`) stands for.
    init?(passedName: String) {
        switch passedName {
        case "https": self = .https
        case "http": self = .http
        case "admin": self = .admin
        default: return nil
        }
    }
}
