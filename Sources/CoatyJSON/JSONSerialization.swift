extension JSONValue {
    /// The compact JSON text, byte for byte what `JSON.stringify` produces for the same value in JavaScript:
    /// no white space, members in order, numbers in ECMAScript form (`22`, `21.5`, `1e+21`), non-finite numbers
    /// as `null`, and only `"`, `\` and control characters escaped.
    public func serialized() -> String {
        String(decoding: serializedBytes(), as: UTF8.self)
    }

    /// The UTF-8 bytes of `serialized()`.
    public func serializedBytes() -> [UInt8] {
        serializedBytes(reserving: 64)
    }

    func serializedBytes(reserving capacity: Int) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(capacity)
        write(to: &output)
        return output
    }

    public func write(to output: inout [UInt8]) {
        switch self {
        case .null:
            output.append(contentsOf: "null".utf8)
        case .bool(let value):
            output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let value):
            JSONNumberFormat.write(value, to: &output)
        case .string(let value):
            JSONStringFormat.write(value, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            object.write(to: &output)
        }
    }
}

extension JSONObject {
    public func serialized() -> String {
        JSONValue.object(self).serialized()
    }

    /// Room for a typical event at once, so that the buffer does not grow (and copy) twice on the way.
    public func serializedBytes() -> [UInt8] {
        JSONValue.object(self).serializedBytes(reserving: 256)
    }

    public func write(to output: inout [UInt8]) {
        output.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONStringFormat.write(member.key, to: &output)
            output.append(UInt8(ascii: ":"))
            member.value.write(to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }
}

enum JSONStringFormat {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func write(_ string: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { writeEscaped($0, to: &output) }
        output.append(UInt8(ascii: "\""))
    }

    /// Copies the runs between characters that need escaping as they are: most strings have none.
    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        var runStart = 0
        for index in bytes.indices {
            let byte = bytes[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            writeEscape(of: byte, to: &output)
            runStart = index + 1
        }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
    }

    private static func writeEscape(of byte: UInt8, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
        case 0x08: output.append(UInt8(ascii: "b"))
        case 0x0C: output.append(UInt8(ascii: "f"))
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        default:
            output.append(contentsOf: "u00".utf8)
            output.append(hexDigits[Int(byte >> 4)])
            output.append(hexDigits[Int(byte & 0x0F)])
        }
    }
}

/// ECMAScript `Number::toString` for finite doubles, which is what `JSON.stringify` writes.
enum JSONNumberFormat {
    static func write(_ value: Double, to output: inout [UInt8]) {
        guard value.isFinite else {
            output.append(contentsOf: "null".utf8)
            return
        }
        if value == 0 {
            output.append(UInt8(ascii: "0"))  // also for -0, as JavaScript does
            return
        }
        let isIntegral = value.rounded(.towardZero) == value
        if isIntegral, abs(value) < 1e15 {
            output.append(contentsOf: String(Int64(value)).utf8)
            return
        }
        // Swift's description has the shortest round-trip digits, as ECMAScript requires; where it writes them
        // without an exponent (and the value is not integral, which Swift writes with ".0"), the layout is
        // ECMAScript's too. Sensor values take this way.
        let description = value.description
        if !isIntegral, !description.utf8.contains(UInt8(ascii: "e")) {
            output.append(contentsOf: description.utf8)
            return
        }
        let (digits, pointPosition) = decimalDigits(of: abs(value))
        if value < 0 { output.append(UInt8(ascii: "-")) }
        let k = digits.count
        let n = pointPosition
        if k <= n && n <= 21 {
            output.append(contentsOf: digits)
            output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: n - k))
        } else if 0 < n && n <= 21 {
            output.append(contentsOf: digits[0..<n])
            output.append(UInt8(ascii: "."))
            output.append(contentsOf: digits[n...])
        } else if -6 < n && n <= 0 {
            output.append(UInt8(ascii: "0"))
            output.append(UInt8(ascii: "."))
            output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: -n))
            output.append(contentsOf: digits)
        } else {
            output.append(digits[0])
            if k > 1 {
                output.append(UInt8(ascii: "."))
                output.append(contentsOf: digits[1...])
            }
            output.append(UInt8(ascii: "e"))
            let exponent = n - 1
            output.append(UInt8(ascii: exponent < 0 ? "-" : "+"))
            output.append(contentsOf: String(abs(exponent)).utf8)
        }
    }

    /// The shortest round-trip decimal digits of a positive finite value (no leading or trailing zeros) and the
    /// position of the decimal point relative to the first digit: value = 0.d1d2...dk × 10^n.
    static func decimalDigits(of value: Double) -> (digits: [UInt8], pointPosition: Int) {
        // Swift's description is the shortest representation that round-trips, like ECMAScript requires;
        // only its layout differs, so take the digits and the exponent from it.
        let text = Array(value.description.utf8)
        var mantissa = text[...]
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            mantissa = text[..<e]
            exponent = Int(String(decoding: text[(e + 1)...], as: UTF8.self)) ?? 0
        }
        var digits: [UInt8] = []
        digits.reserveCapacity(mantissa.count)
        var integerDigits = 0
        var seenPoint = false
        for byte in mantissa {
            if byte == UInt8(ascii: ".") {
                seenPoint = true
            } else {
                digits.append(byte)
                if !seenPoint { integerDigits += 1 }
            }
        }
        var pointPosition = integerDigits + exponent
        while let first = digits.first, first == UInt8(ascii: "0"), digits.count > 1 {
            digits.removeFirst()
            pointPosition -= 1
        }
        while let last = digits.last, last == UInt8(ascii: "0"), digits.count > 1 {
            digits.removeLast()
        }
        return (digits, pointPosition)
    }
}
