import COpenSSL
import AASATransport

/// A provisioning profile (`.mobileprovision`): a CMS SignedData (RFC 5652) whose content is
/// an XML property list. Only the content is wanted, so the signature is not verified and no
/// trust is needed: `aasa entitlements` asks what the profile says, not who signed it.
public enum ProvisioningProfile {
    /// The signed content (the property list's bytes) of a DER-encoded CMS message.
    public static func content(ofDER der: [UInt8]) throws(TLSError) -> [UInt8] {
        TLSError.clearQueue()
        guard let bio = der.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }) else {
            throw TLSError("BIO_new_mem_buf")
        }
        defer { BIO_free(bio) }
        guard let cms = d2i_CMS_bio(bio, nil) else {
            throw TLSError(message: "not a CMS-signed file (DER): \(TLSError("d2i_CMS_bio"))")
        }
        defer { CMS_ContentInfo_free(cms) }
        // Detached signatures have no content inside; a profile always carries it.
        guard let slot = CMS_get0_content(cms), let octets = slot.pointee,
              let data = ASN1_STRING_get0_data(octets) else {
            throw TLSError(message: "the CMS message carries no content (a detached signature)")
        }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(octets))))
    }
}
