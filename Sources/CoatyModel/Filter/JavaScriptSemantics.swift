import CoatyJSON

/// The JavaScript operations the Coaty JS matcher is built on, over JSON values, with `nil` standing for
/// `undefined`. Strings compare by code units here, as `===` and `<` do in JavaScript; Swift's `==` on `String`
/// would also equate canonically equivalent spellings (`"é"` and `"e\u{301}"`), which JS keeps apart.
enum JavaScriptSemantics {
    static func sameCodeUnits(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8)
    }

    /// `===` between a JSON value and another: objects and arrays are never identical, as two JSON documents
    /// never share an object.
    static func strictEquals(_ a: JSONValue, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (.null, .null?): true
        case (.bool(let x), .bool(let y)?): x == y
        case (.number(let x), .number(let y)?): x == y
        case (.string(let x), .string(let y)?): sameCodeUnits(x, y)
        default: false
        }
    }

    /// Coaty's `equals`: structural equality, leaves by `===`, objects by their own keys in any order.
    static func deepEquals(_ a: JSONValue, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (.array(let x), .array(let y)?):
            guard x.count == y.count else { return false }
            for index in x.indices where !deepEquals(x[index], y[index]) {
                return false
            }
            return true
        case (.object(let x), .object(let y)?):
            guard x.count == y.count else { return false }
            for member in x {
                guard let other = ownMember(member.key, of: y), deepEquals(member.value, other) else { return false }
            }
            return true
        default:
            return strictEquals(a, b)
        }
    }

    /// Coaty's `contains`, or `nil` where it throws in JavaScript (an object asked to contain `null`).
    static func contains(_ container: JSONValue, _ contained: JSONValue?) -> Bool? {
        contains(container, contained, isTopLevel: true)
    }

    private static func contains(_ x: JSONValue, _ y: JSONValue?, isTopLevel: Bool) -> Bool? {
        switch x {
        case .array(let xs):
            guard case .array(let ys)? = y else {
                // The one exception to matching structure: an array at the top contains its primitive elements.
                switch y {
                case .object?, .array?: return false
                default: return isTopLevel && xs.contains { strictEquals($0, y) }
                }
            }
            for element in ys {
                var found = false
                for candidate in xs {
                    guard let result = contains(candidate, element, isTopLevel: false) else { return nil }
                    if result {
                        found = true
                        break
                    }
                }
                if !found { return false }
            }
            return true
        case .object(let members):
            switch y {
            case .object(let ys)?:
                for member in ys {
                    guard let value = ownMember(member.key, of: members) else { return false }
                    guard let result = contains(value, member.value, isTopLevel: false) else { return nil }
                    if !result { return false }
                }
                return true
            case .array(let ys)?:
                // `Object.keys` of an array are its indices.
                for (index, element) in ys.enumerated() {
                    guard let value = ownMember(String(index), of: members) else { return false }
                    guard let result = contains(value, element, isTopLevel: false) else { return nil }
                    if !result { return false }
                }
                return true
            case .null?:
                return nil  // Object.keys(null) throws
            default:
                return false
            }
        default:
            return strictEquals(x, y)
        }
    }

    /// Coaty's `includes(values, value)`, or `nil` where it throws (the operand is not an array).
    static func includes(_ values: JSONValue?, _ value: JSONValue) -> Bool? {
        guard case .array(let elements)? = values else { return nil }
        return elements.contains { deepEquals($0, value) }
    }

    /// The member with exactly this key (code units, as JavaScript property lookup).
    static func ownMember(_ key: String, of object: JSONObject) -> JSONValue? {
        for member in object where sameCodeUnits(member.key, key) {
            return member.value
        }
        return nil
    }

    // MARK: Relational comparison

    /// `x < y` by the Abstract Relational Comparison: `true`, `false`, or `nil` for JavaScript's `undefined`
    /// result when a side converts to NaN (then `<`, `<=`, `>` and `>=` are all false).
    static func lessThan(_ x: JSONValue?, _ y: JSONValue?) -> Bool? {
        if case .number(let a)? = x, case .number(let b)? = y {
            return a.isNaN || b.isNaN ? nil : a < b
        }
        let px = Primitive(x)
        let py = Primitive(y)
        if case .string(let a) = px, case .string(let b) = py {
            return a.utf16.lexicographicallyPrecedes(b.utf16)
        }
        let a = px.numericValue
        let b = py.numericValue
        return a.isNaN || b.isNaN ? nil : a < b
    }

    /// `x <= y`, which is false when the comparison is undefined.
    static func lessThanOrEqual(_ x: JSONValue?, _ y: JSONValue?) -> Bool {
        lessThan(y, x) == false
    }

    /// `x >= y`, which is false when the comparison is undefined.
    static func greaterThanOrEqual(_ x: JSONValue?, _ y: JSONValue?) -> Bool {
        lessThan(x, y) == false
    }

    /// A value after `ToPrimitive` with hint number: arrays become their `join(",")`, objects `"[object Object]"`.
    private enum Primitive {
        case undefined
        case null
        case bool(Bool)
        case number(Double)
        case string(String)

        init(_ value: JSONValue?) {
            switch value {
            case nil: self = .undefined
            case .null?: self = .null
            case .bool(let bool)?: self = .bool(bool)
            case .number(let number)?: self = .number(number)
            case .string(let string)?: self = .string(string)
            case .array(let elements)?: self = .string(Self.join(elements))
            case .object?: self = .string("[object Object]")
            }
        }

        private static func join(_ elements: [JSONValue]) -> String {
            var text = ""
            for (index, element) in elements.enumerated() {
                if index > 0 { text += "," }
                switch element {
                case .null: break
                case .bool(let bool): text += bool ? "true" : "false"
                case .number: text += element.serialized()
                case .string(let string): text += string
                case .array(let nested): text += join(nested)
                case .object: text += "[object Object]"
                }
            }
            return text
        }

        var numericValue: Double {
            switch self {
            case .undefined: .nan
            case .null: 0
            case .bool(let bool): bool ? 1 : 0
            case .number(let number): number
            case .string(let string): JavaScriptSemantics.stringToNumber(string)
            }
        }
    }

    /// `Number(string)`: white space around a decimal literal, `Infinity`, or a `0x`/`0o`/`0b` integer; the
    /// empty string is 0 and anything else NaN.
    static func stringToNumber(_ string: String) -> Double {
        let scalars = Array(
            string.unicodeScalars.drop(while: isWhiteSpace).reversed().drop(while: isWhiteSpace).reversed())
        guard !scalars.isEmpty else { return 0 }
        if scalars.count > 2, scalars[0] == "0" {
            let radix: Int? =
                switch scalars[1] {
                case "x", "X": 16
                case "o", "O": 8
                case "b", "B": 2
                default: nil
                }
            if let radix {
                var value = 0.0
                for scalar in scalars.dropFirst(2) {
                    guard let digit = Int(String(scalar), radix: radix) else { return .nan }
                    value = value * Double(radix) + Double(digit)
                }
                return value
            }
        }
        var index = 0
        var sign = 1.0
        if scalars[0] == "+" || scalars[0] == "-" {
            sign = scalars[0] == "-" ? -1 : 1
            index = 1
        }
        let rest = String(String.UnicodeScalarView(scalars[index...]))
        if rest == "Infinity" { return sign * .infinity }
        // StrUnsignedDecimalLiteral: digits, an optional fraction, an optional exponent; at least one digit
        // before the exponent.
        var digitsBeforeExponent = 0
        var position = rest.utf8.startIndex
        let bytes = rest.utf8
        func skipDigits() -> Int {
            var count = 0
            while position < bytes.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position = bytes.index(after: position)
                count += 1
            }
            return count
        }
        digitsBeforeExponent += skipDigits()
        if position < bytes.endIndex, bytes[position] == UInt8(ascii: ".") {
            position = bytes.index(after: position)
            digitsBeforeExponent += skipDigits()
        }
        guard digitsBeforeExponent > 0 else { return .nan }
        if position < bytes.endIndex, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position = bytes.index(after: position)
            if position < bytes.endIndex, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position = bytes.index(after: position)
            }
            guard skipDigits() > 0 else { return .nan }
        }
        guard position == bytes.endIndex else { return .nan }
        // The grammar is checked, so Double's parser (correctly rounded) reads the same number.
        guard let magnitude = Double(rest) else { return .nan }
        return sign * magnitude
    }

    /// JavaScript's StrWhiteSpaceChar: white space and line terminators.
    private static func isWhiteSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0xFEFF, 0x2028, 0x2029: true
        default: scalar.properties.generalCategory == .spaceSeparator
        }
    }
}
