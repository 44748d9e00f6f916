/// A graceful stop as one state machine with no sockets and no clock of its own: the phases a
/// server goes through after SIGTERM/SIGINT (docs/deployment.md, "Restarts that lose nothing").
///
/// ```
/// serving ─signal─▶ delaying ─delay over, or a second signal─▶ sweeping ─every loop swept─▶ finishing ─nothing open─▶ closed
///                  /readyz 503;         listeners leave the loops; each         requests in flight     every connection
///                  listeners accept;    accepts what the kernel queued,         finish                 closed; the loops
///                  each answer closes   then closes its idle connections                               end
///                  its connection
/// ```
/// The grace (`--shutdown-grace`) starts when the delay ends: whatever is still open then is
/// closed, so the process ends within delay + grace of the first signal. The control thread
/// owns the value and publishes its phase; each loop applies the phases it has not applied yet,
/// in order (``EventLoop``).
struct Drain: Equatable {
    enum Phase: UInt8, Comparable {
        /// No signal yet.
        case serving
        /// `/readyz` answers 503 so balancers stop sending here; the listeners still accept and
        /// every request is answered, each answer the last on its connection (HTTP/1.1
        /// `Connection: close`, HTTP/2 GOAWAY).
        case delaying
        /// The loops stop watching the listeners, accept what the kernel already queued (never
        /// reset), close their idle connections, and let the listeners go.
        case sweeping
        /// Requests in flight finish.
        case finishing
        /// Everything still open is closed; the loops end.
        case closed

        static func < (a: Phase, b: Phase) -> Bool { a.rawValue < b.rawValue }
    }

    /// `--drain-delay`, in milliseconds.
    let delay: Int64
    /// `--shutdown-grace`, in milliseconds.
    let grace: Int64
    /// How long the loops get to sweep before the listeners are closed for them (a loop busy
    /// with one long turn must not keep the listeners, and their queue, open to the end).
    static let sweepLimit: Int64 = 2_000

    private(set) var phase = Phase.serving
    private var delayEnds: Int64 = 0
    private var sweepEnds: Int64 = 0
    private var graceEnds: Int64 = 0

    init(delay: Int64, grace: Int64) {
        self.delay = max(0, delay)
        self.grace = max(0, grace)
    }

    /// SIGTERM or SIGINT. The first starts the delay; one during the delay skips what is left of
    /// it; later ones change nothing (the grace bounds the rest).
    mutating func signal(now: Int64) {
        switch phase {
        case .serving:
            phase = .delaying
            delayEnds = now + delay
        case .delaying:
            delayEnds = now
        case .sweeping, .finishing, .closed:
            break
        }
        _ = advance(now: now, swept: false, openConnections: .max)
    }

    /// Moves on as far as time and the loops allow: `swept` when every loop has taken its queue
    /// and let the listeners go, `openConnections` the client connections still open. Returns
    /// whether the phase changed.
    @discardableResult
    mutating func advance(now: Int64, swept: Bool, openConnections: Int) -> Bool {
        let before = phase
        while true {
            switch phase {
            case .delaying where now >= delayEnds:
                phase = .sweeping
                sweepEnds = now + min(Drain.sweepLimit, grace)
                graceEnds = now + grace
            case .sweeping where swept || now >= sweepEnds:
                phase = .finishing
            case .finishing where openConnections == 0 || now >= graceEnds:
                phase = .closed
            default:
                return phase != before
            }
        }
    }

    /// When ``advance(now:swept:openConnections:)`` should next be called even if nothing
    /// happens: the end of the delay; while the loops sweep and finish, every `poll`
    /// milliseconds until the grace ends. nil before a signal and once closed.
    func wakeAt(now: Int64, poll: Int64 = 10) -> Int64? {
        switch phase {
        case .serving, .closed: return nil
        case .delaying: return delayEnds
        case .sweeping: return min(now + poll, sweepEnds)
        case .finishing: return min(now + poll, graceEnds)
        }
    }

    /// When the grace ends (once the delay is over): the time by which the process is done.
    var deadline: Int64? { phase >= .sweeping ? graceEnds : nil }
}
