import AASATransport

/// Runs a ``Drain`` on the control thread, from the first SIGTERM/SIGINT to its end: publishes
/// each phase to the loops (``ServerState/phase``) and wakes them, tells the state machine what
/// the loops report (swept, connections open), and takes a second signal, which skips what is
/// left of the delay.
struct DrainConductor {
    let state: ServerState
    let wakers: [EventFD]
    let log: Log

    /// Returns once every loop was told to close. `nextSignal` waits at most the milliseconds
    /// given for another SIGTERM/SIGINT and says whether one came.
    func run(delay: Int64, grace: Int64, nextSignal: (Int32) -> Bool) {
        var drain = Drain(delay: delay, grace: grace)
        drain.signal(now: monotonicMilliseconds())
        var published = Drain.Phase.serving
        publish(drain, &published)
        while drain.phase != .closed {
            let now = monotonicMilliseconds()
            let wait = drain.wakeAt(now: now).map { max(0, $0 - now) } ?? 1_000
            if nextSignal(Int32(min(wait, 1_000))) {
                if drain.phase == .delaying { log.info("second signal: skipping the rest of the drain delay") }
                drain.signal(now: monotonicMilliseconds())
            }
            drain.advance(now: monotonicMilliseconds(), swept: state.loopsSwept,
                          openConnections: state.metrics.openConnections.load(ordering: .relaxed))
            publish(drain, &published)
        }
    }

    private func publish(_ drain: Drain, _ published: inout Drain.Phase) {
        guard drain.phase != published else { return }
        if published < .delaying, drain.phase == .delaying {
            log.info("stopping: /readyz answers 503; accepting for \(formatSeconds(drain.delay)) more so balancers stop sending here (--drain-delay); each answer closes its connection")
        }
        if published < .finishing, drain.phase >= .finishing {
            // A loop that did not sweep in time does not keep the listeners open.
            state.closeClientListeners()
            // Logged once new connections are refused, which is what a reader of the line expects.
            log.info("draining: finishing requests in flight (grace \(formatSeconds(drain.grace)))")
        }
        published = drain.phase
        state.publish(drain.phase)
        for waker in wakers { waker.signal() }
    }

    private func formatSeconds(_ milliseconds: Int64) -> String {
        milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }
}
