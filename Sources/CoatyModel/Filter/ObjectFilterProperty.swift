import CoatyJSON

/// The property a condition or an ordering looks at: a dot path (`"message.name"`, `"readings.0.value"`) or, for
/// names that contain dots themselves, the list of names (`["property.with.dots", "sub"]`).
///
/// A dot path is split at every dot, so `""` names the property with the empty name and `"."` the empty-named
/// property of the empty-named property, as in Coaty JS. The empty list of names names the object itself.
public struct ObjectFilterProperty: Sendable, Hashable {
    public enum Notation: Sendable, Hashable {
        case dotPath(String)
        case names([String])
    }

    public let notation: Notation
    /// The names walked from the object, split once here rather than at every match.
    public let names: [String]

    public init(_ dotPath: String) {
        notation = .dotPath(dotPath)
        names = dotPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    public init(names: [String]) {
        notation = .names(names)
        self.names = names
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.notation == rhs.notation }
    public func hash(into hasher: inout Hasher) { hasher.combine(notation) }

    /// Reads a dot path string or an array of strings. Whether the empty dot path is allowed differs between
    /// conditions and orderings in Coaty JS, so the caller decides.
    init(json: JSONValue, at path: JSONPath, allowsEmptyDotPath: Bool) throws(JSONShapeError) {
        switch json {
        case .string(let dotPath):
            guard allowsEmptyDotPath || !dotPath.isEmpty else {
                throw JSONShapeError(path: path, reason: "the property name must not be empty")
            }
            self.init(dotPath)
        case .array(let elements):
            var names: [String] = []
            names.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                guard case .string(let name) = element else {
                    throw JSONShapeError(
                        path: path.appending(index),
                        reason: "expected a property name string, found \(element.typeName)")
                }
                names.append(name)
            }
            self.init(names: names)
        default:
            throw JSONShapeError(
                path: path, reason: "expected a property name or an array of property names, found \(json.typeName)")
        }
    }

    public var json: JSONValue {
        switch notation {
        case .dotPath(let dotPath): .string(dotPath)
        case .names(let names): .array(names.map(JSONValue.string))
        }
    }
}

extension ObjectFilterProperty: ExpressibleByStringLiteral {
    public init(stringLiteral dotPath: String) {
        self.init(dotPath)
    }
}

extension ObjectFilterProperty: CustomStringConvertible {
    public var description: String { json.serialized() }
}
