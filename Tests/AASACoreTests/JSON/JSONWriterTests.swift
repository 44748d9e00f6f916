import Testing
@testable import AASACore

@Suite struct JSONWriterTests {
    @Test func writesNestedValuesWithCommasInTheRightPlaces() {
        var w = JSONWriter()
        w.beginObject()
        w.key("a"); w.value(1)
        w.key("b"); w.beginArray(); w.value("x"); w.value(true); w.null(); w.beginObject(); w.endObject(); w.endArray()
        w.key("c"); w.value(nil as Int?)
        w.endObject()
        #expect(w.output == "{\"a\":1,\"b\":[\"x\",true,null,{}],\"c\":null}")
    }

    @Test func escapesControlCharactersQuotesAndHTML() {
        #expect(JSONWriter.quoted("a\"b\\c\n\u{1}<script>&") == "\"a\\\"b\\\\c\\n\\u0001\\u003Cscript\\u003E\\u0026\"")
        // The output parses back to the same string.
        let s = "tab\t é 😀 </script>"
        #expect(JSONParser.parse(Array(JSONWriter.quoted(s).utf8)).value?.stringValue == s)
        // Messages for people keep markup readable.
        #expect(JSONWriter.message("<a>&") == "\"<a>&\"")
    }
}
