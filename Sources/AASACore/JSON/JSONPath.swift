/// A location inside a JSON document, written as `$.applinks.details[0]["/"]`.
public struct JSONPath: Hashable, Sendable, CustomStringConvertible {
    public enum Component: Hashable, Sendable {
        case key(String)
        case index(Int)
    }

    public private(set) var components: [Component]

    public init(_ components: [Component] = []) {
        self.components = components
    }

    public static let root = JSONPath()

    public func appending(_ key: String) -> JSONPath { appending(.key(key)) }

    public func appending(_ index: Int) -> JSONPath { appending(.index(index)) }

    /// One array made at its size: `components + [c]` made two (the literal and the sum), and
    /// a path is made for every value the validator reads (docs/performance.md).
    private func appending(_ component: Component) -> JSONPath {
        var copy: [Component] = []
        copy.reserveCapacity(components.count + 1)
        copy.append(contentsOf: components)
        copy.append(component)
        return JSONPath(copy)
    }

    public mutating func push(_ component: Component) { components.append(component) }
    public mutating func pop() { components.removeLast() }

    public var description: String {
        var out = "$"
        for component in components {
            switch component {
            case .index(let i):
                out += "[\(i)]"
            case .key(let key) where JSONPath.isIdentifier(key):
                out += "." + key
            case .key(let key):
                out += "[" + JSONWriter.message(key) + "]"
            }
        }
        return out
    }

    static func isIdentifier(_ key: String) -> Bool {
        guard let first = key.utf8.first, first == UInt8(ascii: "_") || isASCIILetter(first) else { return false }
        return key.utf8.allSatisfy { $0 == UInt8(ascii: "_") || isASCIILetter($0) || isASCIIDigit($0) }
    }
}

@inline(__always) func isASCIILetter(_ b: UInt8) -> Bool { (b | 0x20) >= UInt8(ascii: "a") && (b | 0x20) <= UInt8(ascii: "z") }
@inline(__always) func isASCIIDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
@inline(__always) func isASCIIHexDigit(_ b: UInt8) -> Bool {
    isASCIIDigit(b) || ((b | 0x20) >= UInt8(ascii: "a") && (b | 0x20) <= UInt8(ascii: "f"))
}
@inline(__always) func isASCIIHexByte(_ b: UInt8) -> Bool { isASCIIHexDigit(b) }
