import Glibc

/// Why a text is not JSON, and where.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset into the input.
    public var offset: Int
    /// 1-based line and column (in bytes) of `offset`.
    public var line: Int
    public var column: Int
    public var reason: String
    /// Where in the document, for the errors of strict parsing (a key given twice, text that is not UTF-8);
    /// nil for syntax errors.
    public var path: JSONPath? = nil

    public var description: String {
        if let path { return "\(path): \(reasonAndPosition)" }
        return "line \(line), column \(column): \(reason)"
    }

    /// The reason followed by the line and column, for messages that give the path before it.
    public var reasonAndPosition: String { "\(reason) (line \(line), column \(column))" }
}

/// How strictly JSON text is read.
public enum JSONParseMode: Sendable {
    /// The semantics of JavaScript's `JSON.parse`, for payloads from other agents (Coaty JS among them): a later
    /// duplicate key replaces an earlier one, invalid UTF-8 and lone surrogate escapes become U+FFFD, a number
    /// beyond the range of a double is infinite.
    case javaScript
    /// For files that people write (configuration, rules), where each of those is a mistake: an error with the
    /// JSON path where it is.
    case strict
}

extension JSONValue {
    /// Parses JSON text with the grammar of RFC 8259: any value at the top level, and by default the semantics of
    /// `JSON.parse` (see `JSONParseMode`). Nesting deeper than `maximumDepth` is rejected instead of exhausting
    /// the stack.
    ///
    /// Inlinable so that a caller in another module gets it specialized for its collection: unspecialized, finding
    /// the contiguous bytes of a `[UInt8]` went through witness tables and cost a quarter of parsing a Coaty event.
    @inlinable
    public init(
        parsing bytes: some Collection<UInt8>, mode: JSONParseMode = .javaScript, maximumDepth: Int = 512
    ) throws(JSONParseError) {
        let result: Result<JSONValue, JSONParseError> =
            bytes.withContiguousStorageIfAvailable { buffer in
                Self.parse(buffer, mode: mode, maximumDepth: maximumDepth)
            }
            ?? Array(bytes).withUnsafeBufferPointer { buffer in
                Self.parse(buffer, mode: mode, maximumDepth: maximumDepth)
            }
        self = try result.get()
    }

    public init(parsing text: String, mode: JSONParseMode = .javaScript, maximumDepth: Int = 512) throws(JSONParseError)
    {
        try self.init(parsing: Array(text.utf8), mode: mode, maximumDepth: maximumDepth)
    }

    @usableFromInline
    static func parse(
        _ buffer: UnsafeBufferPointer<UInt8>, mode: JSONParseMode, maximumDepth: Int
    ) -> Result<JSONValue, JSONParseError> {
        switch mode {
        case .javaScript:
            var parser = JSONParser<JavaScriptParsing>(buffer, maximumDepth: maximumDepth)
            return parser.parseDocument()
        case .strict:
            var parser = JSONParser<StrictParsing>(buffer, maximumDepth: maximumDepth)
            return parser.parseDocument()
        }
    }
}

private let powersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
]

/// The parser's mode as a type, so that each mode gets its own specialised parser and the checks of strict
/// parsing cost the wire payloads' parser nothing, not even a branch per key.
protocol JSONParsingRules {
    static var isStrict: Bool { get }
}

enum JavaScriptParsing: JSONParsingRules {
    static var isStrict: Bool { false }
}

enum StrictParsing: JSONParsingRules {
    static var isStrict: Bool { true }
}

struct JSONParser<Rules: JSONParsingRules> {
    private let input: UnsafeBufferPointer<UInt8>
    private var position = 0
    private var depth = 0
    private let maximumDepth: Int
    /// The path to the value being parsed, for the errors of strict parsing; only strict parsing keeps it.
    private var path: [JSONPath.Component] = []

    init(_ input: UnsafeBufferPointer<UInt8>, maximumDepth: Int) {
        self.input = input
        self.maximumDepth = maximumDepth
    }

    mutating func parseDocument() -> Result<JSONValue, JSONParseError> {
        do {
            skipWhitespace()
            let value = try parseValue()
            skipWhitespace()
            if position < input.count {
                throw error("unexpected \(describe(input[position])) after the JSON value")
            }
            return .success(value)
        } catch let error as JSONParseError {
            return .failure(error)
        } catch {
            return .failure(self.error("internal parser error"))
        }
    }

    /// An error of strict parsing, at the path being parsed (with `last` appended).
    private func strictError(_ reason: String, at offset: Int, appending last: JSONPath.Component? = nil)
        -> JSONParseError
    {
        var error = error(reason, at: offset)
        error.path = JSONPath(last.map { path + [$0] } ?? path)
        return error
    }

