import Synchronization

/// The findings of one load of the config and certs directories, for the log. Of each kind
/// (a certificate loaded, a key readable by others, a site loaded, ...) the first
/// ``linesPerKind`` get a line each and the rest one line with their count: at 100 000
/// certificates the start-up log stays readable. Errors are never folded: each keeps its line.
/// Safe to use from the threads that load sites and certificates at once.
final package class StartupFindings: Sendable {
    package enum Kind: String, Sendable, CaseIterable {
        case certificateLoaded = "certificate loaded"
        case keyReadableByOthers = "private key readable by group or others"
        case siteLoaded = "site loaded"
        case validationWarning = "validation warning"
        case siteNotCovered = "site no certificate covers"
    }

    static let linesPerKind = 20

    package let log: Log
    private let counts = Locked<[Kind: Int]>([:])

    package init(log: Log) {
        self.log = log
    }

    /// Logs the finding while fewer than ``linesPerKind`` of its kind were logged.
    package func note(_ kind: Kind, level: Log.Level, _ message: @autoclosure () -> String) {
        let n = counts.withLock { counts in
            counts[kind, default: 0] += 1
            return counts[kind]!
        }
        guard n <= StartupFindings.linesPerKind else { return }
        switch level {
        case .debug: log.debug(message())
        case .info: log.info(message())
        case .warning: log.warning(message())
        case .error: log.error(message())
        }
    }

    package func error(_ message: @autoclosure () -> String) {
        log.error(message())
    }

    package func info(_ message: @autoclosure () -> String) {
        log.info(message())
    }

    /// How many findings of a kind there were.
    package func count(_ kind: Kind) -> Int {
        counts.withLock { $0[kind] ?? 0 }
    }

    /// One line per kind that had more findings than lines: how many were not shown.
    package func finish() {
        let over = counts.withLock { counts in counts.filter { $0.value > StartupFindings.linesPerKind } }
        for kind in Kind.allCases {
            guard let n = over[kind] else { continue }
            let rest = n - StartupFindings.linesPerKind
            let line = "\(rest) more \(kind.rawValue) line\(rest == 1 ? "" : "s") not shown (\(n) in all)"
            if kind == .keyReadableByOthers || kind == .validationWarning || kind == .siteNotCovered {
                log.warning(line)
            } else {
                log.info(line)
            }
        }
    }
}
