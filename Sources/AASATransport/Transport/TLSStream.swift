import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One end of a TLS connection over a non-blocking socket: the server's end of a client
/// connection, or the client's end (`aasa check`, the ACME client). It owns the `SSL` object
/// and every OpenSSL detail; the caller owns the socket and waits for the readiness that
/// `.wantRead` / `.wantWrite` name — for a read *or* a write, since a TLS read may need to
/// write (a key update) and a write may need to read.
final package class TLSStream {
    /// The outcome of one handshake step, read or write.
    package enum Progress: Equatable {
        /// Bytes read or written (0 for a finished handshake).
        case done(Int)
        /// Wait until the socket is readable, then call again.
        case wantRead
        /// Wait until the socket is writable, then call again.
        case wantWrite
        /// The peer closed the stream: close_notify, or a TCP close without one. The server's
        /// end treats both as an orderly end (SSL_OP_IGNORE_UNEXPECTED_EOF); the client's end
        /// tells them apart through ``closedWithoutNotify``.
        case closed
        /// A protocol or system failure; the stream is unusable.
        case failed(String)
    }

    package let ssl: OpaquePointer
    let isClient: Bool
    /// While a write of more than one record is under way on the server's end: a buffering BIO
    /// over the socket, so the records of a large body leave in one write(2) instead of one
    /// each (OpenSSL writes every 16 KB record with its own call). Made for such a write and
    /// freed once its bytes are out, so an idle connection holds no output buffer.
    private var writeBuffer: OpaquePointer?
    /// The last write asked the buffer to hold its records for the write that follows
    /// (``write(_:count:moreFollows:)``).
    private var holding = false
    /// Below glibc's default mmap threshold (128 KiB): a buffer per large response must not
    /// cost an mmap and an munmap.
    static let writeBufferSize = 112 * 1024
    /// One record's worth: a write this large or smaller goes straight to the socket.
    static let recordSize = 16 * 1024
    /// Plaintext encrypted into the buffer per write: six records, whose ciphertext (each
    /// record adds at most a few hundred bytes) fits the buffer.
    static let batchBytes = 6 * recordSize

    /// What the server's handshake callbacks read (``HandshakeData``), kept alive until
    /// ``endHandshake()``.
    private var handshakeCertificates: CertificateStore?
    private var handshakeSettings: TLSServerSettings?

    /// The server's end, in the context of `settings`; its certificate callback picks from
    /// `certificates` (SNI exact, then wildcard, then the default certificate).
    package init(server settings: TLSServerSettings, certificates: CertificateStore, fd: Int32) throws(TLSError) {
        TLSError.clearQueue()
        guard let ssl = SSL_new(settings.context) else { throw TLSError("SSL_new") }
        SSL_set_fd(ssl, fd)
        SSL_set_accept_state(ssl)
        HandshakeData.set(ssl, certificates: certificates, settings: settings)
        self.ssl = ssl
        self.isClient = false
        handshakeCertificates = certificates
        handshakeSettings = settings
    }

    /// The client's end, verifying the peer for `serverName` (SNI and the host-name check).
    package init(client: TLSClientContext, fd: Int32, serverName: String) throws(TLSError) {
        TLSError.clearQueue()
        guard let ssl = SSL_new(client.context) else { throw TLSError("SSL_new") }
        SSL_set_fd(ssl, fd)
        SSL_set_connect_state(ssl)
        // An IP literal is not sent as SNI (RFC 6066 §3) but is still what the certificate
        // must name.
        let isAddress = serverName.contains(":") || serverName.allSatisfy { $0.isNumber || $0 == "." }
        if !isAddress, aasa_SSL_set_tlsext_host_name(ssl, serverName) != 1 {
            SSL_free(ssl)
            throw TLSError("SSL_set_tlsext_host_name")
        }
        // Set even when the context does not enforce verification: the verdict then still
        // covers the name (``verificationFailure``).
        let ok = isAddress ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) : SSL_set1_host(ssl, serverName)
        if ok != 1 {
            SSL_free(ssl)
            throw TLSError("setting the name to verify")
        }
        self.ssl = ssl
        self.isClient = true
    }

    deinit { SSL_free(ssl) }

    /// One step of the handshake. On the server, plain HTTP sent to the TLS port is
    /// `.failed` with `receivedPlainHTTP` true.
    package func handshake() -> Progress {
        TLSError.clearQueue()
        let r = SSL_do_handshake(ssl)
        if r == 1 { return .done(0) }
        return progress(after: r)
    }

    /// Once the server's handshake is done: the certificate it served for the name the client
    /// asked for. The callbacks' references are dropped.
    package func endHandshake() -> TLSCertificate? {
        let certificate = handshakeCertificates?.select(serverName: serverName)
        HandshakeData.clear(ssl)
        handshakeCertificates = nil
        handshakeSettings = nil
        return certificate
    }

    /// Reads up to `count` bytes.
    package func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Progress {
        var n = 0
        if SSL_read_ex(ssl, buffer, count, &n) == 1 { return .done(n) }
        return progressAfterFailedCall { SSL_read_ex(ssl, buffer, count, &n) == 1 ? n : nil }
    }

    /// Writes up to `count` bytes (partial writes allowed: SSL_MODE_ENABLE_PARTIAL_WRITE).
    /// After `.wantWrite`/`.wantRead` the same bytes must be offered again. On the server's
    /// end, the records of a write larger than one record may be left in the write buffer
    /// (``hasPendingOutput``): ``flushPendingOutput()`` sends them. `moreFollows`: a large
    /// write comes next (a response's head before its body), and this one's records wait in
    /// the buffer to leave with it, in one write(2) instead of two.
    package func write(_ bytes: UnsafeRawPointer, count: Int, moreFollows: Bool = false) -> Progress {
        if writeBuffer != nil, !holding {
            // What the last write left goes first; nothing new is taken until it is out.
            let flushed = flushPendingOutput()
            guard case .done = flushed else { return flushed }
        }
        holding = false
        if count > TLSStream.recordSize || moreFollows, !isClient { startBuffering() }
        var n = 0
        if SSL_write_ex(ssl, bytes, count, &n) != 1 {
            let after = progressAfterFailedCall { SSL_write_ex(ssl, bytes, count, &n) == 1 ? n : nil }
            guard case .done = after else { return after }
        }
        guard writeBuffer != nil else { return .done(n) }
        if moreFollows, n == count {
            holding = true
            return .done(n)
        }
        // With partial writes OpenSSL returns after each record: more records go into the
        // buffer, up to what it holds without writing through, then all leave in one write.
        var total = n
        while total < count, total + TLSStream.recordSize <= TLSStream.batchBytes {
            guard SSL_write_ex(ssl, bytes + total, count - total, &n) == 1 else {
                // Taken so far is taken; the rest is offered again after the flush.
                TLSError.clearQueue()
                break
            }
            total += n
        }
        if case .failed(let reason) = flushPendingOutput() { return .failed(reason) }
        return .done(total)
    }

    /// Ciphertext taken by ``write(_:count:)`` and not yet handed to the socket.
    package var hasPendingOutput: Bool { writeBuffer != nil }

    /// Hands the write buffer's ciphertext to the socket; `.done(0)` once it is all out (the
    /// buffer is then freed), `.wantWrite` while the socket takes no more.
    package func flushPendingOutput() -> Progress {
        guard let buffer = writeBuffer else { return .done(0) }
        TLSError.clearQueue()
        holding = false
        if aasa_BIO_flush(buffer) == 1 {
            stopBuffering()
            return .done(0)
        }
        if aasa_BIO_should_retry(buffer) != 0 { return .wantWrite }
        let reason = errno == 0 ? "TLS write failed" : String(cString: strerror(errno))
        TLSError.clearQueue()
        return .failed(reason)
    }

    /// Puts a buffering BIO between SSL and the socket for writes. The socket BIO stays SSL's
    /// read BIO as well: both hold a reference to it.
    private func startBuffering() {
        guard writeBuffer == nil, let socket = SSL_get_wbio(ssl), let buffer = BIO_new(BIO_f_buffer()) else { return }
        guard aasa_BIO_set_write_buffer_size(buffer, TLSStream.writeBufferSize) == 1 else {
            BIO_free(buffer)
            return
        }
        BIO_up_ref(socket)
        BIO_push(buffer, socket)
        // SSL frees its old write BIO (one reference to the socket BIO) and owns the chain.
        SSL_set0_wbio(ssl, buffer)
        writeBuffer = buffer
    }

    /// Back to writing straight to the socket; SSL frees the buffer and the chain's reference
    /// to the socket BIO.
    private func stopBuffering() {
        guard writeBuffer != nil, let socket = SSL_get_rbio(ssl) else { return }
        BIO_up_ref(socket)
        SSL_set0_wbio(ssl, socket)
        writeBuffer = nil
    }

    /// Whether OpenSSL keeps its record buffers (some 34 KB) between records, where by default it
    /// frees them after each one (SSL_MODE_RELEASE_BUFFERS) and allocates them again for the next.
    /// Turned off, they are given back at once unless they hold bytes not yet read or written.
    package func keepBuffers(_ keep: Bool) {
        aasa_SSL_keep_buffers(ssl, keep ? 1 : 0)
    }

    /// Decrypted bytes already inside OpenSSL: a read would return them without the socket
    /// becoming readable again, so level-triggered epoll alone would never report them.
    package var hasBufferedInput: Bool { SSL_has_pending(ssl) != 0 }

    /// Sends close_notify (best effort: a non-blocking socket may not take it).
    package func shutdown() {
        _ = flushPendingOutput()
        TLSError.clearQueue()
        _ = SSL_shutdown(ssl)
        TLSError.clearQueue()
    }

    /// The name the client asked for (SNI), lower case.
    package var serverName: String? {
        SSL_get_servername(ssl, Int32(TLSEXT_NAMETYPE_host_name)).map { String(cString: $0).lowercased() }
    }

    /// The protocol ALPN settled on (`h2`, `http/1.1`), if any.
    package var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// `TLSv1.3`, `TLSv1.2`.
    package var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// The client's verdict on the server's chain, in OpenSSL's words ("certificate has
    /// expired", "hostname mismatch", …), or nil when it verified.
    package var verificationFailure: String? {
        let r = SSL_get_verify_result(ssl)
        return r == X509_V_OK ? nil : String(cString: X509_verify_cert_error_string(r))
    }

    /// The peer's certificate expiry (seconds since 1970), when it sent one.
    package var peerNotAfter: Int? {
        guard let cert = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(cert) }
        return X509Fields.notAfter(cert)
    }

    /// Set when a server-side handshake failed because the client spoke plain HTTP.
    private(set) var receivedPlainHTTP = false

    /// Set when ``Progress/closed`` came from a TCP close without close_notify: data that ends
    /// with the connection may have been cut by anyone on the path (RFC 8446 §6.1).
    private(set) package var closedWithoutNotify = false

    /// The outcome of a read or write that failed, made without emptying the error queue first:
    /// looking at the queue costs some 200 instructions (ERR_peek_error finds the thread's error
    /// state through OPENSSL_init_crypto and a thread-local lookup, callgrind), twice a request,
    /// and a call that succeeds does not read it. `SSL_get_error` does: an entry an earlier call
    /// on this thread left there would make a would-block look fatal. With the queue empty its
    /// answer is exact. Otherwise what the queue says is kept (with its reason: this call's own
    /// fatal error, say a peer's alert, is one), the queue emptied, and the call made once more
    /// with the same arguments (as OpenSSL asks after a would-block, SSL_read(3)): a would-block
    /// then comes again and is told exactly, the entry having been an earlier call's; a stream
    /// that failed fails again (OpenSSL's state machine refuses every call after a fatal error),
    /// and the first answer, reason and all, stands.
    private func progressAfterFailedCall(_ again: () -> Int?) -> Progress {
        if ERR_peek_error() == 0 { return progress(after: 0) }
        let flags = (receivedPlainHTTP, closedWithoutNotify)
        let first = progress(after: 0)  // empties the queue
        if let n = again() {
            (receivedPlainHTTP, closedWithoutNotify) = flags
            return .done(n)
        }
        let second = progress(after: 0)
        if second == .wantRead || second == .wantWrite {
            (receivedPlainHTTP, closedWithoutNotify) = flags
            return second
        }
        return first
    }

    private func progress(after result: Int32) -> Progress {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL where ERR_peek_error() == 0:
            // A reset or an EOF in the middle of a record: the peer is gone.
            if errno == 0 { closedWithoutNotify = true; return .closed }
            return .failed(String(cString: strerror(errno)))
        case SSL_ERROR_SSL where aasa_ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING:
            // Only the client's end gets here (the server's ignores unexpected EOF).
            TLSError.clearQueue()
            closedWithoutNotify = true
            return .closed
        default:
            // OpenSSL recognises plain HTTP sent to a TLS port ("http request").
            if !isClient, aasa_ERR_GET_REASON(ERR_peek_error()) == SSL_R_HTTP_REQUEST { receivedPlainHTTP = true }
            let reason = TLSError("TLS").description
            TLSError.clearQueue()
            return .failed(reason)
        }
    }
}
