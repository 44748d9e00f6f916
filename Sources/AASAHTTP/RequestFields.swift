/// What both protocols' request parsers share (HTTP/1.1's ``RequestParser``, an HTTP/2
/// session's field reader): the targets served often, made into Strings once, and a field's
/// last value remembered with its bytes, so a client's repeated values cost a comparison.

/// Request targets a server expects, each made into a String once (the paths it serves files
/// at). A request for one of them is handed that String: parsing it makes none, and a handler
/// comparing the path with the same String finds them equal without reading the bytes.
public final class InternedTargets: @unchecked Sendable {
    /// Every target's bytes, one after the other, and where each starts and how long it is; kept
    /// apart from the Strings so a lookup touches no reference count, and in memory of their own
    /// so it reads them without an array's closures and bounds checks (some 130 instructions a
    /// lookup as arrays, callgrind). Written in `init`, never changed (hence Sendable), freed in
    /// `deinit`.
    private let bytes: UnsafeMutablePointer<UInt8>
    private let spans: UnsafeMutablePointer<(start: Int, count: Int)>
    private let texts: [String]

    public init(_ targets: [String]) {
        let all = targets.flatMap { Array($0.utf8) }
        bytes = .allocate(capacity: max(all.count, 1))
        bytes.initialize(from: all, count: all.count)
        spans = .allocate(capacity: max(targets.count, 1))
        var start = 0
        for (i, target) in targets.enumerated() {
            (spans + i).initialize(to: (start, target.utf8.count))
            start += target.utf8.count
        }
        texts = targets
    }

    deinit {
        bytes.deallocate()
        spans.deallocate()
    }

    /// The String for `candidate` if it is one of the targets: lengths first, then the bytes.
    public func text(for candidate: UnsafeBufferPointer<UInt8>) -> String? {
        for i in 0..<texts.count {
            let span = spans[i]
            if span.count == candidate.count, ByteScan.equal(UnsafeBufferPointer(start: bytes + span.start, count: span.count), candidate) {
                return texts[i]
            }
        }
        return nil
    }
}

/// A field value's bytes and the String made of them, for the next request that sends the same
/// (the request parser's Host and User-Agent; an HTTP/2 session's, per connection).
public struct RememberedField: Sendable {
    private var bytes: [UInt8] = []
    private var text: String?

    public init() {}

    public func value(for bytes: UnsafeBufferPointer<UInt8>) -> String? {
        // The bytes first: the String is touched (retained) only when it is the answer.
        guard self.bytes.count == bytes.count, self.bytes.withUnsafeBufferPointer({ ByteScan.equal($0, bytes) }) else { return nil }
        return text
    }

    public mutating func remember(_ bytes: UnsafeBufferPointer<UInt8>, as text: String) {
        self.bytes = Array(bytes)
        self.text = text
    }
}
