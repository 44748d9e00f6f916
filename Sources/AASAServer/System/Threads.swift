#if canImport(Glibc)
import Glibc
#endif

/// Starts a thread running `body`: the event loops, the control and ACME threads, the pool of
/// `aasa check`. A plain pthread, not Foundation's `Thread`, so the server needs no run loop.
func startThread(_ body: @escaping () -> Void) -> pthread_t {
    final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let r = pthread_create(&thread, nil, { arg in
        let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
        box.body()
        return nil
    }, box)
    precondition(r == 0, "pthread_create: \(r)")
    return thread
}
