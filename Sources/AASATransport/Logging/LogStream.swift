import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The server's stdout (access log) or stderr (server messages), written by a thread of its own.
///
/// A write to a pipe blocks once the pipe is full, and a pipe fills as soon as its reader stops
/// reading (`aasa serve | sleep 1000`, a stuck log shipper): with the loops writing themselves,
/// one full pipe stopped every loop and the control thread, and SIGTERM could no longer end the
/// process. Here the loops and the control thread only copy their bytes into a bounded buffer
/// (one lock, one copy per turn of a loop); the writer
/// thread alone blocks in write(2). When the buffer is full, whole batches are dropped and
/// their lines counted (`aasa_log_lines_dropped_total`), with one line on stderr when dropping
/// starts and one when it stops.
/// `@unchecked Sendable`: it wraps a `pthread_mutex_t` and two `pthread_cond_t`s, and its
/// buffer is only reached under that mutex.
final package class LogStream: @unchecked Sendable {
    static package let standardOutput = LogStream(fd: 1, name: "stdout", capacity: 4 << 20)
    static package let standardError = LogStream(fd: 2, name: "stderr", capacity: 1 << 20)

    /// Lines dropped on stdout and stderr since the process started.
    static package var droppedLines: Int {
        standardOutput.dropped.load(ordering: .relaxed) + standardError.dropped.load(ordering: .relaxed)
    }

    /// Whether the notices about dropping are JSON (`--log-format json`); set at start.
    static package let noticesAsJSON = Atomic<Bool>(false)

    package let fd: Int32
    package let name: String
    private let capacity: Int
    /// Room beyond `capacity` kept for notices, so that a full stderr still gets the line that
    /// says it is dropping, written once it can be.
    private let noticeRoom = 16 * 1024
    private let dropped = Atomic<Int>(0)

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Signalled when there is something to write (the writer waits on it).
    private let work: UnsafeMutablePointer<pthread_cond_t>
    /// Broadcast when the writer finished a batch (flush waits on it).
    private let progress: UnsafeMutablePointer<pthread_cond_t>

    // Guarded by `mutex`.
    private var pending: [UInt8] = []
    private var writerStarted = false
    /// The writer waits with no deadline (it found nothing to write a whole interval): the next
    /// write must wake it. While lines keep coming it wakes on its own every `interval`, so a
    /// loop under load never pays a futex wake-up per turn.
    private var writerAsleep = false
    /// How often a busy writer looks for more, in milliseconds: the most a line waits.
    static package let interval = 20
    private var writing = false
    private var dropping = false
    private var droppedWhileDropping = 0
    private var failure: Int32 = 0

    private init(fd: Int32, name: String, capacity: Int) {
        self.fd = fd
        self.name = name
        self.capacity = capacity
        mutex = .allocate(capacity: 1)
        work = .allocate(capacity: 1)
        progress = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Flush deadlines are monotonic; the wall clock may jump.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(work, &attributes)
        pthread_cond_init(progress, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    // The two streams live as long as the process: no deinit.

    package func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    package func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    /// Queues `bytes` (whole lines) for the writer, or drops them when the buffer is full. Never
    /// blocks on the output.
    package func write(_ bytes: UnsafeRawBufferPointer, isNotice: Bool = false) {
        guard !bytes.isEmpty else { return }
        var startedDropping = false
        pthread_mutex_lock(mutex)
        if !writerStarted {
            writerStarted = true
            _ = startThread { [self] in writeForever() }
        }
        if pending.count + bytes.count <= capacity + (isNotice ? noticeRoom : 0), failure == 0 || isNotice {
            pending.append(contentsOf: bytes)
            // A busy writer comes back on its own; a sleeping one, or a buffer filling fast, is woken.
            if writerAsleep || pending.count > capacity / 4 { pthread_cond_signal(work) }
        } else {
            let lines = LogStream.lineCount(bytes)
            dropped.add(lines, ordering: .relaxed)
            droppedWhileDropping += lines
            if !dropping {
                dropping = true
                startedDropping = true
            }
        }
        let error = failure
        pthread_mutex_unlock(mutex)
        if startedDropping {
            let why = error == 0 ? "is not being read" : "cannot be written (\(String(cString: strerror(error))))"
            LogStream.notice("\(name) \(why): dropping log lines until it can be written again")
        }
    }

    /// Waits until everything queued so far is written, or until `deadline` (monotonic
    /// milliseconds). Returns false when the deadline came first.
    @discardableResult
    package func flush(until deadline: Int64) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if !pending.isEmpty { pthread_cond_signal(work) }
        while (!pending.isEmpty || writing) && failure == 0 {
            let now = monotonicMilliseconds()
            if now >= deadline { return false }
            var until = timespec()
            clock_gettime(CLOCK_MONOTONIC, &until)
            let wait = min(deadline - now, 100)
            until.tv_nsec += Int(wait % 1000) * 1_000_000
            until.tv_sec += Int(wait / 1000) + until.tv_nsec / 1_000_000_000
            until.tv_nsec %= 1_000_000_000
            pthread_cond_timedwait(progress, mutex, &until)
        }
        return true
    }

    // MARK: - The writer thread

    private func writeForever() {
        var batch: [UInt8] = []
        var busy = false
        pthread_mutex_lock(mutex)
        while true {
            while pending.isEmpty {
                if busy {
                    // Lines came lately: look again after an interval without being asked.
                    var until = timespec()
                    clock_gettime(CLOCK_MONOTONIC, &until)
                    until.tv_nsec += LogStream.interval * 1_000_000
                    until.tv_sec += until.tv_nsec / 1_000_000_000
                    until.tv_nsec %= 1_000_000_000
                    pthread_cond_timedwait(work, mutex, &until)
                    busy = !pending.isEmpty
                } else {
                    writerAsleep = true
                    pthread_cond_wait(work, mutex)
                    writerAsleep = false
                }
            }
            busy = true
            swap(&batch, &pending)
            writing = true
            pthread_mutex_unlock(mutex)

            let error = LogStream.writeAll(fd, batch)

            pthread_mutex_lock(mutex)
            writing = false
            var resumed: Int?
            if error != 0 {
                // The reader is gone (EPIPE) or the descriptor cannot be written: its lines are
                // lost either way; count them, and stop queueing more.
                let lines = batch.withUnsafeBytes { LogStream.lineCount($0) }
                dropped.add(lines, ordering: .relaxed)
                droppedWhileDropping += lines
                failure = error
                pending.removeAll()
            } else if dropping, pending.count < capacity / 2 {
                // The reader caught up with half the buffer: it is reading again.
                dropping = false
                resumed = droppedWhileDropping
                droppedWhileDropping = 0
            }
            if batch.capacity > capacity { batch = [] } else { batch.removeAll(keepingCapacity: true) }
            pthread_cond_broadcast(progress)
            if let resumed {
                pthread_mutex_unlock(mutex)
                LogStream.notice("\(name) is being written again; \(resumed) log lines were dropped")
                pthread_mutex_lock(mutex)
            }
            if failure != 0 {
                // Nothing more will be written; wait for nothing.
                while true { pthread_cond_wait(work, mutex) }
            }
        }
    }

    /// Writes all of `bytes`, blocking as long as it takes. Returns 0, or the errno that stopped it.
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32 {
        bytes.withUnsafeBytes { raw -> Int32 in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n >= 0 { offset += n; continue }
                switch errno {
                case EINTR:
                    continue
                case EAGAIN:
                    // Someone else made the shared file description non-blocking: wait for room.
                    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&p, 1, -1)
                default:
                    return errno
                }
            }
            return 0
        }
    }

    private static func lineCount(_ bytes: UnsafeRawBufferPointer) -> Int {
        var lines = 0
        for b in bytes where b == 0x0A { lines += 1 }
        return max(lines, 1)
    }

    /// A warning about the streams themselves, on stderr, allowed past a full buffer.
    private static func notice(_ message: String) {
        let format: LogFormat = noticesAsJSON.load(ordering: .relaxed) ? .json : .text
        var line = Log(format: format).line(.warning, message)
        line.withUTF8 { standardError.write(UnsafeRawBufferPointer($0), isNotice: true) }
    }
}
