/// Android application IDs (developer.android.com/build/configure-app-module#set-application-id):
/// at least two segments separated by dots, each starting with a letter and holding only
/// letters, digits and underscores.
enum AndroidPackageName {
    static func problem(_ name: String) -> String? {
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2 else { return "needs at least two segments separated by '.', such as com.example.app" }
        for segment in segments {
            guard let first = segment.utf8.first else { return "has an empty segment between dots" }
            guard isASCIILetter(first) else { return "has a segment that does not start with a letter (\(JSONWriter.message(String(segment))))" }
            if let bad = segment.unicodeScalars.first(where: { !($0.isASCIIAlphanumeric || $0 == "_") }) {
                return "may hold only letters, digits and '_' in each segment, found '\(bad)'"
            }
        }
        return nil
    }
}
