/// The first results of a pass, as start-up findings are summarised: 20 lines of each state,
/// then only a count. The server's CDN watch and the monitor log their first results so.
package struct FirstResults<State: Hashable & CaseIterable> {
    package static var linesPerState: Int { 20 }
    private var seen: [State: Int] = [:]

    package init() {}

    /// Counts one; true when it gets a line of its own.
    package mutating func count(_ state: State) -> Bool {
        seen[state, default: 0] += 1
        return seen[state]! <= FirstResults.linesPerState
    }

    /// The states with more results than lines, and how many more; then starts again.
    package mutating func finish() -> [(State, Int)] {
        defer { seen = [:] }
        return State.allCases.compactMap { state in
            let n = seen[state] ?? 0
            return n > FirstResults.linesPerState ? (state, n - FirstResults.linesPerState) : nil
        }
    }
}
