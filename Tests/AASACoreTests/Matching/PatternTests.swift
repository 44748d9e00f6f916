import Testing
@testable import AASACore

private func glob(_ pattern: String, _ input: String, caseSensitive: Bool = true) -> Bool {
    let p = Pattern(pattern, caseSensitive: caseSensitive)
    let scalars = Array(input.unicodeScalars)
    return p.matches(caseSensitive ? scalars : Pattern.fold(scalars))
}

@Suite struct PatternTests {
    @Test func matchesLiteralsAndWildcards() {
        #expect(glob("abc", "abc"))
        #expect(!glob("abc", "abd"))
        #expect(glob("a?c", "abc"))
        #expect(glob("a*", "a"))
        #expect(glob("*", ""))
        #expect(!glob("?", ""))
        #expect(glob("", ""))
        #expect(!glob("", "a"))
    }

    @Test func countsUnicodeScalarsAsCharacters() {
        #expect(glob("caf?", "café"))
    }

    @Test func foldsCaseIncludingSimpleNonASCII() {
        #expect(glob("ÉCOLE", "école", caseSensitive: false))
        #expect(!glob("ÉCOLE", "école"))
    }

    @Test func knowsWhenItMatchesEverything() {
        #expect(Pattern("*").isMatchAll)
        #expect(Pattern("**").isMatchAll)
        #expect(!Pattern("?*").isMatchAll)
        #expect(!Pattern("").isMatchAll)
        #expect(PathPattern("/*").isMatchAll)
        #expect(!PathPattern("/a/*").isMatchAll)
    }

    @Test func reportsVariableProblems() {
        #expect(Pattern("$(nope)").problems == [.undefinedVariable("nope")])
        #expect(Pattern("$(digit)").problems.isEmpty)
        #expect(Pattern("$(a").problems == [.unterminatedVariable])
    }

    @Test func manyAlternativesStayLinear() {
        // $(lang) has hundreds of alternatives; a long input still finishes.
        let p = PathPattern("/$(lang)/*")
        let input = Array(("en/" + String(repeating: "x/", count: 5_000)).unicodeScalars)
        #expect(p.matches(normalizedPath: input))
    }
}
