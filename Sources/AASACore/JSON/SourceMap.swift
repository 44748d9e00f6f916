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
public struct SourceMap: Sendable {
    private let bytes: [UInt8]
    /// Offsets at which each line starts. A line ends at LF; a CR before it belongs to the line.
    private let lineStarts: [Int]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var starts = [0]
        for (i, b) in bytes.enumerated() where b == UInt8(ascii: "\n") {
            starts.append(i + 1)
        }
        self.lineStarts = starts
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
        var column = 1
        var i = lineStarts[lo]
        while i < offset {
            // UTF-8 continuation bytes (10xxxxxx) do not start a new scalar.
            if bytes[i] & 0xC0 != 0x80 { column += 1 }
            i += 1
        }
        return SourcePosition(line: lo + 1, column: column)
    }
}
