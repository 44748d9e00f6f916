import AASAHTTP

/// A protocol session (HTTP/1.1 or HTTP/2) on one connection: a state machine with no
/// sockets. Bytes the transport read go in; requests come out through `respond`; the bytes to
/// write are appended to the connection's ``Output``. It also says what it wants next (more
/// input, to close) and its next deadline. The connection calls it on one loop thread only.
package protocol ProtocolSession: AnyObject {
    /// Takes bytes the transport read and answers every request they complete, appending
    /// responses (or frames) to `output`.
    func receive(_ bytes: UnsafeRawBufferPointer, output: inout Output)
    /// `output` was written out: queue what was waiting behind it (a pipelined request, more
    /// frames), if anything.
    func resume(output: inout Output)
    /// The peer closed its sending side: finish what it asked for, then close.
    func peerClosed(output: inout Output)
    /// The deadline passed: answer or close as the protocol says (408, GOAWAY, …).
    func deadlineReached(output: inout Output)
    /// Graceful stop: every answer from now on is the last on the connection (HTTP/1.1:
    /// `Connection: close`; HTTP/2: GOAWAY, then the streams in flight finish). An idle
    /// connection stays open: a request may be on its way (docs/serving.md, "Logs and signals").
    func drain(output: inout Output)
    /// The end of a drain's delay: close if idle (HTTP/1.1, a connection that has answered a
    /// request and has none in flight). A request on its way now is lost, as with any idle
    /// close; clients that sent one during the delay were told to close already.
    func closeIdle()

    /// Whether the connection should read more now, with `output` unwritten: false while that
    /// is at the session's own high-water mark, or after the session decided to close.
    func wantsInput(_ output: Output) -> Bool
    /// True when the connection must close once `output` is written.
    var isClosing: Bool { get }
    /// Whether to read and discard until the peer closes after the last byte is written
    /// (RFC 9112 §9.6), rather than closing at once.
    var lingersOnClose: Bool { get }
    /// Nothing in flight: no partial request, no unanswered stream.
    var isIdle: Bool { get }
    /// When `deadlineReached` should be called (monotonic milliseconds), if ever.
    var deadline: Int64? { get }
}

/// Where a session sends what it parsed, the same for both protocols: requests go to the
/// handlers, refusals (a head the parser rejected, a request not complete in time) get their
/// error response. Either way the response comes back already recorded in the access log and
/// the metrics, so no session writes a log line itself.
package protocol RequestDispatch: AnyObject {
    /// - Parameter startedMicroseconds: when the request's first byte arrived (monotonic), for
    ///   the duration the access log reports.
    func respond(to request: HTTPRequest, startedMicroseconds: Int64) -> Response
    /// The same, for a request the session keeps in place (see the extension's). A requirement,
    /// so the connection answers it directly: through the extension it was one call more.
    func respond(toRequestIn request: inout HTTPRequest, startedMicroseconds: Int64) -> Response
    func refuse(_ error: HTTPError, startedMicroseconds: Int64) -> Response
    /// For a request that asked `Expect: 100-continue` and whose body is still to come: true
    /// when it is worth its body (`100 Continue` is sent), false when its answer is known
    /// without it (a refused token): it is then answered at once, as RFC 9110 §10.1.1 allows.
    func wantsBody(of request: HTTPRequest) -> Bool
}

extension RequestDispatch {
    /// Answers a request the session keeps in place: passed on from an `inout` parameter, it
    /// is not copied, where one read from a stored property or returned whole was copied first
    /// and the copy destroyed (Swift 6.3; some 500 instructions an HTTP/2 request, callgrind).
    /// The request keeps its Strings until the session fills it again.
    func respond(toRequestIn request: inout HTTPRequest, startedMicroseconds: Int64) -> Response {
        respond(to: request, startedMicroseconds: startedMicroseconds)
    }

    func wantsBody(of request: HTTPRequest) -> Bool { true }
}
