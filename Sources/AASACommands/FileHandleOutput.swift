import AASATransport

/// The version `aasa --version` prints and reports carry.
package let aasaVersion = "0.1.0"

/// stdout and stderr for the commands, through the serialized console writer the server's log also uses.
package struct FileHandleOutput {
    package let fd: Int32
    package static let standardOutput = FileHandleOutput(fd: 1)
    package static let standardError = FileHandleOutput(fd: 2)

    package func write(_ text: String) { ConsoleOutput.write(text, to: fd) }
    package func write(_ bytes: [UInt8]) { ConsoleOutput.write(bytes, to: fd) }
}
