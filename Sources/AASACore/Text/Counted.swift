/// "1 error", "2 errors", "0 files": a count with its noun, for summaries people read.
package func counted(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
    "\(n) \(n == 1 ? singular : plural ?? singular + "s")"
}

/// "1 234 567": digits in groups of three, a space between them (SI's and ISO 80000's
/// separator, unambiguous in any locale), for sizes people read.
package func grouped(_ n: Int) -> String {
    let digits = String(n.magnitude)
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0, (digits.count - i) % 3 == 0 { out.append(" ") }
        out.append(c)
    }
    return (n < 0 ? "-" : "") + out
}
