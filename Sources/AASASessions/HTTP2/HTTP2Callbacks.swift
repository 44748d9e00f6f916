import CNghttp2

/// nghttp2's callback table and options, made once per process (nghttp2 copies both into
/// each session). Each callback finds its ``HTTP2Session`` in `user_data` and forwards to it.
package enum HTTP2Callbacks {
    nonisolated(unsafe) static package let table: OpaquePointer = {
        var table: OpaquePointer?
        precondition(nghttp2_session_callbacks_new(&table) == 0, "nghttp2_session_callbacks_new")
        nghttp2_session_callbacks_set_on_begin_frame_callback(table) { _, header, user in
            session(user).beginFrame(header!.pointee)
        }
        nghttp2_session_callbacks_set_on_begin_headers_callback(table) { _, frame, user in
            session(user).beginHeaders(frame!)
        }
        nghttp2_session_callbacks_set_on_header_callback(table) { _, frame, name, nameLength, value, valueLength, _, user in
            session(user).header(frame!, name: UnsafeBufferPointer(start: name, count: nameLength),
                                 value: UnsafeBufferPointer(start: value, count: valueLength))
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(table) { _, frame, user in
            session(user).frameReceived(frame!)
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(table) { _, _, stream, _, count, user in
            session(user).dataChunk(stream: stream, count: count)
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(table) { _, stream, errorCode, user in
            session(user).streamClosed(stream, errorCode: errorCode)
        }
        return table!
    }()

    nonisolated(unsafe) static package let options: OpaquePointer = {
        var options: OpaquePointer?
        precondition(nghttp2_option_new(&options) == 0, "nghttp2_option_new")
        // Closed streams are kept only to maintain the RFC 7540 priority tree, which this
        // server does not use (SETTINGS_NO_RFC7540_PRIORITIES).
        nghttp2_option_set_no_closed_streams(options, 1)
        return options!
    }()

    /// The data provider's read callback (see ``HTTP2Session/readBody(_:into:length:flags:)``).
    static let readBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, user in
        let stream = Unmanaged<HTTP2Stream>.fromOpaque(source!.pointee.ptr).takeUnretainedValue()
        return session(user).readBody(stream, into: buffer!, length: length, flags: flags!)
    }

    private static func session(_ user: UnsafeMutableRawPointer?) -> HTTP2Session {
        Unmanaged<HTTP2Session>.fromOpaque(user!).takeUnretainedValue()
    }
}
