import AASATransport
import AASAClient

/// An iOS configuration profile that installs the development CA (a `com.apple.security.root`
/// payload). After installing it the user still turns on full trust in Settings > General >
/// About > Certificate Trust Settings.
enum MobileConfig {
    static func profile(caDER: [UInt8]) -> String {
        let digest = Digest.sha256Hex(caDER)
        let profileUUID = uuid(fromHex: digest, variant: "profile")
        let payloadUUID = uuid(fromHex: digest, variant: "payload")
        return """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \t<key>PayloadContent</key>
        \t<array>
        \t\t<dict>
        \t\t\t<key>PayloadCertificateFileName</key>
        \t\t\t<string>aasa-development-ca.cer</string>
        \t\t\t<key>PayloadContent</key>
        \t\t\t<data>
        \(Base64.encode(caDER, lineLength: 52))
        \t\t\t</data>
        \t\t\t<key>PayloadDescription</key>
        \t\t\t<string>Trusts the aasa development CA, which signs the certificate of the local aasa server.</string>
        \t\t\t<key>PayloadDisplayName</key>
        \t\t\t<string>aasa development CA</string>
        \t\t\t<key>PayloadIdentifier</key>
        \t\t\t<string>dev.aasa.ca.\(payloadUUID)</string>
        \t\t\t<key>PayloadType</key>
        \t\t\t<string>com.apple.security.root</string>
        \t\t\t<key>PayloadUUID</key>
        \t\t\t<string>\(payloadUUID)</string>
        \t\t\t<key>PayloadVersion</key>
        \t\t\t<integer>1</integer>
        \t\t</dict>
        \t</array>
        \t<key>PayloadDescription</key>
        \t<string>Installs the certificate authority of an aasa development server, for testing universal links with ?mode=developer.</string>
        \t<key>PayloadDisplayName</key>
        \t<string>aasa development CA</string>
        \t<key>PayloadIdentifier</key>
        \t<string>dev.aasa.profile.\(profileUUID)</string>
        \t<key>PayloadRemovalDisallowed</key>
        \t<false/>
        \t<key>PayloadType</key>
        \t<string>Configuration</string>
        \t<key>PayloadUUID</key>
        \t<string>\(profileUUID)</string>
        \t<key>PayloadVersion</key>
        \t<integer>1</integer>
        </dict>
        </plist>

        """
    }

    /// A stable UUID from the CA's digest, so reinstalling the same CA replaces the profile.
    private static func uuid(fromHex hex: String, variant: String) -> String {
        let seed = Digest.sha256Hex(Array((hex + variant).utf8)).uppercased()
        let c = Array(seed)
        func part(_ from: Int, _ to: Int) -> String { String(c[from..<to]) }
        return "\(part(0, 8))-\(part(8, 12))-4\(part(13, 16))-A\(part(17, 20))-\(part(20, 32))"
    }
}
