import AASACore
import AASAHTTP
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

public enum LogFormat: String, Sendable, CaseIterable {
    case text
    case json
}

/// Server events (start, listeners, reloads, rejected files) on stderr, one line each, as text
/// or JSON, through ``LogStream/standardError``. The access log is separate: see ``AccessLog``.
public struct Log: Sendable {
    public enum Level: String, Sendable, Comparable {
        case debug, info, warning, error

        private var rank: Int { [.debug: 0, .info: 1, .warning: 2, .error: 3][self]! }
        public static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }
    }

    public var format: LogFormat
    public var minimum: Level

    public init(format: LogFormat = .text, minimum: Level = .info) {
        self.format = format
        self.minimum = minimum
    }

    public func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
    public func info(_ message: @autoclosure () -> String) { write(.info, message) }
    public func warning(_ message: @autoclosure () -> String) { write(.warning, message) }
    public func error(_ message: @autoclosure () -> String) { write(.error, message) }

    private func write(_ level: Level, _ message: () -> String) {
        guard level >= minimum else { return }
        // Through the stderr writer thread: a stderr nobody reads must not stop the caller.
        LogStream.standardError.write(line(level, message()))
    }

    /// One formatted line, newline included.
    package func line(_ level: Level, _ message: String) -> String {
        let time = HTTPDate.iso8601(milliseconds: wallClockMilliseconds())
        switch format {
        case .text:
            // One entry, one line: a peer's bytes quoted in a message (a CA's problem detail, a
            // header) can neither break the line nor reach the terminal as control codes.
            return "\(time) \(level.rawValue) \(message.escapingControlCharacters)\n"
        case .json:
            var w = JSONWriter()
            w.beginObject()
            w.key("time"); w.value(time)
            w.key("level"); w.value(level.rawValue)
            w.key("message"); w.value(message)
            w.endObject()
            return w.output + "\n"
        }
    }
}

/// Blocking, serialized writes to stdout and stderr for the commands (`validate`, `match`, ...),
/// whose output must arrive whole. The server writes through ``LogStream`` instead.
public enum ConsoleOutput {
    private static let lock = Mutex(())

    public static func write(_ text: String, to fd: Int32) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0), to: fd) }
    }

    public static func write(_ bytes: [UInt8], to fd: Int32) {
        bytes.withUnsafeBytes { write($0, to: fd) }
    }

    static package func write(_ raw: UnsafeRawBufferPointer, to fd: Int32) {
        let buffer = raw.bindMemory(to: UInt8.self)
        guard !buffer.isEmpty else { return }
        lock.withLock { _ in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += n
            }
        }
    }
}
