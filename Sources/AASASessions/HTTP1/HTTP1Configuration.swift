import AASAHTTP

/// HTTP/1.1 settings (docs/serving.md, "HTTP/1.1 and limits"), handed to every ``HTTP1Session``.
/// Times in milliseconds.
public struct HTTP1Configuration: Sendable {
    /// Request line and header section limits, checked as bytes arrive.
    public var limits = HTTPLimits()
    /// The paths the server serves often: a request for one of them makes no String.
    public var targets = InternedTargets([])
    /// A request head not complete this long after its first byte is answered with 408. The
    /// same time bounds how long a new connection may take to send its first byte.
    public var headerTimeout: Int64 = 10_000
    /// A keep-alive connection with nothing in flight closes after this long.
    public var idleTimeout: Int64 = 60_000
    /// Bodies up to this size are copied behind their head in one buffer (one write); larger
    /// ones are written straight from the site's prepared bytes.
    public var copyLimit = 16 * 1024
    /// Stop answering pipelined requests while this much response is unsent (a client that
    /// sends but does not read cannot make the server buffer more).
    public var outputHighWater = 256 * 1024
    /// Request bodies are kept and handed to the handler with the request (the admin listener's
    /// write API, docs/platforms.md), up to `limits.maxBody`; otherwise they are read and discarded.
    public var keepsBodies = false

    public init(targets: InternedTargets = InternedTargets([])) { self.targets = targets }

    /// The admin listener's: these settings with bodies kept, up to 1 MiB (a file written
    /// through the API).
    public var admin: HTTP1Configuration {
        var c = self
        c.keepsBodies = true
        c.limits.maxBody = 1024 * 1024
        return c
    }
}
