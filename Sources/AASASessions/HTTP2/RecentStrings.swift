import AASAHTTP

/// A few short Huffman-coded strings and their decoded bytes, in memory made when first needed
/// (an idle connection that never sent one holds none).
struct RecentStrings {
    /// Coded strings up to this length are kept (a path, an agent).
    static let maxCoded = 64
    private static let slots = 2
    /// Per slot: the coded length, the decoded length, then both strings' bytes.
    private static let slotSize = 2 + maxCoded + maxCoded * 8 / 5 + 1
    private var memory: UnsafeMutablePointer<UInt8>?
    private var next = 0

    /// The decoded bytes of `coded`, if it is one of the kept strings (valid until the next
    /// ``remember(_:_:)``, which may reuse the slot).
    func decoded(_ coded: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        guard let memory, coded.count <= RecentStrings.maxCoded else { return nil }
        for slot in 0..<RecentStrings.slots {
            let at = memory + slot * RecentStrings.slotSize
            guard Int(at[0]) == coded.count,
                  ByteScan.equal(UnsafeBufferPointer(start: at + 2, count: coded.count), coded) else { continue }
            return UnsafeBufferPointer(start: at + 2 + coded.count, count: Int(at[1]))
        }
        return nil
    }

    mutating func remember(_ coded: UnsafeBufferPointer<UInt8>, _ decoded: UnsafeBufferPointer<UInt8>) {
        guard coded.count <= RecentStrings.maxCoded, decoded.count <= 255, !coded.isEmpty else { return }
        if memory == nil {
            memory = .allocate(capacity: RecentStrings.slots * RecentStrings.slotSize)
            for slot in 0..<RecentStrings.slots { memory![slot * RecentStrings.slotSize] = 0xFF }
        }
        let at = memory! + next * RecentStrings.slotSize
        next = (next + 1) % RecentStrings.slots
        at[0] = UInt8(coded.count)
        at[1] = UInt8(decoded.count)
        (at + 2).update(from: coded.baseAddress!, count: coded.count)
        if let d = decoded.baseAddress { (at + 2 + coded.count).update(from: d, count: decoded.count) }
    }

    func free() { memory?.deallocate() }
}
