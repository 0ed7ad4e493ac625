/// The members of a JSON object as they are added, one after the other: into a `JSONObject`, or written straight
/// as text (`JSONMemberWriter`). A type whose JSON has a fixed shape (an event's payload) adds its members once,
/// for both, so that the object and the text published cannot differ.
public protocol JSONMembers {
    /// Adds a member; its key is new and no array index, so it goes after the members added before.
    mutating func add(_ key: StaticString, _ value: JSONValue)
}

extension JSONMembers {
    /// Adds a member only when the value is present, so absent optionals never become `null` on the wire.
    public mutating func add(_ key: StaticString, ifPresent value: JSONValue?) {
        if let value { add(key, value) }
    }
}

extension JSONObject: JSONMembers {
    public mutating func add(_ key: StaticString, _ value: JSONValue) {
        self[key.description] = value
    }
}

/// Writes the members as the text of a JSON object, without building the object.
public struct JSONMemberWriter: JSONMembers {
    private var writer: JSONWriter
    private var isFirst = true

    /// Writes the opening brace; `finish` writes the closing one.
    public init(_ writer: JSONWriter) {
        self.writer = writer
        self.writer.append(UInt8(ascii: "{"))
    }

    public mutating func add(_ key: StaticString, _ value: JSONValue) {
        writer.append(isFirst ? "\"" : ",\"")
        isFirst = false
        // Keys of fixed shapes are plain names: nothing in them needs escaping.
        writer.append(key)
        writer.append("\":")
        value.write(to: &writer)
    }

    /// Writes the closing brace and gives the writer back.
    public consuming func finish() -> JSONWriter {
        writer.append(UInt8(ascii: "}"))
        return writer
    }
}
