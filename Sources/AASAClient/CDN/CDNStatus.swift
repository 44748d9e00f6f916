import AASACore
import AASAHTTP

/// What is known of one site's copy at Apple's CDN (docs/apple-view.md), as the server's and
/// the monitor's `/status` show it. Times are wall-clock milliseconds.
public struct CDNStatus: Sendable, Equatable {
    public enum State: String, Sendable, CaseIterable {
        /// 200 with the same JSON as the version served now (compared as parsed values).
        case current
        /// 200 with other content: devices still get an older file.
        case stale
        /// Any other status: the CDN has no good copy (its fetch was refused, timed out, …).
        case failing
        /// No HTTP answer from the CDN at all.
        case unreachable
        /// Not checked yet.
        case pending
    }

    public var state: State
    /// When `state` began.
    public var since: Int64
    public var checkedAt: Int64?
    public var httpStatus: Int?
    /// `Apple-Failure-Reason` verbatim; for `unreachable`, the cause: dns, connect, tls or timeout.
    public var failureReason: String?
    /// `Apple-Failure-Details` verbatim; for `unreachable`, what the client saw.
    public var failureDetails: String?
    /// `Age` and `Cache-Control: max-age` as sent, in seconds.
    public var age: Int?
    public var maxAge: Int?
    /// The apps and keys that differ (only when `stale`), as `aasa check` names them.
    public var differs: [String] = []

    package static func pending(since: Int64) -> CDNStatus {
        CDNStatus(state: .pending, since: since)
    }

    package func write(to w: inout JSONWriter) {
        w.beginObject()
        w.key("state"); w.value(state.rawValue)
        w.key("since"); w.value(HTTPDate.iso8601(milliseconds: since))
        w.key("checkedAt"); w.value(checkedAt.map { HTTPDate.iso8601(milliseconds: $0) })
        w.key("httpStatus"); w.value(httpStatus)
        w.key("failureReason"); w.value(failureReason)
        w.key("failureDetails"); w.value(failureDetails)
        w.key("age"); w.value(age)
        w.key("maxAge"); w.value(maxAge)
        w.key("differs")
        if state == .pending {
            w.null()
        } else {
            w.beginArray()
            for d in differs { w.value(d) }
            w.endArray()
        }
        w.endObject()
    }
}

/// One answer from the CDN, or the failure to get one, reduced to what the watch keeps.
package struct CDNAnswer: Sendable, Equatable {
    package enum Outcome: Sendable, Equatable {
        case response(status: Int, body: [UInt8])
        /// `dns`, `connect`, `tls` or `timeout`, and what the client said.
        case unreachable(cause: String, message: String)
    }

    package var outcome: Outcome
    package var failureReason: String?
    package var failureDetails: String?
    package var age: Int?
    package var maxAge: Int?

    package init(outcome: Outcome, failureReason: String? = nil, failureDetails: String? = nil, age: Int? = nil, maxAge: Int? = nil) {
        self.outcome = outcome
        self.failureReason = failureReason
        self.failureDetails = failureDetails
        self.age = age
        self.maxAge = maxAge
    }

    package init(response: HTTPResponse) {
        self.init(head: response.head, body: response.body)
    }

    package init(head: HTTPResponseHead, body: [UInt8]) {
        self.init(outcome: .response(status: head.status, body: body),
                  failureReason: head["Apple-Failure-Reason"], failureDetails: head["Apple-Failure-Details"],
                  age: CDNAnswer.seconds(head["Age"]), maxAge: CDNAnswer.maxAge(head["Cache-Control"]))
    }

    package init(error: HTTPClientError) {
        // The CDN answered, but the body did not come whole (over the limit, cut short): the
        // status and headers still say what it holds; the missing body is not the file.
        if let head = error.head, !error.isTimeout {
            self.init(head: head, body: [])
            return
        }
        let cause: String
        switch error.phase {
        case _ where error.isTimeout: cause = "timeout"
        case .resolve: cause = "dns"
        case .connect: cause = "connect"
        case .tls: cause = "tls"
        // Connected, but the answer broke off or was not HTTP: the connection failed us.
        case .response: cause = "connect"
        }
        self.init(outcome: .unreachable(cause: cause, message: error.message))
    }

    /// The CDN's numbers are a peer's: at most ten digits, so no arithmetic on them overflows.
    package static func seconds(_ text: String?) -> Int? {
        guard let text else { return nil }
        let digits = text.trimmedSpaces()
        guard !digits.isEmpty, digits.utf8.count <= 10, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(digits)
    }

    /// `max-age=N` of a Cache-Control field (RFC 9111 §5.2.2.1; a quoted value is accepted too).
    package static func maxAge(_ cacheControl: String?) -> Int? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { String($0).trimmedSpaces() }
            guard parts.count == 2, parts[0].lowercased() == "max-age" else { continue }
            var value = parts[1]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return seconds(value)
        }
        return nil
    }

    /// The state this answer means for the file served now, and what differs.
    package func evaluate(served: AASAFile?) -> (state: CDNStatus.State, differs: [String]) {
        switch outcome {
        case .unreachable:
            return (.unreachable, [])
        case .response(let status, _) where status != 200:
            return (.failing, [])
        case .response(_, let body):
            switch CDNCopy.compare(cdnBody: body, origin: served) {
            case .same: return (.current, [])
            case .differs(let differences): return (.stale, differences)
            case .cdnNotJSON: return (.stale, ["the CDN's copy is not JSON"])
            // No file at all: the monitor before an origin served a good one.
            case .originUnreadable: return (.stale, [served == nil ? "the origin has served no good file to compare with" : "the file served is not JSON"])
            }
        }
    }

    /// The status after this answer, for the file served now; `previous` gives `since`.
    package func status(served: AASAFile?, previous: CDNStatus, now: Int64) -> CDNStatus {
        let (state, differs) = evaluate(served: served)
        var s = CDNStatus(state: state, since: state == previous.state ? previous.since : now, checkedAt: now)
        s.differs = differs
        s.age = age
        s.maxAge = maxAge
        switch outcome {
        case .response(let status, _):
            s.httpStatus = status
            s.failureReason = failureReason
            s.failureDetails = failureDetails
        case .unreachable(let cause, let message):
            s.failureReason = cause
            s.failureDetails = message
        }
        return s
    }
}

/// `3h12m`, `4m05s`, `12s`, `2d3h`: how long a state lasted, for the log.
package func durationText(milliseconds: Int64) -> String {
    let s = max(0, milliseconds / 1000)
    let (d, h, m, sec) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60, s % 60)
    if d > 0 { return "\(d)d\(h)h" }
    if h > 0 { return "\(h)h\(m)m" }
    if m > 0 { return "\(m)m\(sec < 10 ? "0" : "")\(sec)s" }
    return "\(sec)s"
}

extension String {
    fileprivate func trimmedSpaces() -> String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return String(s)
    }
}
