/// A JSON value as it travels on the wire.
///
/// Numbers are IEEE doubles, as in JavaScript, so a value read from a Coaty JS agent and written back keeps its
/// meaning. Objects keep the order of their members, so objects relayed by this agent leave it as they came in.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

extension JSONValue {
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var numberValue: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The number as an `Int` if it is integral and in range.
    public var intValue: Int? {
        guard case .number(let value) = self, value.rounded(.towardZero) == value,
            value >= -9_007_199_254_740_992, value <= 9_007_199_254_740_992
        else { return nil }
        return Int(value)
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The member of an object, or nil for a missing member or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// The element of an array, or nil when out of range or not an array.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The JSON type name used in error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

// No ExpressibleByNilLiteral: `nil` must always mean an absent value, never JSON `null` (write `.null`).
extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements))
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text of this value.
    public var description: String { serialized() }
}
