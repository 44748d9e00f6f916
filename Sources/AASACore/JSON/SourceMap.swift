/// A 1-based line and column in a source file. Columns count Unicode scalars, not bytes,
/// so an editor that counts characters lands on the same spot.
public struct SourcePosition: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public static func < (a: SourcePosition, b: SourcePosition) -> Bool {
        (a.line, a.column) < (b.line, b.column)
    }

    public var description: String { "\(line):\(column)" }
}

/// Turns byte offsets into line and column. The parser only deals in offsets; positions are
/// computed when a diagnostic is made, which keeps the parser's hot loop free of bookkeeping.
///
/// A position costs a binary search over the line starts and a count of at most
/// ``checkpointStride`` bytes: scalars are counted once, at map creation, up to every
/// checkpoint. So a file of one long line with a finding every few bytes costs time linear in
/// its size, not in size × findings.
public struct SourceMap: Sendable {
    private static let checkpointStride = 64
    private let bytes: [UInt8]
    /// Offsets at which each line starts. A line ends at LF; a CR before it belongs to the line.
    private let lineStarts: [Int]
    /// `scalarsBefore[k]`: how many scalars start before offset k · ``checkpointStride``.
    private let scalarsBefore: [Int]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var starts = [0]
        var checkpoints: [Int] = []
        checkpoints.reserveCapacity(bytes.count / SourceMap.checkpointStride + 1)
        var scalars = 0
        for (i, b) in bytes.enumerated() {
            if i % SourceMap.checkpointStride == 0 { checkpoints.append(scalars) }
            if b == UInt8(ascii: "\n") { starts.append(i + 1) }
            // UTF-8 continuation bytes (10xxxxxx) do not start a new scalar.
            if b & 0xC0 != 0x80 { scalars += 1 }
        }
        if bytes.count % SourceMap.checkpointStride == 0 { checkpoints.append(scalars) }
        self.lineStarts = starts
        self.scalarsBefore = checkpoints
    }

    public func position(of offset: Int) -> SourcePosition {
        let offset = min(max(offset, 0), bytes.count)
        // Binary search for the last line start <= offset.
        var lo = 0
        var hi = lineStarts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if lineStarts[mid] <= offset { lo = mid } else { hi = mid - 1 }
        }
        return SourcePosition(line: lo + 1, column: scalars(before: offset) - scalars(before: lineStarts[lo]) + 1)
    }

    /// Scalars that start before `offset`: the checkpoint's count plus the bytes after it.
    private func scalars(before offset: Int) -> Int {
        let k = offset / SourceMap.checkpointStride
        var count = scalarsBefore[k]
        var i = k * SourceMap.checkpointStride
        while i < offset {
            if bytes[i] & 0xC0 != 0x80 { count += 1 }
            i += 1
        }
        return count
    }
}
