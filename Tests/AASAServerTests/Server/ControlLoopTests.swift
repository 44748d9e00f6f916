import Foundation
import Testing
@testable import AASAServer
@testable import AASATransport

/// What the control loop decides before it runs: which directories it polls rather than
/// watches (`--watch`, docs/serving.md "Validation and hot reload").
@Suite struct ControlLoopTests {
    private static func configuration(_ mode: WatchMode, certs: String? = NSTemporaryDirectory()) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.configDirectory = NSTemporaryDirectory()
        configuration.certsDirectory = certs
        configuration.watchMode = mode
        return configuration
    }

    private static func polling(_ configuration: ServerConfiguration) -> [Bool] {
        let decided = ControlLoop.decidePolling(configuration, log: Log(minimum: .error))
        return [decided.config, decided.certificates]
    }

    @Test func inotifyWatchesBothAndPollPollsBoth() {
        #expect(ControlLoopTests.polling(ControlLoopTests.configuration(.inotify)) == [false, false])
        #expect(ControlLoopTests.polling(ControlLoopTests.configuration(.poll)) == [true, true])
    }

    @Test func withoutACertsDirectoryOnlyTheConfigIsPolled() {
        #expect(ControlLoopTests.polling(ControlLoopTests.configuration(.poll, certs: nil)) == [true, false])
    }

    /// The test machine's temporary directory is local: `auto` watches it.
    @Test func autoWatchesALocalDirectory() {
        #expect(NetworkFilesystem.kind(of: NSTemporaryDirectory()) == nil)
        #expect(ControlLoopTests.polling(ControlLoopTests.configuration(.auto)) == [false, false])
    }
}
