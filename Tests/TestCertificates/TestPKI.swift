import ChildProcess
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A CA and a leaf for example.com / www.example.com, made once per run with the openssl tool.
public enum TestPKI {
    public static let directory: String = {
        let dir = NSTemporaryDirectory() + "aasa-server-tests-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try! FileManager.default.createDirectory(atPath: dir + "/certs", withIntermediateDirectories: true)
        let script = """
        set -e
        cd '\(dir)'
        openssl ecparam -name prime256v1 -genkey -noout -out ca.key
        openssl req -x509 -new -key ca.key -sha256 -days 30 -subj '/CN=aasa server test CA' -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign' -out ca.pem 2>/dev/null
        openssl ecparam -name prime256v1 -genkey -noout -out certs/site.key
        openssl req -new -key certs/site.key -subj '/CN=example.com' -out site.csr 2>/dev/null
        printf 'subjectAltName=DNS:example.com,DNS:www.example.com\\nextendedKeyUsage=serverAuth\\n' > site.ext
        openssl x509 -req -in site.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -sha256 -extfile site.ext -out certs/site.crt 2>/dev/null
        """
        let made = try! runCommand(URL(fileURLWithPath: "/bin/bash"), ["-c", script], timeout: 120)
        precondition(made.status == 0, "making test certificates failed: \(made.stderr)")
        return dir
    }()

    public static var caFile: String { directory + "/ca.pem" }
    public static var certsDirectory: String { directory + "/certs" }
    public static var certificate: String { directory + "/certs/site.crt" }
    public static var key: String { directory + "/certs/site.key" }
}
