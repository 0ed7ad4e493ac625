/// A JSON object whose members keep the order in which they were added.
///
/// Assigning to an existing key keeps its position and a new key goes to the end, as in a JavaScript object,
/// so `JSON.stringify` on the other side and `serialized()` here agree on member order.
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
            for member in members where member.key == key {
                return member.value
            }
            return nil
        }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
        }
    }

    public func contains(key: String) -> Bool {
        members.contains { $0.key == key }
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
