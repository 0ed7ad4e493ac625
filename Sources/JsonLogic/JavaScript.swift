import CoatyJSON

/// The ECMAScript conversions and comparisons that json-logic-js relies on, for JSON values.
///
/// Strings are compared and measured in UTF-16 code units and bytes, never with Swift's canonical equivalence,
/// because JavaScript treats "é" and "e\u{301}" as different strings.
enum JavaScript {
    /// `!!value`: arrays and objects are always true.
    static func toBoolean(_ value: JSONValue) -> Bool {
        switch value {
        case .null: false
        case .bool(let bool): bool
        case .number(let number): number != 0 && !number.isNaN
        case .string(let string): !string.isEmpty
        case .array, .object: true
        }
    }

    /// `Number(value)`.
    static func toNumber(_ value: JSONValue) -> Double {
        switch value {
        case .null: 0
        case .bool(let bool): bool ? 1 : 0
        case .number(let number): number
        case .string(let string): stringToNumber(string)
        case .array, .object: stringToNumber(toString(value))
        }
    }

    /// `String(value)`.
    static func toString(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let bool): bool ? "true" : "false"
        case .number(let number): numberToString(number)
        case .string(let string): string
        case .array(let elements): join(elements, separator: ",")
        case .object: "[object Object]"
        }
    }

    /// `Array.prototype.join`: `null` elements become empty strings.
    static func join(_ elements: [JSONValue], separator: String) -> String {
        var text = ""
        for (index, element) in elements.enumerated() {
            if index > 0 { text += separator }
            if !element.isNull { text += toString(element) }
        }
        return text
    }

    static func numberToString(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        return JSONValue.number(number).serialized()
    }

    /// ToPrimitive for the operators used here: arrays and objects become their string form.
    static func toPrimitive(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array, .object: .string(toString(value))
        default: value
        }
    }

    /// ToIntegerOrInfinity.
    static func toInteger(_ value: JSONValue) -> Double {
        let number = toNumber(value)
        return number.isNaN ? 0 : number.rounded(.towardZero)
    }

    // MARK: Equality and order

    /// `a === b`, except that arrays and objects compare by content.
    static func strictEquals(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return x.utf8.elementsEqual(y.utf8)
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { strictEquals($0, $1) }
        case (.object(let x), .object(let y)):
            guard x.count == y.count else { return false }
            for member in x {
                guard let other = y.members.first(where: { $0.key.utf8.elementsEqual(member.key.utf8) }),
                    strictEquals(member.value, other.value)
                else { return false }
            }
            return true
        default:
            return false
        }
    }

    /// `a == b` (IsLooselyEqual), except that two arrays or two objects compare by content.
    static func looseEquals(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case (.bool(let x), _): return looseEquals(.number(x ? 1 : 0), b)
        case (_, .bool(let y)): return looseEquals(a, .number(y ? 1 : 0))
        case (.number(let x), .string(let y)): return x == stringToNumber(y)
        case (.string(let x), .number(let y)): return stringToNumber(x) == y
        case (.array, .number), (.array, .string), (.object, .number), (.object, .string):
            return looseEquals(toPrimitive(a), b)
        case (.number, .array), (.string, .array), (.number, .object), (.string, .object):
            return looseEquals(a, toPrimitive(b))
        default:
            return strictEquals(a, b)
        }
    }

    /// `a < b` (IsLessThan); nil where JavaScript's answer is `undefined` (a NaN), which makes every relational
    /// operator false.
    static func lessThan(_ a: JSONValue, _ b: JSONValue) -> Bool? {
        let left = toPrimitive(a)
        let right = toPrimitive(b)
        if case .string(let x) = left, case .string(let y) = right {
            return x.utf16.lexicographicallyPrecedes(y.utf16)
        }
        let x = toNumber(left)
        let y = toNumber(right)
        if x.isNaN || y.isNaN { return nil }
        return x < y
    }

    static func less(_ a: JSONValue, _ b: JSONValue) -> Bool { lessThan(a, b) ?? false }
    static func greater(_ a: JSONValue, _ b: JSONValue) -> Bool { lessThan(b, a) ?? false }
    static func lessOrEqual(_ a: JSONValue, _ b: JSONValue) -> Bool { lessThan(b, a).map { !$0 } ?? false }
    static func greaterOrEqual(_ a: JSONValue, _ b: JSONValue) -> Bool { lessThan(a, b).map { !$0 } ?? false }

    // MARK: Numbers from strings

    /// StringToNumber: the whole string, trimmed, must be a numeric literal; an empty one is 0.
    static func stringToNumber(_ string: String) -> Double {
        let units = Array(string.utf16)
        var start = 0
        var end = units.count
        while start < end, isWhiteSpace(units[start]) { start += 1 }
        while end > start, isWhiteSpace(units[end - 1]) { end -= 1 }
        if start == end { return 0 }
        let text = units[start..<end]
        if text.count > 2, text[start] == 0x30, let radix = radix(of: text[start + 1]) {
            return integer(text.dropFirst(2), radix: radix)
        }
        guard let (value, length) = decimalPrefix(text), length == text.count else { return .nan }
        return value
    }

    /// `parseFloat(String(value))`: the longest numeric prefix after leading white space, or NaN.
    static func parseFloat(_ value: JSONValue) -> Double {
        if case .number(let number) = value {
            return number == 0 ? 0 : number  // String(-0) is "0"
        }
        let units = Array(toString(value).utf16)
        var start = 0
        while start < units.count, isWhiteSpace(units[start]) { start += 1 }
        return decimalPrefix(units[start...])?.value ?? .nan
    }

    private static func radix(of unit: UInt16) -> Int? {
        switch unit {
        case 0x78, 0x58: 16  // x X
        case 0x6F, 0x4F: 8  // o O
        case 0x62, 0x42: 2  // b B
        default: nil
        }
    }

    private static func integer(_ digits: ArraySlice<UInt16>, radix: Int) -> Double {
        var value = 0.0
        for unit in digits {
            guard let digit = digitValue(unit), digit < radix else { return .nan }
            value = value * Double(radix) + Double(digit)
        }
        return value
    }

    private static func digitValue(_ unit: UInt16) -> Int? {
        switch unit {
        case 0x30...0x39: Int(unit - 0x30)
        case 0x61...0x66: Int(unit - 0x61 + 10)
        case 0x41...0x46: Int(unit - 0x41 + 10)
        default: nil
        }
    }

    /// The longest prefix that is a StrDecimalLiteral (sign, `Infinity`, digits with an optional fraction and
    /// exponent) and its value, or nil when there is none.
    private static func decimalPrefix(_ text: ArraySlice<UInt16>) -> (value: Double, length: Int)? {
        var index = text.startIndex
        var negative = false
        if index < text.endIndex, text[index] == 0x2B || text[index] == 0x2D {  // + -
            negative = text[index] == 0x2D
            index += 1
        }
        let infinity = Array("Infinity".utf16)
        if text[index...].starts(with: infinity) {
            return (negative ? -.infinity : .infinity, index + infinity.count - text.startIndex)
        }
        var literal = negative ? "-" : ""
        let integerStart = index
        while index < text.endIndex, isDigit(text[index]) { index += 1 }
        var integerDigits = String(decoding: text[integerStart..<index], as: UTF16.self)
        var fractionDigits = ""
        if index < text.endIndex, text[index] == 0x2E {  // .
            let fractionStart = index + 1
            var end = fractionStart
            while end < text.endIndex, isDigit(text[end]) { end += 1 }
            if !integerDigits.isEmpty || end > fractionStart {
                fractionDigits = String(decoding: text[fractionStart..<end], as: UTF16.self)
                index = end
            }
        }
        guard !integerDigits.isEmpty || !fractionDigits.isEmpty else { return nil }
        if integerDigits.isEmpty { integerDigits = "0" }
        literal += integerDigits + "." + (fractionDigits.isEmpty ? "0" : fractionDigits)
        if index < text.endIndex, text[index] == 0x65 || text[index] == 0x45 {  // e E
            var end = index + 1
            var exponent = "e"
            if end < text.endIndex, text[end] == 0x2B || text[end] == 0x2D {
                exponent += text[end] == 0x2D ? "-" : "+"
                end += 1
            }
            let digitsStart = end
            while end < text.endIndex, isDigit(text[end]) { end += 1 }
            if end > digitsStart {
                literal += exponent + String(decoding: text[digitsStart..<end], as: UTF16.self)
                index = end
            }
        }
        guard let value = Double(literal) else { return nil }
        return (value, index - text.startIndex)
    }

    private static func isDigit(_ unit: UInt16) -> Bool { unit >= 0x30 && unit <= 0x39 }

    /// WhiteSpace and LineTerminator of ECMAScript.
    private static func isWhiteSpace(_ unit: UInt16) -> Bool {
        switch unit {
        case 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F,
            0x3000, 0xFEFF:
            true
        default:
            false
        }
    }
}
