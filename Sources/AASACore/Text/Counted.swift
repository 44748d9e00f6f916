/// "1 error", "2 errors", "0 files": a count with its noun, for summaries people read.
package func counted(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
    "\(n) \(n == 1 ? singular : plural ?? singular + "s")"
}
