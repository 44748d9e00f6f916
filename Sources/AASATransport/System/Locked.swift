#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex, for state that several threads share.
///
/// Not `Synchronization.Mutex`: on Linux that is a bare futex, which ThreadSanitizer does not
/// intercept, so TSan sees no ordering between two threads that take it and reports the value
/// it guards as a data race (a loop counting a request against `/metrics` reading the counts).
/// TSan intercepts `pthread_mutex_lock`, and uncontended it costs the same: one atomic each
/// way. The mutex lives on the heap because pthread objects must not move.
/// `@unchecked Sendable`: it wraps a `pthread_mutex_t`, and `Value` is only reached under it.
public final class Locked<Value>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        let r = pthread_mutex_init(mutex, nil)
        precondition(r == 0, "pthread_mutex_init: \(r)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Inlinable: the loops count every request through one, from the server's target.
    @inlinable
    public func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
