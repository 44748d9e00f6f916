import CLinux
import AASATransport
import AASASessions
#if canImport(Glibc)
import Glibc
#endif

/// A bound listening socket. Every loop watches the same HTTPS and HTTP listeners with
/// EPOLLEXCLUSIVE, so the kernel hands each new connection to one loop.
struct Listener: Sendable {
    let fd: Int32
    let kind: ListenerKind
    let address: SocketAddress
}

/// One epoll loop on its own thread: readiness, accept, deadlines and draining. It knows no
/// TLS and no HTTP: it hands readiness to a ``Connection`` and applies what it answers (the
/// events to wait for, a deadline, or the close).
final class EventLoop {
    private enum Tag: UInt64 {
        case connection = 0
        case listener = 1
        case wake = 2
    }

    /// After accept(2) runs out of descriptors, accepting pauses this long (the listener stays
    /// readable, and a level-triggered loop would spin on it until a descriptor frees).
    static let descriptorPause: Int64 = 500

    let id: Int
    private let epfd: Int32
    private let wake: EventFD
    private let state: ServerState
    private let context: LoopContext
    private let listeners: [Listener]
    /// Each open connection by descriptor, and what the loop keeps for it, in arrays of plain
    /// values beside it (no reference counting when a connection's bookkeeping is touched).
    private var connections: [ServerConnection?] = []
    /// The epoll events registered.
    private var interests: [UInt32] = []
    /// When the connection's deadline is (``noTime``: none).
    private var deadlines: [Int64] = []
    /// The time of its live timer entry (``noTime``: none).
    private var scheduled: [Int64] = []
    private static let noTime = Int64.max
    private var timers = TimerHeap()
    private var generation: Int
    private var nextSerial: UInt64 = 0
    private var listenersActive = false
    /// Accepting resumes at this time after running out of descriptors.
    private var acceptPausedUntil: Int64?
    private var descriptorShortageLogged = false
    /// The drain's phases this loop has applied (``Drain``).
    private var appliedPhase = Drain.Phase.serving

    init(id: Int, state: ServerState, listeners: [Listener], transport: TransportConfiguration, http1: HTTP1Configuration,
         http2: HTTP2Configuration? = nil, log: Log, accessLogFormat: LogFormat) throws(SystemError) {
        self.id = id
        self.epfd = try Epoll.create()
        self.wake = try EventFD()
        self.state = state
        self.listeners = listeners
        self.context = LoopContext(state: state, counters: state.loopCounters[id], transport: transport, http1: http1,
                                   http2: http2, log: log, accessLogFormat: accessLogFormat)
        self.generation = state.snapshots.generation
        try Epoll.add(epfd, wake.fd, events: Epoll.readable, data: Tag.wake.rawValue << 32)
        for l in listeners where l.kind == .admin {
            try Epoll.add(epfd, l.fd, events: Epoll.readable, data: Tag.listener.rawValue << 32 | UInt64(UInt32(bitPattern: l.fd)))
        }
        try resumeListeners()
    }

    deinit {
        close(epfd)
        close(wake.fd)
    }

    /// What wakes the loop from another thread (the drain): the only part of a loop another
    /// thread touches once the loop runs on its own.
    var waker: EventFD { wake }

    // MARK: - The loop

