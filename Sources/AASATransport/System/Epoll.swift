import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// epoll(7), the readiness source of every event loop.
package enum Epoll {
    // Computed and inlinable, so the loops in the server's target fold them to constants.
    @inlinable static package var readable: UInt32 { UInt32(EPOLLIN.rawValue) }
    @inlinable static package var writable: UInt32 { UInt32(EPOLLOUT.rawValue) }
    @inlinable static package var hangup: UInt32 { UInt32(EPOLLHUP.rawValue) | UInt32(EPOLLERR.rawValue) }
    /// Only one of the loops sharing a listener is woken per connection (Linux 4.5).
    static package let exclusive = UInt32(1) << 28

    static package func create() throws(SystemError) -> Int32 {
        try check("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }

    static package func add(_ epfd: Int32, _ fd: Int32, events: UInt32, data: UInt64) throws(SystemError) {
        try control(epfd, EPOLL_CTL_ADD, fd, events: events, data: data)
    }

    static package func modify(_ epfd: Int32, _ fd: Int32, events: UInt32, data: UInt64) throws(SystemError) {
        try control(epfd, EPOLL_CTL_MOD, fd, events: events, data: data)
    }

    static package func remove(_ epfd: Int32, _ fd: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &event)
    }

    private static func control(_ epfd: Int32, _ op: Int32, _ fd: Int32, events: UInt32, data: UInt64) throws(SystemError) {
        var event = epoll_event()
        event.events = events
        event.data.u64 = data
        try check("epoll_ctl") { epoll_ctl(epfd, op, fd, &event) }
    }

    /// Waits up to `timeout` ms; returns the number of events written to `events`.
    static package func wait(_ epfd: Int32, _ events: UnsafeMutablePointer<epoll_event>, capacity: Int32, timeout: Int32) -> Int {
        while true {
            let n = epoll_wait(epfd, events, capacity, timeout)
            if n >= 0 { return Int(n) }
            if errno == EINTR { return 0 }
            preconditionFailure("epoll_wait: \(String(cString: strerror(errno)))")
        }
    }
}

/// eventfd(2): wakes a loop from another thread.
package struct EventFD {
    package let fd: Int32

    package init() throws(SystemError) {
        fd = try check("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
    }

    package func signal() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    package func drain() {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }
}

/// Monotonic time in milliseconds, for deadlines.
@inlinable
package func monotonicMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

@inlinable
package func monotonicMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

/// Wall-clock seconds since 1970, for Date headers and logs.
@inlinable
package func wallClockSeconds() -> Int {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int(ts.tv_sec)
}

@inlinable
package func wallClockMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}
