/// A JSON object whose members are ordered as in a JavaScript object, so that `JSON.stringify` on the other
/// side and `serialized()` here agree on member order: keys that are array indices ("0", "17") first, in
/// ascending order, then the other keys in the order they were added. Assigning to an existing key keeps its
/// position. Keys are compared by their code units, as JavaScript compares them (no Unicode normalisation).
/// Equality ignores member order: two objects are equal when they have the same members.
public struct JSONObject: Sendable {
    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue
    }

    public private(set) var members: [Member]

    public init() {
        members = []
    }

    init(uncheckedMembers: [Member]) {
        members = uncheckedMembers
    }

    public init<S: Sequence>(_ pairs: S) where S.Element == (String, JSONValue) {
        members = []
        for (key, value) in pairs {
            self[key] = value
        }
    }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    /// Gets a member; setting `nil` removes it (JSON `null` is `.null`, not `nil`).
    public subscript(key: String) -> JSONValue? {
        get {
            for member in members where member.key.hasSameCodeUnits(as: key) {
                return member.value
            }
            return nil
        }
        set {
            if let index = members.firstIndex(where: { $0.key.hasSameCodeUnits(as: key) }) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                }
            } else if let newValue {
                Self.insert(Member(key: key, value: newValue), into: &members)
            }
        }
    }

    public func contains(key: String) -> Bool {
        members.contains { $0.key.hasSameCodeUnits(as: key) }
    }

    /// Adds a member with a new key where JavaScript would put it.
    static func insert(_ member: Member, into members: inout [Member]) {
        guard let index = arrayIndex(member.key) else {
            members.append(member)
            return
        }
        let position =
            members.firstIndex { existing in
                guard let other = arrayIndex(existing.key) else { return true }
                return other > index
            } ?? members.endIndex
        members.insert(member, at: position)
    }

    /// The value of a key that is an array index in JavaScript: the canonical decimal form of 0...2^32-2.
    static func arrayIndex(_ key: String) -> UInt32? {
        let utf8 = key.utf8
        guard let first = utf8.first, utf8.count <= 10, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9"),
            first != UInt8(ascii: "0") || utf8.count == 1
        else { return nil }
        var value: UInt64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
        }
        return value < 4_294_967_295 ? UInt32(value) : nil
    }

    /// Sets a member only when the value is present, so absent optionals never become `null` on the wire.
    public mutating func set(_ key: String, ifPresent value: JSONValue?) {
        if let value { self[key] = value }
    }

    /// A copy with the given members added or replaced, keeping the receiver's order.
    public func merging(_ other: JSONObject) -> JSONObject {
        var result = self
        for member in other.members {
            result[member.key] = member.value
        }
        return result
    }
}

extension String {
    /// Equality of the UTF-8 code units, as JavaScript compares keys (`==` also equates canonically equivalent
    /// strings). Member lookups run this for every key of every object read, so it compares lengths first and
    /// then the contiguous bytes, in a plain loop: walking the UTF-8 views, or `elementsEqual` on the buffers
    /// (which is not specialized here), cost several times as much.
    func hasSameCodeUnits(as other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        let contiguous = utf8.withContiguousStorageIfAvailable { bytes in
            other.utf8.withContiguousStorageIfAvailable { otherBytes in
                for index in bytes.indices where bytes[index] != otherBytes[index] { return false }
                return true
            }
        }
        return contiguous.flatMap { $0 } ?? utf8.elementsEqual(other.utf8)
    }
}

extension JSONObject: Sequence {
    public func makeIterator() -> IndexingIterator<[Member]> {
        members.makeIterator()
    }
}

extension JSONObject: Equatable {
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for member in lhs.members {
            guard let other = rhs[member.key], other == member.value else { return false }
        }
        return true
    }
}

extension JSONObject: Hashable {
    public func hash(into hasher: inout Hasher) {
        // Order-independent, to agree with ==.
        var combined = 0
        for member in members {
            combined = combined &+ member.hashValue
        }
        hasher.combine(members.count)
        hasher.combine(combined)
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }
}
