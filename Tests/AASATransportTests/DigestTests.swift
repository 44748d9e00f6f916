import Testing
import AASATransport

@Suite struct DigestTests {
    /// FIPS 180-2's examples: the ETag of a version is this digest's first 16 hex digits.
    @Test func sha256HexIsTheStandardDigest() {
        #expect(Digest.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Digest.sha256Hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(Digest.sha256Hex(long) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    /// The entity tag a file is served with: quoted, its digest's first 16 hex digits.
    @Test func anEntityTagIsTheQuotedFirst16HexDigits() {
        #expect(Digest.entityTag(Array("abc".utf8)) == "\"ba7816bf8f01cfea\"")
    }
}