    func run() {
        let capacity: Int32 = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Int(capacity))
        defer { events.deallocate() }
        let clock = context.clock
        while true {
            let n = Epoll.wait(epfd, events, capacity: capacity, timeout: waitTimeout())
            clock.now = monotonicMilliseconds()
            clock.setWallClock(second: wallClockSeconds())
            refreshSnapshot()
            for i in 0..<n {
                let data = events[i].data.u64
                let fd = Int32(truncatingIfNeeded: data & 0xFFFF_FFFF)
                switch Tag(rawValue: data >> 32) {
                case .connection?:
                    if let c = connection(fd) { apply(c, c.handle(.ready(events[i].events))) }
                case .listener?:
                    if let listener = listeners.first(where: { $0.fd == fd }) { accept(listener) }
                case .wake?:
                    wake.drain()
                case nil:
                    break
                }
            }
            context.flushAccessLog()
            expireTimers()
            if let until = acceptPausedUntil, clock.now >= until {
                acceptPausedUntil = nil
                resumeIfRoom()
            }
            if state.phase != appliedPhase, follow(state.phase) { break }
        }
        for case let c? in connections { closeConnection(c) }
        context.flushAccessLog()
    }

    /// Sleep until the earliest deadline; a second at most, so a paused accept is looked at
    /// even when nothing else happens (the drain's phases come with a wake-up).
    private func waitTimeout() -> Int32 {
        var until = context.clock.now + 1000
        if let next = timers.next { until = min(until, next) }
        if let paused = acceptPausedUntil { until = min(until, paused) }
        return Int32(max(0, until - monotonicMilliseconds()))
    }

    private func connection(_ fd: Int32) -> ServerConnection? {
        Int(fd) < connections.count ? connections[Int(fd)] : nil
    }

    private func refreshSnapshot() {
        if state.snapshots.generation != generation {
            (context.snapshot, generation) = state.snapshots.load()
        }
    }

    // MARK: - Accepting

    private func accept(_ listener: Listener) {
        let counted = listener.kind != .admin
        for _ in 0..<64 {
            if counted, state.metrics.openConnections.load(ordering: .relaxed) >= state.maxConnections {
                pauseListeners()
                return
            }
            let fd: Int32
            let address: SocketAddress
            switch Socket.accept(listener.fd) {
            case .accepted(let f, let a):
                (fd, address) = (f, a)
            case .none:
                return
            case .outOfDescriptors(let error):
                if !descriptorShortageLogged {
                    descriptorShortageLogged = true
                    context.log.error("accept: \(error); not accepting for \(EventLoop.descriptorPause) ms at a time until descriptors free (raise `ulimit -n` or lower --max-connections)")
                }
                pauseListeners()
                acceptPausedUntil = context.clock.now + EventLoop.descriptorPause
                return
            }
            descriptorShortageLogged = false
            if Int(fd) >= connections.count {
                let more = Int(fd) + 1 - connections.count + 64
                connections.append(contentsOf: repeatElement(nil, count: more))
                interests.append(contentsOf: repeatElement(0, count: more))
                deadlines.append(contentsOf: repeatElement(EventLoop.noTime, count: more))
                scheduled.append(contentsOf: repeatElement(EventLoop.noTime, count: more))
            }
            nextSerial += 1
            let c = ServerConnection(fd: fd, io: SocketIO(fd: fd), serial: nextSerial, listener: listener.kind, client: address.host, loop: context)
            connections[Int(fd)] = c
            interests[Int(fd)] = Epoll.readable
            deadlines[Int(fd)] = EventLoop.noTime
            scheduled[Int(fd)] = EventLoop.noTime
            if counted { state.metrics.openConnections.add(1, ordering: .relaxed) }
            // One address may not hold every slot (`--max-connections-per-client`,
            // docs/serving.md): over its limit, closed at once.
            if c.admitsAtAccept, !c.admitClient() {
                closeConnection(c)
                continue
            }
            do {
                try Epoll.add(epfd, fd, events: Epoll.readable, data: UInt64(UInt32(bitPattern: fd)))
            } catch {
                closeConnection(c)
                continue
            }
            apply(c, c.handle(.start))
        }
    }

    private func pauseListeners() {
        guard listenersActive else { return }
        for l in listeners where l.kind != .admin { Epoll.remove(epfd, l.fd) }
        listenersActive = false
    }

    /// Registers the client listeners (HTTPS, HTTP). The admin listener is registered once, in
    /// `init`, and never paused: health checks must get through a full server.
    private func resumeListeners() throws(SystemError) {
        guard !listenersActive else { return }
        for l in listeners where l.kind != .admin {
            try Epoll.add(epfd, l.fd, events: Epoll.readable | Epoll.exclusive,
                          data: Tag.listener.rawValue << 32 | UInt64(UInt32(bitPattern: l.fd)))
        }
        listenersActive = true
    }

    private func resumeIfRoom() {
        if !listenersActive, acceptPausedUntil == nil, appliedPhase < .sweeping,
           state.metrics.openConnections.load(ordering: .relaxed) < state.maxConnections {
            try? resumeListeners()
        }
    }

    // MARK: - Applying what a connection answers

    private func apply(_ c: ServerConnection, _ action: ServerConnection.Action) {
        guard case .wait(let want, let deadline) = action else {
            closeConnection(c)
            return
        }
        let i = Int(c.fd)
        if want != interests[i] {
            interests[i] = want
            do {
                try Epoll.modify(epfd, c.fd, events: want, data: UInt64(UInt32(bitPattern: c.fd)))
            } catch {
                closeConnection(c)
                return
            }
        }
        deadlines[i] = deadline ?? EventLoop.noTime
        schedule(c)
    }

    private func schedule(_ c: ServerConnection) {
        let i = Int(c.fd)
        let deadline = deadlines[i]
        guard deadline != EventLoop.noTime, scheduled[i] > deadline else { return }
        scheduled[i] = deadline
        timers.push(TimerHeap.Entry(time: deadline, fd: c.fd, serial: c.serial))
    }

    private func expireTimers() {
        let now = context.clock.now
        while let entry = timers.popDue(now) {
            let i = Int(entry.fd)
            guard let c = connection(entry.fd), c.serial == entry.serial, scheduled[i] == entry.time else { continue }
            scheduled[i] = EventLoop.noTime
            if deadlines[i] != EventLoop.noTime, deadlines[i] > now {
                schedule(c)
            } else {
                apply(c, c.handle(.deadline))
            }
        }
    }

    private func closeConnection(_ c: ServerConnection) {
        guard connection(c.fd) === c else { return }
        Epoll.remove(epfd, c.fd)
        c.release()
        close(c.fd)
        connections[Int(c.fd)] = nil
        if c.facts.listener != .admin { state.metrics.openConnections.subtract(1, ordering: .relaxed) }
        resumeIfRoom()
    }

    // MARK: - Draining

    /// Applies the drain's phases this loop has not applied yet, in order (``Drain``). Returns
    /// true once the loop is to end.
    private func follow(_ phase: Drain.Phase) -> Bool {
        if appliedPhase < .delaying, phase >= .delaying {
            // Every answer from now on is the last on its connection (HTTP/1.1 `Connection:
            // close`, HTTP/2 GOAWAY), and new sessions start that way; the listeners still accept.
            context.draining = true
            appliedPhase = .delaying
            for case let c? in connections where c.facts.listener != .admin {
                apply(c, c.handle(.drain))
            }
        }
        if appliedPhase < .sweeping, phase >= .sweeping {
            // What the kernel already queued for us is taken in and served, a request each:
            // closing the listener would reset it after a balancer had sent it here, and a
            // rolling restart would lose it (a TLS handshake cut, under load).
            if listenersActive {
                for l in listeners where l.kind != .admin { for _ in 0..<16 { accept(l) } }
            }
            for l in listeners where l.kind != .admin { Epoll.remove(epfd, l.fd) }
            listenersActive = false
            // From here a closed connection no longer makes room to accept (``resumeIfRoom()``).
            appliedPhase = .sweeping
            state.releaseListeners()
            // A connection idle through the whole delay closes; one that has not sent its
            // first request yet is a request on its way, and keeps its deadline.
            for case let c? in connections where c.facts.listener != .admin {
                apply(c, c.handle(.closeIdle))
            }
        }
        appliedPhase = phase
        // Every loop stays until the conductor closes them all, so the admin listener (on loop 0)
        // keeps answering /readyz with 503 while others drain.
        return phase == .closed
    }
}
