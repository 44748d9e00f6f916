#if canImport(Glibc)
import Glibc
#endif

/// Starts a thread running `body`: the event loops, the control and ACME threads, the pool of
/// `aasa check`. A plain pthread, not Foundation's `Thread`, so the server needs no run loop.
package func startThread(_ body: sending @escaping () -> Void) -> pthread_t {
    switch tryStartThread(body) {
    case .success(let thread): return thread
    case .failure(let error): preconditionFailure("\(error)")
    }
}

/// Starts a thread running `body`, or says why the system gave none (EAGAIN): for threads a
/// caller can do without (a CDN check), where ``startThread(_:)`` treats it as a bug.
package func tryStartThread(_ body: sending @escaping () -> Void) -> Result<pthread_t, SystemError> {
    final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let r = pthread_create(&thread, nil, { arg in
        Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue().body()
        return nil
    }, box)
    guard r == 0 else {
        Unmanaged<Box>.fromOpaque(box).release()
        return .failure(SystemError("pthread_create", errno: r))
    }
    return .success(thread)
}
