import AASACore
import AASATransport

/// One line of the domains file: a host, the apps it must list, where to connect instead.
package struct MonitoredDomain: Sendable, Equatable {
    package var host: String
    /// `app=APPID`, repeatable: as `aasa check --app`.
    package var apps: [String] = []
    /// `connect=ADDR:PORT`: as `aasa check --connect`; SNI and Host stay the host.
    package var connect: String?
    package var line: Int

    package init(host: String, apps: [String] = [], connect: String? = nil, line: Int) {
        self.host = host
        self.apps = apps
        self.connect = connect
        self.line = line
    }
}

/// The domains file of `aasa monitor` (docs/monitor.md): one domain a line, `#` comments, then
/// words `app=APPID` and `connect=ADDR:PORT`. A bad line is reported with its number and left
/// out; the others are watched.
package enum DomainList {
    package struct Problem: Error, Sendable, Equatable {
        package var line: Int
        package var message: String
    }

    /// Lines longer than this are not a domain and its words.
    static let maximumLineBytes = 4096

    package static func parse(_ text: String) -> (domains: [MonitoredDomain], problems: [Problem]) {
        var domains: [MonitoredDomain] = []
        var problems: [Problem] = []
        var firstLine: [String: Int] = [:]
        var number = 0
        // A Swift `Character` holds CRLF whole: both line ends are named.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            var line = Substring(rawLine)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let first = words.first else { continue }
            if rawLine.utf8.count > maximumLineBytes {
                problems.append(Problem(line: number, message: "the line is over \(maximumLineBytes) bytes"))
                continue
            }
            switch domain(first, words.dropFirst(), line: number) {
            case .failure(let problem):
                problems.append(problem)
            case .success(let d):
                if let seen = firstLine[d.host] {
                    problems.append(Problem(line: number, message: "\(d.host) is already listed on line \(seen)"))
                    continue
                }
                firstLine[d.host] = number
                domains.append(d)
            }
        }
        return (domains, problems)
    }

    private static func domain(_ first: Substring, _ words: ArraySlice<Substring>, line: Int) -> Result<MonitoredDomain, Problem> {
        let text = String(first).escapingControlCharacters
        func bad(_ message: String) -> Result<MonitoredDomain, Problem> { .failure(Problem(line: line, message: message)) }
        if first.hasPrefix("*.") {
            return bad("\(text): a wildcard is not a domain a device fetches from; list the names themselves (a *. entitlement fetches the base name's file)")
        }
        if first.contains("/") {
            return bad("\(text): give a host name only, such as example.com, without a scheme or path")
        }
        if first.contains(":") {
            return bad("\(text): give a host name only; Apple's CDN fetches on port 443 (use connect=ADDR:PORT to reach it elsewhere)")
        }
        let host = URLParts.normalizeHost(String(first))
        guard SiteName.isHostName(Substring(host)) else { return bad("\(text) is not a host name") }
        var domain = MonitoredDomain(host: host, line: line)
        for word in words {
            let parts = word.split(separator: "=", maxSplits: 1)
            let value = parts.count == 2 ? String(parts[1]) : ""
            switch parts.first.map(String.init) {
            case "app" where !value.isEmpty:
                domain.apps.append(value)
            case "connect" where !value.isEmpty:
                guard domain.connect == nil else { return bad("connect= is given twice") }
                guard let colon = value.lastIndex(of: ":"), let port = Int(value[value.index(after: colon)...]), (1...65535).contains(port),
                      colon != value.startIndex else {
                    return bad("connect=\(value.escapingControlCharacters): expected ADDR:PORT")
                }
                domain.connect = value
            default:
                return bad("\(String(word).escapingControlCharacters): expected app=APPID or connect=ADDR:PORT")
            }
        }
        return .success(domain)
    }
}
