/// Where a value sits in a JSON document, written as `$.communication.brokerUrl` or `$.rules[2].condition`.
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    public enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    public var components: [Component]

    public init(_ components: [Component] = []) {
        self.components = components
    }

    /// Computed rather than stored: every received event starts its cursors at the root, and a stored static costs
    /// a `swift_once` call on each use, where an empty array is a constant.
    public static var root: JSONPath { JSONPath() }

    public func appending(_ key: String) -> JSONPath {
        appending(.key(key))
    }

    public func appending(_ index: Int) -> JSONPath {
        appending(.index(index))
    }

    public func appending(_ component: Component) -> JSONPath {
        var path = self
        path.components.append(component)
        return path
    }

    public var description: String {
        var text = "$"
        for component in components {
            switch component {
            case .key(let key):
                if Self.isIdentifier(key) {
                    text += "." + key
                } else {
                    text += "[" + JSONValue.string(key).serialized() + "]"
                }
            case .index(let index):
                text += "[\(index)]"
            }
        }
        return text
    }

    private static func isIdentifier(_ key: String) -> Bool {
        guard let first = key.unicodeScalars.first, first == "_" || first == "$" || first.properties.isAlphabetic
        else { return false }
        return key.unicodeScalars.allSatisfy {
            $0 == "_" || $0 == "$" || $0 == "-" || $0.properties.isAlphabetic || ("0"..."9").contains($0)
        }
    }
}

/// A value that does not have the shape a reader expected, and where it is.
public struct JSONShapeError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: JSONPath
    public var reason: String

    public init(path: JSONPath, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}

/// A JSON value together with its path, so that readers of configuration and rule files can say exactly where
/// a value is wrong.
public struct JSONCursor: Sendable {
    public let value: JSONValue
    /// The path is kept as the parent's path and the last step, and put together only when asked for (by an
    /// error, or a reader going deeper): every received event is validated through cursors, and most of its
    /// members are read once and never need their path.
    private let parentPath: JSONPath
    private let lastStep: JSONPath.Component?

    public init(_ value: JSONValue, path: JSONPath = .root) {
        self.value = value
        parentPath = path
        lastStep = nil
    }

    private init(_ value: JSONValue, in parentPath: JSONPath, at step: JSONPath.Component) {
        self.value = value
        self.parentPath = parentPath
        lastStep = step
    }

    public var path: JSONPath {
        lastStep.map { parentPath.appending($0) } ?? parentPath
    }

    public func error(_ reason: String) -> JSONShapeError {
        JSONShapeError(path: path, reason: reason)
    }

    /// The member if present (a `null` member counts as present).
    public func optional(_ key: String) throws(JSONShapeError) -> JSONCursor? {
        let object = try object()
        return object[key].map { JSONCursor($0, in: path, at: .key(key)) }
    }

    public func required(_ key: String) throws(JSONShapeError) -> JSONCursor {
        guard let member = try optional(key) else { throw error("missing required member \"\(key)\"") }
        return member
    }

    public func object() throws(JSONShapeError) -> JSONObject {
        guard case .object(let object) = value else { throw mismatch("an object") }
        return object
    }

    /// The members in order, each with its path.
    public func members() throws(JSONShapeError) -> [(key: String, value: JSONCursor)] {
        let path = path
        return try object().map { ($0.key, JSONCursor($0.value, in: path, at: .key($0.key))) }
    }

    public func elements() throws(JSONShapeError) -> [JSONCursor] {
        guard case .array(let array) = value else { throw mismatch("an array") }
        let path = path
        return array.enumerated().map { JSONCursor($1, in: path, at: .index($0)) }
    }

    public func string() throws(JSONShapeError) -> String {
        guard case .string(let string) = value else { throw mismatch("a string") }
        return string
    }

    public func nonEmptyString() throws(JSONShapeError) -> String {
        let string = try string()
        guard !string.isEmpty else { throw error("must not be an empty string") }
        return string
    }

    public func bool() throws(JSONShapeError) -> Bool {
        guard case .bool(let bool) = value else { throw mismatch("a boolean") }
        return bool
    }

    public func number() throws(JSONShapeError) -> Double {
        guard case .number(let number) = value else { throw mismatch("a number") }
        return number
    }

    public func number(in range: ClosedRange<Double>) throws(JSONShapeError) -> Double {
        let number = try number()
        guard range.contains(number) else {
            throw error(
                "\(JSONValue.number(number)) is out of range \(JSONValue.number(range.lowerBound))...\(JSONValue.number(range.upperBound))"
            )
        }
        return number
    }

    public func integer(in range: ClosedRange<Int> = Int.min...Int.max) throws(JSONShapeError) -> Int {
        guard let integer = value.intValue else {
            guard let number = value.numberValue else { throw mismatch("an integer") }
            guard number.rounded(.towardZero) == number else { throw error("must be a whole number") }
            // Whole, but beyond the integers a double holds exactly (±2^53), where `intValue` ends.
            let lower = max(range.lowerBound, -(1 << 53))
            let upper = min(range.upperBound, 1 << 53)
            throw error("\(JSONValue.number(number)) is out of range \(lower)...\(upper)")
        }
        guard range.contains(integer) else {
            throw error("\(integer) is out of range \(range.lowerBound)...\(range.upperBound)")
        }
        return integer
    }

    /// One of the given strings.
    public func oneOf(_ allowed: [String]) throws(JSONShapeError) -> String {
        let string = try string()
        guard allowed.contains(string) else {
            throw error("\"\(string)\" is not one of \(allowed.map { "\"\($0)\"" }.joined(separator: ", "))")
        }
        return string
    }

    /// Rejects members other than the given ones, which catches misspelt options.
    public func allowOnly(_ keys: Set<String>) throws(JSONShapeError) {
        for member in try object() where !keys.contains(member.key) {
            let known = keys.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            throw JSONShapeError(
                path: path.appending(member.key), reason: "unknown member \"\(member.key)\" (known: \(known))")
        }
    }

    private func mismatch(_ expected: String) -> JSONShapeError {
        error("expected \(expected), found \(value.typeName)")
    }
}

/// A JSON file that cannot be used (a configuration, a rules file): which file, where in it, and why.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    /// Nil when the file as a whole is wrong: unreadable, or not JSON.
    public var path: JSONPath?
    public var reason: String

    public init(file: String, path: JSONPath?, reason: String) {
        self.file = file
        self.path = path
        self.reason = reason
    }

    public init(file: String, _ error: JSONShapeError) {
        self.init(file: file, path: error.path, reason: error.reason)
    }

    /// A file that is not JSON, or that strict parsing refuses at a path (a key given twice, text not in UTF-8).
    public init(file: String, _ error: JSONParseError) {
        if let path = error.path {
            self.init(file: file, path: path, reason: error.reasonAndPosition)
        } else {
            self.init(file: file, path: nil, reason: "not valid JSON: \(error)")
        }
    }

    public var description: String {
        if let path { return "\(file): \(path): \(reason)" }
        return "\(file): \(reason)"
    }
}
