import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AASAServer
@testable import AASATransport

/// LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES as sd_listen_fds(3) reads them.
@Suite struct SocketActivationTests {
    @Test func namedSocketsStartAtDescriptorThree() throws {
        let passed = try SocketActivation.listeners(pid: "42", count: "3", names: "https:admin:http", ownPID: 42)
        #expect(passed == [PassedListener(fd: 3, kind: .https), PassedListener(fd: 4, kind: .admin), PassedListener(fd: 5, kind: .http)])
    }

    @Test func oneUnnamedSocketIsHTTPS() throws {
        #expect(try SocketActivation.listeners(pid: "42", count: "1", names: nil, ownPID: 42) == [PassedListener(fd: 3, kind: .https)])
        #expect(try SocketActivation.listeners(pid: "42", count: "1", names: "unknown", ownPID: 42) == [PassedListener(fd: 3, kind: .https)])
    }

    @Test func socketsForAnotherProcessAreNotOurs() throws {
        #expect(try SocketActivation.listeners(pid: "41", count: "1", names: "https", ownPID: 42).isEmpty)
        #expect(try SocketActivation.listeners(pid: nil, count: "1", names: "https", ownPID: 42).isEmpty)
        #expect(try SocketActivation.listeners(pid: "42", count: nil, names: nil, ownPID: 42).isEmpty)
        #expect(try SocketActivation.listeners(pid: "42", count: "0", names: nil, ownPID: 42).isEmpty)
    }

    @Test func unnamedOrUnknownNamesAmongSeveralAreRefused() {
        #expect(throws: SocketActivation.Problem.self) { try SocketActivation.listeners(pid: "42", count: "2", names: nil, ownPID: 42) }
        #expect(throws: SocketActivation.Problem.self) { try SocketActivation.listeners(pid: "42", count: "2", names: "https:metrics", ownPID: 42) }
        #expect(throws: SocketActivation.Problem.self) { try SocketActivation.listeners(pid: "42", count: "1", names: "web", ownPID: 42) }
    }

    @Test func variablesThatDoNotAddUpAreRefused() {
        #expect(throws: SocketActivation.Problem.self) { try SocketActivation.listeners(pid: "42", count: "2", names: "https", ownPID: 42) }
        #expect(throws: SocketActivation.Problem.self) { try SocketActivation.listeners(pid: "x", count: "1", names: nil, ownPID: 42) }
        #expect(throws: SocketActivation.Problem.self) { try SocketActivation.listeners(pid: "42", count: "-1", names: nil, ownPID: 42) }
        #expect(throws: SocketActivation.Problem.self) { try SocketActivation.listeners(pid: "42", count: "99999", names: nil, ownPID: 42) }
        #expect(throws: SocketActivation.Problem.self) { try SocketActivation.listeners(pid: "42", count: "2", names: "admin:admin", ownPID: 42) }
    }

    @Test func takingTheVariablesUnsetsThemSoChildrenDoNotInheritThem() throws {
        setenv("LISTEN_PID", "\(getpid())", 1)
        setenv("LISTEN_FDS", "1", 1)
        setenv("LISTEN_FDNAMES", "http", 1)
        #expect(try SocketActivation.take() == [PassedListener(fd: 3, kind: .http)])
        #expect(getenv("LISTEN_PID") == nil && getenv("LISTEN_FDS") == nil && getenv("LISTEN_FDNAMES") == nil)
        #expect(try SocketActivation.take().isEmpty)
    }

    @Test func anAdoptedSocketMustBeListening() throws {
        let (fd, bound) = try Socket.listen(on: SocketAddress(parsing: "127.0.0.1:0"))
        defer { close(fd) }
        #expect(try Socket.adopt(fd) == bound)
        let unbound = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(unbound) }
        #expect(throws: SystemError.self) { try Socket.adopt(unbound) }
    }
}
