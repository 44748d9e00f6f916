import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// What went wrong talking to PostgreSQL: the server's message, and whether the connection
/// itself is gone (so the caller reconnects) rather than one statement failing.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public var message: String
    /// SQLSTATE, when the server sent one (`40001`, `23505`, …).
    public var state: String?
    public var connectionLost: Bool

    public var description: String { message }

    public init(message: String, state: String? = nil, connectionLost: Bool) {
        self.message = message
        self.state = state
        self.connectionLost = connectionLost
    }
}

/// One statement's rows, as the server sent them in binary format: `bytea` as its bytes,
/// `text` as UTF-8, integers big-endian (the caller casts to what it reads).
public struct PostgresRows: Sendable {
    public var columns: Int
    /// Row-major; nil for SQL NULL.
    public var values: [[UInt8]?]
    /// Rows a write touched (`UPDATE 3` → 3).
    public var affected: Int

    public var count: Int { columns == 0 ? 0 : values.count / columns }

    public subscript(row: Int, column: Int) -> [UInt8]? { values[row * columns + column] }

    public func text(_ row: Int, _ column: Int) -> String? {
        self[row, column].map { String(decoding: $0, as: UTF8.self) }
    }

    /// A `bigint` (int8) column.
    public func int64(_ row: Int, _ column: Int) -> Int64? {
        guard let b = self[row, column], b.count == 8 else { return nil }
        return b.reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }
}

/// One connection to PostgreSQL through libpq (PostgreSQL's own client, Debian `libpq-dev`).
/// Statements are blocking and parameterised (`$1`, `$2`, as text or bytes); notifications are
/// read without blocking from ``socket`` when it is readable. One thread at a time.
public final class PostgresConnection {
    private let connection: OpaquePointer

    /// Connects with a libpq URI (`postgres://user@host:port/db?sslmode=verify-full`), within
    /// `timeoutSeconds` (libpq's `connect_timeout`).
    public init(url: String, timeoutSeconds: Int = 5) throws(PostgresError) {
        let keys = ["dbname", "connect_timeout", "application_name"]
        let values = [url, String(timeoutSeconds), "aasa"]
        // expand_dbname: the first dbname is a whole connection string, the rest add to it.
        let made = withCStrings(keys) { k in withCStrings(values) { v in PQconnectdbParams(k, v, 1) } }
        guard let made else { throw PostgresError(message: "out of memory", connectionLost: true) }
        connection = made
        // Notices (`relation already exists, skipping`) are not errors: libpq would print them
        // on stderr, mixed into the server's log.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        guard PQstatus(connection) == CONNECTION_OK else {
            // Thrown once every property is set: deinit runs and finishes the connection.
            throw PostgresError(message: PostgresConnection.trimmed(PQerrorMessage(connection)), connectionLost: true)
        }
    }

    deinit { PQfinish(connection) }

    /// The socket, for poll(2) or epoll: readable when a notification (or anything) arrived.
    public var socket: Int32 { PQsocket(connection) }

    public var isConnected: Bool { PQstatus(connection) == CONNECTION_OK }

    /// Runs one statement. Parameters are text, or bytes for `bytea` (sent in binary format);
    /// nil is SQL NULL. Rows come back in binary format.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue?] = []) throws(PostgresError) -> PostgresRows {
        let buffers: [[UInt8]?] = parameters.map { value in
            switch value {
            case .text(let s)?: return Array(s.utf8)
            case .bytes(let b)?: return b
            case nil: return nil
            }
        }
        let formats: [Int32] = parameters.map { if case .bytes? = $0 { return 1 } else { return 0 } }
        let lengths: [Int32] = buffers.map { Int32($0?.count ?? 0) }
        let result: OpaquePointer? = withPointers(buffers) { pointers in
            PQexecParams(connection, sql, Int32(parameters.count), nil, pointers, lengths, formats, 1)
        }
        guard let result else { throw failure() }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            let rows = Int(PQntuples(result)), columns = Int(PQnfields(result))
            var values: [[UInt8]?] = []
            values.reserveCapacity(rows * columns)
            for r in 0..<Int32(rows) {
                for c in 0..<Int32(columns) {
                    if PQgetisnull(result, r, c) == 1 {
                        values.append(nil)
                    } else {
                        let n = Int(PQgetlength(result, r, c))
                        let p = PQgetvalue(result, r, c)!
                        values.append(p.withMemoryRebound(to: UInt8.self, capacity: n) { Array(UnsafeBufferPointer(start: $0, count: n)) })
                    }
                }
            }
            let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
            return PostgresRows(columns: columns, values: values, affected: affected)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PostgresError(message: PostgresConnection.trimmed(PQresultErrorMessage(result)), state: state,
                                connectionLost: PQstatus(connection) != CONNECTION_OK)
        }
    }

    /// Several statements in one string, no parameters (a schema).
    public func run(_ sql: String) throws(PostgresError) {
        guard let result = PQexec(connection, sql) else { throw failure() }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PostgresError(message: PostgresConnection.trimmed(PQresultErrorMessage(result)), state: state,
                                connectionLost: PQstatus(connection) != CONNECTION_OK)
        }
    }

    /// The channels of the notifications that arrived, without blocking. Throws when the
    /// connection is gone.
    public func notifications() throws(PostgresError) -> [String] {
        guard PQconsumeInput(connection) == 1 else { throw failure() }
        var channels: [String] = []
        while let n = PQnotifies(connection) {
            channels.append(String(cString: n.pointee.relname))
            PQfreemem(n)
        }
        return channels
    }

    private func failure() -> PostgresError {
        PostgresError(message: PostgresConnection.trimmed(PQerrorMessage(connection)), connectionLost: PQstatus(connection) != CONNECTION_OK)
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown error" }
        var s = String(cString: message)
        while let last = s.last, last == "\n" || last == " " { s.removeLast() }
        return s.isEmpty ? "unknown error" : s
    }
}

/// A statement's parameter.
public enum PostgresValue: Sendable {
    case text(String)
    /// Sent in binary format: for `bytea`.
    case bytes([UInt8])
}

private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    var owned = strings.map { strdup($0) }
    owned.append(nil)
    defer { for p in owned { free(p) } }
    return owned.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress!) }
}

private func withPointers<R>(_ buffers: [[UInt8]?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
    // Copies that live until the call returns (libpq reads them during PQexecParams only).
    let copies: [UnsafeMutablePointer<CChar>?] = buffers.map { buffer in
        guard let buffer else { return nil }
        // One byte more, a NUL: libpq reads a text-format parameter up to its terminator (the
        // length it is given counts for binary ones only).
        let p = UnsafeMutablePointer<CChar>.allocate(capacity: buffer.count + 1)
        buffer.withUnsafeBytes { raw in
            if raw.count > 0 { UnsafeMutableRawPointer(p).copyMemory(from: raw.baseAddress!, byteCount: raw.count) }
        }
        p[buffer.count] = 0
        return p
    }
    defer { for p in copies { p?.deallocate() } }
    let pointers = copies.map { UnsafePointer($0) }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
}
