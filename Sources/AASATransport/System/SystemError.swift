#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call, and errno.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let errno: Int32

    public init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call): \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// The result of a call on a non-blocking descriptor.
package enum IOResult<T> {
    case done(T)
    case wouldBlock
}

/// Every system call goes through here: EINTR is retried, EAGAIN becomes `.wouldBlock`, and
/// EBADF/EFAULT, which only a bug can cause, stop the process (swift-nio does the same).
@inline(__always)
package func syscall<T: FixedWidthInteger>(_ name: String, blocking: Bool = false, _ body: () -> T) throws(SystemError) -> IOResult<T> {
    while true {
        let r = body()
        if r >= 0 { return .done(r) }
        let e = Glibc.errno
        switch e {
        case EINTR: continue
        case EAGAIN where !blocking: return .wouldBlock
        case EBADF, EFAULT: preconditionFailure("\(name): \(String(cString: strerror(e))): a bug, not a runtime condition")
        default: throw SystemError(name, errno: e)
        }
    }
}

/// A call that never returns EAGAIN (setup calls).
@inline(__always)
@discardableResult
package func check<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> T {
    switch try syscall(name, blocking: true, body) {
    case .done(let r): return r
    case .wouldBlock: throw SystemError(name, errno: EAGAIN)
    }
}
