import AASACore

/// The body of a JSON error, `{"error":"MESSAGE"}`: the same from the admin endpoints, the write
/// API and the dashboard's API (docs/serving.md, "Admin listener").
enum ErrorDocument {
    static func json(_ message: String) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("error"); w.value(message)
        w.endObject()
        return w.output
    }
}
