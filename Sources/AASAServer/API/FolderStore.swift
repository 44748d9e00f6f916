import AASACore
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// The config and certs folders as the write API's store (docs/platforms.md, "Folders as the
/// store"). A file is written under a temporary name beginning with `.` in its own folder
/// (which the loader never reads), `fsync`ed, renamed into place and the folder `fsync`ed: a
/// crash at any point leaves the old file or the new one, whole. Other replicas on the same
/// folders see the rename through their watch.
struct FolderStore: SiteStore {
    let configDirectory: String
    let certsDirectory: String?
    /// False for a copy that can be made again (the PostgreSQL store's local copy): no fsync.
    var durable = true

    init(configDirectory: String, certsDirectory: String?, durable: Bool = true) {
        self.configDirectory = configDirectory
        self.certsDirectory = certsDirectory
        self.durable = durable
    }

    /// One replica's writes are already one at a time (the write API's lock); a folder has no
    /// transaction to give.
    func transaction<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R { try body() }

    /// `tls.crt` and `tls.key` in a folder named after the certificate: the layout of a
    /// Kubernetes TLS Secret, which the loader reads (docs/serving.md, "Certificates"), replaced
    /// as a pair (``CertificatePair``).
    static let chainFile = CertificatePair.chainFile
    static let keyFile = CertificatePair.keyFile

    private func folder(_ site: SiteName) -> String { configDirectory + "/" + site.description }

    func file(_ site: SiteName, _ kind: AssociationFileKind) throws(StoreError) -> [UInt8]? {
        try FolderStore.read(folder(site) + "/" + kind.fileName)
    }

    func putFile(_ site: SiteName, _ kind: AssociationFileKind, _ bytes: [UInt8]) throws(StoreError) -> ReloadScope {
        let folder = folder(site)
        let created = try FolderStore.makeFolder(folder, in: configDirectory, durable: durable)
        do {
            try FolderStore.writeDurably(bytes, to: kind.fileName, in: folder, mode: 0o644, durable: durable)
        } catch {
            // A new site whose first file could not be written leaves no empty folder behind.
            if created { try? FolderStore.removeFolderIfEmpty(folder, in: configDirectory) }
            throw error
        }
        return ReloadScope(sites: [site.description])
    }

    func deleteFile(_ site: SiteName, _ kind: AssociationFileKind) throws(StoreError) -> ReloadScope? {
        let folder = folder(site)
        guard try FolderStore.remove(kind.fileName, in: folder) else { return nil }
        try FolderStore.removeFolderIfEmpty(folder, in: configDirectory)
        return ReloadScope(sites: [site.description])
    }

    func deleteSite(_ site: SiteName) throws(StoreError) -> ReloadScope? {
        let folder = folder(site)
        var removed = false
        // Only the files a site is made of: anything else a person put in the folder stays,
        // and so does the folder then.
        for kind in AssociationFileKind.allCases where try FolderStore.remove(kind.fileName, in: folder) { removed = true }
        guard removed else { return nil }
        try FolderStore.removeFolderIfEmpty(folder, in: configDirectory)
        return ReloadScope(sites: [site.description])
    }

    func certificateChain(_ name: String) throws(StoreError) -> String? {
        guard let certs = certsDirectory else { return nil }
        return try FolderStore.read(certs + "/" + name + "/" + FolderStore.chainFile).map { String(decoding: $0, as: UTF8.self) }
    }

