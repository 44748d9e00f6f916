extension JSONWriter {
    /// Diagnostics as `[{"severity","code","message","line","column","jsonPath"}]`, the shape of
    /// `aasa validate --format json` (SPEC 4), also used by the server's dashboard.
    public mutating func write(_ diagnostics: [Diagnostic]) {
        beginArray()
        for d in diagnostics {
            beginObject()
            key("severity"); value(d.severity.rawValue)
            key("code"); value(d.code.rawValue)
            key("message"); value(d.message)
            key("line"); value(d.line)
            key("column"); value(d.column)
            key("jsonPath"); value(d.path.description)
            endObject()
        }
        endArray()
    }

    /// Decisions as `[{"app","decision","detail","component"}]`, the shape of `aasa match
    /// --format json` (SPEC 5), also used by the dashboard's URL tester.
    public mutating func write(_ decisions: [AppDecision]) {
        beginArray()
        for r in decisions {
            beginObject()
            key("app"); value(r.app)
            key("decision"); value(r.decision.rawValue)
            key("detail"); value(r.detail)
            key("component"); value(r.component)
            endObject()
        }
        endArray()
    }
}
