import Testing
@testable import AASACore

@Suite struct PrintableTextTests {
    @Test func controlCharactersAreWrittenAsSwiftEscapes() {
        #expect("https://x/\u{1b}]0;pwned\u{7}\u{1b}[2J".escapingControlCharacters == #"https://x/\u{1b}]0;pwned\u{7}\u{1b}[2J"#)
        #expect("a\r\nb\tc\u{7f}d\u{9b}e".escapingControlCharacters == #"a\u{d}\u{a}b\u{9}c\u{7f}d\u{9b}e"#)
    }

    @Test func printableTextIsUnchanged() {
        #expect("café — ok: 200 \"quoted\" \\".escapingControlCharacters == "café — ok: 200 \"quoted\" \\")
    }
}