    func putCertificate(_ name: String, chain: String, key: String) throws(StoreError) -> ReloadScope {
        guard let certs = certsDirectory else { throw StoreError(message: "no --certs folder to write certificates to") }
        let folder = certs + "/" + name
        // certbot's layout in the same folder is read first (docs/serving.md, "Certificates"):
        // ACME's own pair gives way to the platform's, as it does in the PostgreSQL store;
        // anyone else's would be served instead of what is written, so the write is refused.
        let certbotPair = DirectoryListing.isFile(folder + "/fullchain.pem")
        let isACME = certbotPair && DirectoryListing.isFile(ACMEFolderStore.markerPath(certsDirectory: certs, name: name))
        if certbotPair && !isACME {
            throw StoreError(message: "\(name)/fullchain.pem (certbot's layout) is in --certs and would be served instead; remove it first",
                             isConflict: true)
        }
        // An operator's flat pair of the same name (`NAME.crt` or `NAME.pem` beside `NAME.key`)
        // would give way to the folder (docs/serving.md, "Certificates"): refused, not shadowed.
        for flat in [certs + "/" + name + ".crt", certs + "/" + name + ".pem"] where DirectoryListing.isFile(flat) {
            throw StoreError(message: "\(name)\(flat.hasSuffix(".crt") ? ".crt" : ".pem") is in --certs, put there by hand; a certificate written as \(name) would replace it. Choose another name, or remove that file first",
                             isConflict: true)
        }
        // A folder that holds anything else (ACME's own `acme/`, development's `ca/`, a person's
        // files) is not the API's to write into.
        if let entries = try? DirectoryListing.entries(in: folder),
           let other = entries.first(where: { !CertificatePair.isOwnEntry($0.name) && !(isACME && ["fullchain.pem", "privkey.pem"].contains($0.name)) }) {
            throw StoreError(message: "\(name)/ in --certs holds \(other.name), which was not written through the API; choose another name", isConflict: true)
        }
        let created = try FolderStore.makeFolder(folder, in: certs, durable: durable)
        do {
            try CertificatePair.replace(in: folder, chain: Array(chain.utf8), key: Array(key.utf8), durable: durable)
        } catch {
            if created { try? FolderStore.removeFolderIfEmpty(folder, in: certs) }
            throw error
        }
        if isACME {
            do { try ACMEFolderStore.removeFiles(certsDirectory: certs, name: name) } catch { throw StoreError(message: error.description) }
        }
        return ReloadScope(certificates: [name])
    }

    func deleteCertificate(_ name: String) throws(StoreError) -> ReloadScope? {
        guard let certs = certsDirectory else { return nil }
        let folder = certs + "/" + name
        guard try CertificatePair.remove(in: folder) else { return nil }
        try FolderStore.removeFolderIfEmpty(folder, in: certs)
        return ReloadScope(certificates: [name])
    }

    // MARK: - Durable writes

    static func failure(_ what: String, _ error: Int32 = errno) -> StoreError {
        StoreError(message: "\(what): \(String(cString: strerror(error)))", isFull: error == ENOSPC || error == EDQUOT)
    }

    static func read(_ path: String) throws(StoreError) -> [UInt8]? {
        do {
            return try SnapshotBuilder.read(path)?.bytes
        } catch {
            throw StoreError(message: "\(path): \(error.message)")
        }
    }

    /// A failed call of ``DurableFile``, as the store reports it.
    static func failure(_ error: SystemError) -> StoreError {
        failure(error.call, error.errno)
    }

    static func syncDirectory(_ path: String) throws(StoreError) {
        do { try DurableFile.syncDirectory(path) } catch { throw failure(error) }
    }

    /// Makes `folder` when it is missing; true when it made it.
    @discardableResult
    static func makeFolder(_ folder: String, in parent: String, durable: Bool) throws(StoreError) -> Bool {
        do { return try DurableFile.makeFolder(folder, in: parent, durable: durable) } catch { throw failure(error) }
    }

    /// Through a temporary file, fsync and rename (``DurableFile``).
    static func writeDurably(_ bytes: [UInt8], to name: String, in folder: String, mode: mode_t, durable: Bool = true) throws(StoreError) {
        do { try DurableFile.write(bytes, to: name, in: folder, mode: mode, durable: durable) } catch { throw failure(error) }
    }

    /// Removes `name` from `folder`; false when it was not there.
    static func remove(_ name: String, in folder: String) throws(StoreError) -> Bool {
        if unlink(folder + "/" + name) == 0 { return true }
        if errno == ENOENT || errno == ENOTDIR { return false }
        throw failure("unlink \(folder)/\(name)")
    }

    /// The folder goes once nothing is left in it but the temporary files of writes that died.
    static func removeFolderIfEmpty(_ folder: String, in parent: String) throws(StoreError) {
        guard let entries = try? DirectoryListing.entries(in: folder) else { return }
        for entry in entries {
            guard entry.name.hasPrefix("."), entry.name.hasSuffix(".tmp") else {
                try syncDirectory(folder)
                return
            }
        }
        for entry in entries { unlink(folder + "/" + entry.name) }
        if rmdir(folder) == 0 { try syncDirectory(parent) } else { try syncDirectory(folder) }
    }
}
