import COpenSSL

/// An OpenSSL failure: the call, and OpenSSL's error queue at the time.
public struct TLSError: Error, CustomStringConvertible, Sendable {
    public let description: String

    package init(_ call: String) {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix(while: { $0 != 0 }).map(UInt8.init), as: UTF8.self))
        }
        description = messages.isEmpty ? "\(call) failed" : "\(call): \(messages.joined(separator: "; "))"
    }

    package init(message: String) {
        description = message
    }

    /// Empties this thread's OpenSSL error queue, before a call whose outcome `SSL_get_error`
    /// reads. Looked at first: the queue is almost always empty already, and clearing it
    /// touches all its slots (ERR_clear_error was ~150 instructions a call, several calls a
    /// request, callgrind); `SSL_get_error` asks the same `ERR_peek_error`.
    static package func clearQueue() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }
}

/// OpenSSL, set up once at the start of the process without its exit-time clean-up
/// (`OPENSSL_INIT_NO_ATEXIT`, OPENSSL_init_crypto(3)): threads that nobody joins (ACME, the CDN
/// watch, the store's follower) may still be inside OpenSSL when `exit` runs, and the clean-up
/// would free the locks under them (a crash at exit that ThreadSanitizer caught). The kernel
/// takes back what the process held anyway.
public func initializeOpenSSL() {
    _ = OPENSSL_init_ssl(UInt64(OPENSSL_INIT_NO_ATEXIT), nil)
}
