/// What both protocols' request parsers share (HTTP/1.1's ``RequestParser``, an HTTP/2
/// session's field reader): the targets served often, made into Strings once, and a field's
/// last value remembered with its bytes, so a client's repeated values cost a comparison.

/// Request targets a server expects, each made into a String once (the paths it serves files
/// at). A request for one of them is handed that String: parsing it makes none, and a handler
/// comparing the path with the same String finds them equal without reading the bytes.
public final class InternedTargets: Sendable {
    /// Every target's bytes, one after the other, and where each ends; kept apart from the
    /// Strings so a lookup touches no reference count.
    private let bytes: [UInt8]
    private let ends: [Int]
    private let texts: [String]

    public init(_ targets: [String]) {
        bytes = targets.flatMap { Array($0.utf8) }
        var end = 0
        ends = targets.map { end += $0.utf8.count; return end }
        texts = targets
    }

    /// The String for `candidate` if it is one of the targets: lengths first, then the bytes.
    public func text(for candidate: UnsafeBufferPointer<UInt8>) -> String? {
        let found: Int? = bytes.withUnsafeBufferPointer { all in
            ends.withUnsafeBufferPointer { ends in
                var start = 0
                for (i, end) in ends.enumerated() {
                    if end - start == candidate.count,
                       ByteScan.equal(UnsafeBufferPointer(rebasing: all[start..<end]), candidate) { return i }
                    start = end
                }
                return nil
            }
        }
        return found.map { texts[$0] }
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
