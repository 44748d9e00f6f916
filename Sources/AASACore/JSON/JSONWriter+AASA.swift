extension JSONWriter {
    /// Diagnostics as `[{"severity","code","message","line","column","jsonPath"}]`, the shape of
    /// `aasa validate --format json` (docs/validation.md), also used by the server's dashboard.
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

    /// Decisions as `[{"app","decision","detail","component","rule","pattern"}]`, the shape of
    /// `aasa match --format json` (docs/validation.md), also used by the dashboard's URL tester.
    /// `component` is also the index of a legacy `paths` entry; `rule` says which (`"component"`,
    /// `"path"`, or null when nothing matched) and `pattern` quotes a legacy path as written.
    public mutating func write(_ decisions: [AppDecision], in document: AASADocument) {
        beginArray()
        for r in decisions {
            let rule = document.rule(deciding: r)
            beginObject()
            key("app"); value(r.app)
            key("decision"); value(r.decision.rawValue)
            key("detail"); value(r.detail)
            key("component"); value(r.component)
            key("rule")
            switch rule {
            case .component?: value("component")
            case .path?: value("path")
            case nil: null()
            }
            key("pattern")
            if case .path(_, let text)? = rule { value(text) } else { null() }
            endObject()
        }
        endArray()
    }
}
