/// A dictionary whose values live in one array, found through an index of positions: a table of
/// 100 000 large values (the CDN schedule's sites, about 300 bytes each) costs their size
/// once, where a `Dictionary` of them reserves a slot of that size per bucket, a third of them
/// empty at best (90 MiB at 100 000 sites, docs/performance.md). A removal moves the last value
/// into the hole, so the order is not the order of insertion.
package struct DenseTable<Value> {
    private var positions: [String: Int] = [:]
    private var names: [String] = []
    private var storage: [Value] = []

    package init() {}

    package var count: Int { storage.count }
    package var isEmpty: Bool { storage.isEmpty }

    package mutating func reserveCapacity(_ n: Int) {
        positions.reserveCapacity(n)
        names.reserveCapacity(n)
        storage.reserveCapacity(n)
    }

    package subscript(key: String) -> Value? {
        get { positions[key].map { storage[$0] } }
        set {
            if let newValue {
                if let i = positions[key] {
                    storage[i] = newValue
                } else {
                    positions[key] = storage.count
                    names.append(key)
                    storage.append(newValue)
                }
            } else {
                removeValue(forKey: key)
            }
        }
    }

    @discardableResult
    package mutating func removeValue(forKey key: String) -> Value? {
        guard let i = positions.removeValue(forKey: key) else { return nil }
        let value = storage[i]
        let last = storage.count - 1
        if i != last {
            storage.swapAt(i, last)
            names.swapAt(i, last)
            positions[names[i]] = i
        }
        storage.removeLast()
        names.removeLast()
        return value
    }

    package var keys: [String] { names }
    package var values: [Value] { storage }

    package func mapValues<T>(_ transform: (Value) -> T) -> [String: T] {
        Dictionary(uniqueKeysWithValues: zip(names, storage.map(transform)))
    }
}

extension DenseTable: Sequence {
    package func makeIterator() -> Zip2Sequence<[String], [Value]>.Iterator {
        zip(names, storage).makeIterator()
    }
}
