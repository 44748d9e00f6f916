import AASACore
import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// Reading files and config directories for the commands.
package enum InputFiles {
    package struct ReadError: Error, CustomStringConvertible {
        package var description: String
    }

    /// The whole file, refusing anything that is not a regular file. Reads at most
    /// `limit` bytes more than the AASA limit, so a huge file cannot exhaust memory.
    static package func read(_ path: String, limit: Int = 64 * 1024 * 1024) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ReadError(description: "\(path): cannot open: \(errnoText())") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw ReadError(description: "\(path): cannot stat: \(errnoText())") }
        if (st.st_mode & S_IFMT) == S_IFDIR { throw ReadError(description: "\(path): is a directory") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ReadError(description: "\(path): cannot read: \(errnoText())")
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > limit { throw ReadError(description: "\(path): larger than \(limit) bytes") }
        }
        return bytes
    }

    static package func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    static func isRegularFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    /// A site folder of a config directory (docs/serving.md, "Config directory").
    package struct Site {
        package var name: SiteName
        /// The site's `apple-app-site-association` file (it may not exist: docs/serving.md, "Config
        /// directory").
        package var file: String
        package var folder: String
    }

    /// The association files (docs/validation.md) present in a site folder, in the order of
    /// `AssociationFileKind.allCases`. Symlinks are followed, as the server follows them.
    static func associationFiles(in folder: String) -> [(kind: AssociationFileKind, path: String)] {
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        return AssociationFileKind.allCases
            .map { (kind: $0, path: prefix + $0.fileName) }
            .filter { isRegularFile($0.path) }
    }

    /// The sites of a config directory, in byte order of their names. Entries that begin with
    /// `.` are skipped (Kubernetes' `..data`); other names that are not host names are reported
    /// through `skipped`.
    /// The sites of a config directory and the server's lookup over their AASA files, for the
    /// commands that take `--config`; an unreadable directory is reported and exits 2.
    static func siteIndex(config: String) throws -> (sites: [Site], index: SiteIndex<String>) {
        do {
            let sites = try InputFiles.sites(in: config)
            return (sites, SiteIndex(sites.map { ($0.name, $0.file) }))
        } catch {
            FileHandleOutput.standardError.write("aasa: \(error)\n")
            throw ExitCode(2)
        }
    }

    static package func sites(in directory: String, skipped: (String) -> Void = { _ in }) throws -> [Site] {
        guard let dir = opendir(directory) else {
            throw ReadError(description: "\(directory): cannot open directory: \(errnoText())")
        }
        defer { closedir(dir) }
        var names: [String] = []
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(dir) {
            // In place: a dirent is only as long as its name, so copying all 256 bytes of d_name
            // can read past the end of readdir's buffer.
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if name.hasPrefix(".") { continue }
            names.append(name)
        }
        var sites: [Site] = []
        for name in names.sorted() {
            let folder = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            guard isDirectory(folder) else { continue }
            guard let site = SiteName(name) else {
                skipped("\(folder): not a site: a folder name must be a lower-case host name or *.host")
                continue
            }
            sites.append(Site(name: site, file: folder + "/" + AssociationFileKind.aasa.fileName, folder: folder))
        }
        return sites
    }

    static func errnoText() -> String {
        String(cString: strerror(errno))
    }
}
