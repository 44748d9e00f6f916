import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// What the server reads from an X509 certificate.
package enum X509Fields {
    /// subjectAltName DNS entries, lower case, wildcards as written (`*.example.com`).
    static package func dnsNames(_ cert: OpaquePointer) -> [String] {
        guard let raw = X509_get_ext_d2i(cert, NID_subject_alt_name, nil, nil) else { return [] }
        let names = OpaquePointer(raw)
        defer { aasa_general_names_free(names) }
        var out: [String] = []
        for i in 0..<aasa_general_names_count(names) {
            guard let name = aasa_general_names_get(names, i), let dns = aasa_general_name_dns(name),
                  let data = ASN1_STRING_get0_data(dns) else { continue }
            out.append(String(decoding: UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(dns))), as: UTF8.self).lowercased())
        }
        return out
    }

    /// notAfter in seconds since 1970 (0 when unreadable).
    static package func notAfter(_ cert: OpaquePointer) -> Int {
        seconds(X509_get0_notAfter(cert))
    }

    /// notBefore in seconds since 1970 (0 when unreadable).
    static package func notBefore(_ cert: OpaquePointer) -> Int {
        seconds(X509_get0_notBefore(cert))
    }

    private static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int {
        guard let t = time else { return 0 }
        var tm = Glibc.tm()
        guard ASN1_TIME_to_tm(t, &tm) == 1 else { return 0 }
        return Int(timegm(&tm))
    }
}
