import Testing
@testable import AASACore

@Suite struct ReachabilityTests {
    /// Patterns that overlap in every way the rules know: equal, `/x/*` over `/x/…`, `prefix*`,
    /// match-all, wildcards in the middle, case folding, queries and fragments.
    static let paths = ["/a/*", "/a", "/ab*", "*", "/a/b", "/a/b/*", "/?b", "/a*b", "/$(lang)/x", "/A/b", "/", "/a/b?c", "/x/*/y", "/a/bc"]

    private func components(seed: UInt64, count: Int) -> [CompiledComponent] {
        var state = seed
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
        var items: [String] = []
        for _ in 0..<count {
            var fields: [String] = []
            if next(6) != 0 { fields.append(#""/": "\#(Self.paths[next(Self.paths.count)])""#) }
            let queries = ["*", "1", "1*"], fragments = ["*", "top", "t*"]
            if next(4) == 0 { fields.append("\"?\": {\"q\": \"\(queries[next(3)])\"}") }
            if next(5) == 0 { fields.append("\"#\": \"\(fragments[next(3)])\"") }
            if next(4) == 0 { fields.append(#""caseSensitive": false"#) }
            if next(3) == 0 { fields.append(#""exclude": true"#) }
            items.append("{" + fields.joined(separator: ", ") + "}")
        }
        let json = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": ["# + items.joined(separator: ", ") + "]}]}}"
        guard case .components(let components)? = AASAFile(json).document?.appLinks?.details.first?.rules else {
            Issue.record("the generated file did not compile: \(json)")
            return []
        }
        return components
    }

    @Test func theIndexedSearchFindsWhatComparingEveryPairFinds() {
        var covered = 0, total = 0
        for seed in 1...200 as ClosedRange<UInt64> {
            let components = components(seed: seed, count: 30)
            let pairwise = components.indices.map { j in components[..<j].firstIndex { Reachability.covers($0, components[j]) } }
            #expect(Reachability.firstCovering(components, path: \.path, covers: Reachability.covers) == pairwise, "seed \(seed)")
            covered += pairwise.count { $0 != nil }
            total += pairwise.count
        }
        // The generated files have both: components covered by earlier ones, and others not.
        #expect(covered > total / 10 && covered < total - total / 10, "\(covered) of \(total)")
    }

    @Test func aFileWithThousandsOfComponentsIsCheckedQuickly() {
        let items = (0..<3000).map { #"{"/": "/products/category-\#($0)/*"}"# }.joined(separator: ", ")
        let json = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": ["# + items + #", {"/": "/products/category-7/shoes"}]}]}}"#
        let start = ContinuousClock.now
        let file = AASAFile(json)
        // The last component is found unreachable, behind category-7's `/*`.
        #expect(file.diagnostics.map(\.code) == [.unreachableComponent])
        #expect(file.diagnostics.first?.message.contains("component 7 matches") == true)
        // Not a timing test of speed, a guard against the quadratic search: it took tens of
        // seconds on half this many in a debug build.
        #expect(ContinuousClock.now - start < .seconds(20))
    }
}
