/// IMF-fixdate (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`. Pure arithmetic on Unix
/// seconds, so it needs no locale, no Foundation and no libc time functions.
public enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"] // 1970-01-01 was a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    public static func format(_ seconds: Int) -> String {
        let dayNumber = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - dayNumber * 86_400
        let (y, m, d) = civil(fromDays: dayNumber)
        let weekday = days[((dayNumber % 7) + 7) % 7]
        return "\(weekday), \(pad(d)) \(months[m - 1]) \(y) \(pad(secondOfDay / 3600)):\(pad(secondOfDay / 60 % 60)):\(pad(secondOfDay % 60)) GMT"
    }

    /// `2026-11-21T17:30:00.123Z`, for logs.
    public static func iso8601(milliseconds: Int64) -> String {
        let seconds = Int(milliseconds / 1000)
        let dayNumber = seconds / 86_400
        let s = seconds - dayNumber * 86_400
        let (y, m, d) = civil(fromDays: dayNumber)
        let ms = Int(milliseconds % 1000)
        let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(y)-\(pad(m))-\(pad(d))T\(pad(s / 3600)):\(pad(s / 60 % 60)):\(pad(s % 60)).\(msText)Z"
    }

    /// Parses IMF-fixdate; nil for anything else (RFC 9110 lets a recipient ignore an invalid date).
    public static func parse(_ text: some StringProtocol) -> Int? {
        let b = Array(text.utf8)
        guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
              b[19] == UInt8(ascii: ":"), b[22] == UInt8(ascii: ":"), b[25] == 0x20,
              String(decoding: b[26..<29], as: UTF8.self) == "GMT",
              let day = number(b[5..<7]), let year = number(b[12..<16]), let hour = number(b[17..<19]),
              let minute = number(b[20..<22]), let second = number(b[23..<25]),
              let monthIndex = months.firstIndex(of: String(decoding: b[8..<11], as: UTF8.self)),
              (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        return days(fromCivil: year, monthIndex + 1, day) * 86_400 + hour * 3600 + minute * 60 + second
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var n = 0
        for d in digits {
            guard d >= 0x30 && d <= 0x39 else { return nil }
            n = n * 10 + Int(d - 0x30)
        }
        return n
    }

    private static func pad(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }

    // Howard Hinnant's days-from-civil algorithms (public domain).
    static func civil(fromDays z: Int) -> (Int, Int, Int) {
        let z = z + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
