import AASACore
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// Which association files a site folder holds, from one listing of it (`getdents64`, the
/// types readdir gives): a start no longer asks the kernel for each of the four names in turn,
/// three of which most sites do not have (docs/performance.md, "Start-up at 100 000 sites").
/// A name the listing lacks is not there; a listed file is still opened and `fstat`ed before
/// anything is believed of it.
struct SiteFolderListing {
    /// What the listing says of one kind's file.
    enum Presence: Equatable {
        /// No such name in the folder.
        case absent
        /// A regular file by readdir's type: no `stat` needed before opening it.
        case regularFile
        /// Anything else, or not listed (the folder could not be listed): a `stat` decides, as
        /// for a path (a symlink is followed, a FIFO or a folder refused, no file at all nil).
        case unknown
    }

    /// In the order of `kinds`.
    private var presences: InlineArray<4, Presence>

    /// Every kind, and its file name's bytes, in the order of ``AssociationFileKind/allCases``.
    private static let kinds = AssociationFileKind.allCases
    private static let fileNames = kinds.map { Array($0.fileName.utf8) }

    /// The folder could not be opened or listed: each file is looked up by name.
    static let unlisted = SiteFolderListing(presences: InlineArray(repeating: .unknown))

    private init(presences: InlineArray<4, Presence>) {
        precondition(SiteFolderListing.kinds.count == presences.count, "one presence per kind")
        self.presences = presences
    }

    /// Lists the folder open as `fd`.
    init(_ fd: Int32) throws(SystemError) {
        var presences = InlineArray<4, Presence>(repeating: .absent)
        let names = SiteFolderListing.fileNames
        try DirectoryListing.forEachEntry(in: fd) { name, type in
            for i in names.indices where name.elementsEqual(names[i]) {
                presences[i] = type == UInt8(DT_REG) ? .regularFile : .unknown
            }
        }
        self.init(presences: presences)
    }

    subscript(kind: AssociationFileKind) -> Presence {
        for i in SiteFolderListing.kinds.indices where SiteFolderListing.kinds[i] == kind { return presences[i] }
        preconditionFailure("every kind is listed")
    }
}