    private func error(_ reason: String, at offset: Int? = nil) -> JSONParseError {
        let offset = min(offset ?? position, input.count)
        var line = 1
        var lineStart = 0
        for index in 0..<offset where input[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        return JSONParseError(offset: offset, line: line, column: offset - lineStart + 1, reason: reason)
    }

    private func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F {
            return "'\(Character(Unicode.Scalar(byte)))'"
        }
        return "byte 0x\(String(byte, radix: 16))"
    }

    private mutating func skipWhitespace() {
        while position < input.count {
            switch input[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws -> JSONValue {
        guard position < input.count else { throw error("unexpected end of input, expected a value") }
        switch input[position] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected \(describe(input[position])), expected a value")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        guard position + count <= input.count else { throw error("invalid literal") }
        let bytes = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for index in 0..<count where input[position + index] != bytes[index] {
            throw error("invalid literal", at: position + index)
        }
        position += count
    }

    private mutating func enter() throws {
        depth += 1
        if depth > maximumDepth { throw error("nesting deeper than \(maximumDepth) levels") }
    }

    private mutating func parseObject() throws -> JSONValue {
        try enter()
        position += 1
        skipWhitespace()
        if position < input.count, input[position] == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return .object(JSONObject())
        }
        // Room for the four fields every Coaty object has, so that the array does not grow three times on the way.
        var members: [JSONObject.Member] = []
        members.reserveCapacity(4)
        // Array indices ("0", "17") are the only keys that JavaScript does not keep in insertion order.
        var mayHaveIndexKeys = false
        // Strict parsing only: the keys so far, to refuse one given twice.
        var keys: Set<CodeUnitKey> = []
        while true {
            skipWhitespace()
            guard position < input.count, input[position] == UInt8(ascii: "\"") else {
                throw error(position < input.count ? "expected a member name in quotes" : "unterminated object")
            }
            if position + 1 < input.count, isDigit(input[position + 1]) { mayHaveIndexKeys = true }
            let keyStart = position
            let key = try parseString()
            if Rules.isStrict, !keys.insert(CodeUnitKey(key)).inserted {
                throw strictError("duplicate key", at: keyStart, appending: .key(key))
            }
            skipWhitespace()
            guard position < input.count, input[position] == UInt8(ascii: ":") else {
                throw error("expected ':' after a member name")
            }
            position += 1
            skipWhitespace()
            if Rules.isStrict { path.append(.key(key)) }
            let value = try parseValue()
            if Rules.isStrict { path.removeLast() }
            members.append(JSONObject.Member(key: key, value: value))
            skipWhitespace()
            guard position < input.count else { throw error("unterminated object") }
            if input[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if input[position] == UInt8(ascii: "}") {
                position += 1
                break
            }
            throw error("expected ',' or '}' in an object")
        }
        depth -= 1
        return .object(JSONObject(uniquing: members, mayHaveIndexKeys: mayHaveIndexKeys))
    }

    private mutating func parseArray() throws -> JSONValue {
        try enter()
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < input.count, input[position] == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            if Rules.isStrict { path.append(.index(elements.count)) }
            elements.append(try parseValue())
            if Rules.isStrict { path.removeLast() }
            skipWhitespace()
            guard position < input.count else { throw error("unterminated array") }
            if input[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if input[position] == UInt8(ascii: "]") {
                position += 1
                break
            }
            throw error("expected ',' or ']' in an array")
        }
        depth -= 1
        return .array(elements)
    }

    private mutating func parseString() throws -> String {
        let start = position
        position += 1
        let contentStart = position
        // Fast path: no escapes. Eight bytes at a time up to the first one that needs a look (ids and names, the
        // bulk of a Coaty payload, are plain text), then byte by byte.
        position = JSONStringScan.firstSpecialByte(in: input, from: position)
        while position < input.count {
            let byte = input[position]
            if byte == UInt8(ascii: "\"") {
                let content = UnsafeBufferPointer(rebasing: input[contentStart..<position])
                if Rules.isStrict { try checkUTF8(from: contentStart) }
                position += 1
                return JSONKnownStrings.string(of: content) ?? String(decoding: content, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in a string; it must be escaped") }
            position += 1
        }
        guard position < input.count else { throw error("unterminated string", at: start) }

        var bytes = Array(UnsafeBufferPointer(rebasing: input[contentStart..<position]))
        while position < input.count {
            let byte = input[position]
            switch byte {
            case UInt8(ascii: "\""):
                // The escapes are ASCII and the text they stand for is valid, so the raw text tells.
                if Rules.isStrict { try checkUTF8(from: contentStart) }
                position += 1
                return String(decoding: bytes, as: UTF8.self)
            case UInt8(ascii: "\\"):
                position += 1
                guard position < input.count else { throw error("unterminated string", at: start) }
                let escape = input[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): bytes.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try parseUnicodeEscape()
                    bytes.append(contentsOf: String(Character(scalar)).utf8)
                default:
                    throw error("invalid escape '\\\(Character(Unicode.Scalar(escape)))'", at: position - 2)
                }
            case 0x00..<0x20:
                throw error("control character in a string; it must be escaped")
            default:
                bytes.append(byte)
                position += 1
            }
        }
        throw error("unterminated string", at: start)
    }

    /// Strict parsing: refuses the string from `start` to the current position unless it is valid UTF-8.
    private func checkUTF8(from start: Int) throws {
        var parser = Unicode.UTF8.ForwardParser()
        var bytes = UnsafeBufferPointer(rebasing: input[start..<position]).makeIterator()
        var offset = start
        while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return
            case .error:
                throw strictError("invalid UTF-8 (byte 0x\(String(input[offset], radix: 16)))", at: offset)
            }
        }
    }

    /// Reads the four hex digits after `\u` (and a following low surrogate escape, if any).
    private mutating func parseUnicodeEscape() throws -> Unicode.Scalar {
        let escapeStart = position - 2
        let high = try parseHex4()
        if (0xD800...0xDBFF).contains(high) {
            if position + 6 <= input.count, input[position] == UInt8(ascii: "\\"),
                input[position + 1] == UInt8(ascii: "u")
            {
                let saved = position
                position += 2
                let low = try parseHex4()
                if (0xDC00...0xDFFF).contains(low) {
                    let value = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                    return Unicode.Scalar(value) ?? "\u{FFFD}"
                }
                position = saved
            }
            // A lone surrogate cannot be held in a Swift String.
            if Rules.isStrict {
                throw strictError("a lone surrogate escape, which stands for no character", at: escapeStart)
            }
            return "\u{FFFD}"
        }
        guard let scalar = Unicode.Scalar(high) else {
            if Rules.isStrict {
                throw strictError("a lone surrogate escape, which stands for no character", at: escapeStart)
            }
            return "\u{FFFD}"
        }
        return scalar
    }

    private mutating func parseHex4() throws -> UInt32 {
        guard position + 4 <= input.count else { throw error("incomplete \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = input[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    private mutating func parseNumber() throws -> Double {
        let start = position
        var negative = false
        if input[position] == UInt8(ascii: "-") {
            negative = true
            position += 1
        }
        guard position < input.count, isDigit(input[position]) else { throw error("invalid number", at: start) }
        var integer: UInt64 = 0
        var integerDigits = 0
        if input[position] == UInt8(ascii: "0") {
            position += 1
            if position < input.count, isDigit(input[position]) {
                throw error("leading zeros are not allowed in numbers", at: start)
            }
            integerDigits = 1
        } else {
            while position < input.count, isDigit(input[position]) {
                if integerDigits < 18 {
                    integer = integer * 10 + UInt64(input[position] - UInt8(ascii: "0"))
                }
                integerDigits += 1
                position += 1
            }
        }
        var isIntegral = true
        // The digits as one integer and the count of them after the point, while they fit a double exactly.
        var significand = integer
        var significantDigits = integerDigits
        var fractionDigits = 0
        if position < input.count, input[position] == UInt8(ascii: ".") {
            isIntegral = false
            position += 1
            guard position < input.count, isDigit(input[position]) else {
                throw error("expected a digit after the decimal point")
            }
            while position < input.count, isDigit(input[position]) {
                if significantDigits < 18 {
                    significand = significand * 10 + UInt64(input[position] - UInt8(ascii: "0"))
                    fractionDigits += 1
                }
                significantDigits += 1
                position += 1
            }
        }
        var hasExponent = false
        if position < input.count, input[position] == UInt8(ascii: "e") || input[position] == UInt8(ascii: "E") {
            isIntegral = false
            hasExponent = true
            position += 1
            if position < input.count, input[position] == UInt8(ascii: "+") || input[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard position < input.count, isDigit(input[position]) else {
                throw error("expected a digit in the exponent")
            }
            while position < input.count, isDigit(input[position]) { position += 1 }
        }
        if isIntegral && integerDigits <= 15 {
            let magnitude = Double(integer)
            return negative ? -magnitude : magnitude
        }
        // Both operands are exact (at most 15 digits, a power of ten up to 10^15), and IEEE division rounds
        // correctly, so this is the double nearest to the text, as strtod finds it at several times the cost.
        if !hasExponent && significantDigits <= 15 {
            let magnitude = Double(significand) / powersOfTen[fractionDigits]
            return negative ? -magnitude : magnitude
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<position]), as: UTF8.self)
        guard let value = Double(text) else { throw error("invalid number", at: start) }
        if Rules.isStrict, !value.isFinite {
            throw strictError("\(text) is beyond the range of numbers (about ±1.8e308)", at: start)
        }
        return value
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}

extension JSONObject {
    /// Builds an object from parsed members: a repeated key keeps its first position and its last value.
    /// `mayHaveIndexKeys` is false when no key starts with a digit, so none can be an array index.
    init(uniquing parsed: [Member], mayHaveIndexKeys: Bool) {
        if parsed.count <= 16 {
            // The common case, members with distinct keys that are no array indices, keeps the parsed array.
            let isPlain = parsed.indices.allSatisfy { index in
                (!mayHaveIndexKeys || Self.arrayIndex(parsed[index].key) == nil)
                    && !parsed[..<index].contains { $0.key.hasSameCodeUnits(as: parsed[index].key) }
            }
            if isPlain {
                self.init(uncheckedMembers: parsed)
                return
            }
            self.init()
            for member in parsed { self[member.key] = member.value }
            return
        }
        var indexByKey: [CodeUnitKey: Int] = [:]
        var unique: [Member] = []
        unique.reserveCapacity(parsed.count)
        var hasArrayIndexKeys = false
        for member in parsed {
            if let index = indexByKey[CodeUnitKey(member.key)] {
                unique[index].value = member.value
            } else {
                indexByKey[CodeUnitKey(member.key)] = unique.count
                unique.append(member)
                hasArrayIndexKeys = hasArrayIndexKeys || Self.arrayIndex(member.key) != nil
            }
        }
        if hasArrayIndexKeys {
            var ordered: [Member] = []
            ordered.reserveCapacity(unique.count)
            for member in unique { Self.insert(member, into: &ordered) }
            unique = ordered
        }
        self.init(uncheckedMembers: unique)
    }
}

/// A string compared and hashed by its UTF-8 code units, as JavaScript compares keys.
private struct CodeUnitKey: Hashable {
    let key: String

    init(_ key: String) {
        self.key = key
    }

    static func == (lhs: CodeUnitKey, rhs: CodeUnitKey) -> Bool {
        lhs.key.hasSameCodeUnits(as: rhs.key)
    }

    func hash(into hasher: inout Hasher) {
        for byte in key.utf8 { hasher.combine(byte) }
    }
}

/// The strings that nearly every Coaty payload repeats: the member names of events and of the core fields of
/// objects, and the names of the core types. The parser returns them as literals, which cost nothing to make or to
/// release, instead of making each anew (checking its UTF-8, copying its bytes): a Channel event's object alone has
/// five member names and a core type name, and every inbound event is parsed. Other strings cost one length
/// comparison more.
enum JSONKnownStrings {
    static let all: [StaticString] = [
        "name", "value", "error", "object", "result", "filter", "objects", "coreType", "objectId", "objectType",
        "parameters", "privateData", "CoatyObject", "IoSource", "IoActor", "IoNode", "IoContext", "Identity",
        "valueType",
    ]

    static func string(of bytes: UnsafeBufferPointer<UInt8>) -> String? {
        // By length first: most strings of a payload (ids, values) have a length that no entry has.
        switch bytes.count {
        case 4: return bytes.equals("name") ? "name" : nil
        case 5: return bytes.equals("value") ? "value" : bytes.equals("error") ? "error" : nil
        case 6:
            if bytes.equals("object") { return "object" }
            if bytes.equals("result") { return "result" }
            if bytes.equals("filter") { return "filter" }
            return bytes.equals("IoNode") ? "IoNode" : nil
        case 7: return bytes.equals("objects") ? "objects" : bytes.equals("IoActor") ? "IoActor" : nil
        case 8:
            if bytes.equals("coreType") { return "coreType" }
            if bytes.equals("objectId") { return "objectId" }
            if bytes.equals("IoSource") { return "IoSource" }
            return bytes.equals("Identity") ? "Identity" : nil
        case 9: return bytes.equals("IoContext") ? "IoContext" : bytes.equals("valueType") ? "valueType" : nil
        case 10:
            return bytes.equals("objectType") ? "objectType" : bytes.equals("parameters") ? "parameters" : nil
        case 11:
            return bytes.equals("privateData") ? "privateData" : bytes.equals("CoatyObject") ? "CoatyObject" : nil
        default: return nil
        }
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether the bytes are those of `text`, whose length the caller has compared already.
    fileprivate func equals(_ text: StaticString) -> Bool {
        guard let baseAddress else { return false }
        return memcmp(baseAddress, text.utf8Start, count) == 0
    }
}
