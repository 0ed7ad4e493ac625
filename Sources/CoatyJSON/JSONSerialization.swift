/// Writes JSON text into a buffer of a fixed size, and counts all of it: what does not fit is left out, and
/// `count` beyond the buffer's size says how much room the whole text needs.
public struct JSONWriter {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    /// The bytes of the text so far, also those that did not fit.
    public private(set) var count = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    /// The text that `write` writes, in an array of its size: written into room on the stack for `expectedCount`
    /// bytes and copied into the array at once. Making the array in this module (`Array(unsafeUninitializedCapacity:)`)
    /// looked its type's metadata up in the runtime's cache for every value; appending to the array piece by piece
    /// checked its uniqueness and capacity for each piece. A text that needs more room (an Advertise of an IO node
    /// with many points) is written again straight into an array of the size the first pass counted: on the stack
    /// it would leave the thread's stack pages touched for good (the whole text's size, hundreds of KiB for a
    /// thousand points), as the resident memory of an agent with 1000 sensors showed (+0.3 MiB anonymous).
    static func bytes(expectedCount: Int, _ write: (inout JSONWriter) -> Void) -> [UInt8] {
        let (bytes, needed) = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: expectedCount) { room in
            var writer = JSONWriter(room)
            write(&writer)
            guard writer.count <= room.count else { return ([UInt8](), writer.count) }
            var bytes: [UInt8] = []
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: room[..<writer.count]))
            return (bytes, writer.count)
        }
        guard needed > expectedCount else { return bytes }
        return [UInt8](unsafeUninitializedCapacity: needed) { buffer, initialized in
            var writer = JSONWriter(buffer)
            write(&writer)
            // The second pass writes as much as the first counted: it fits.
            initialized = Swift.min(writer.count, buffer.count)
        }
    }

    public mutating func append(_ byte: UInt8) {
        if count < buffer.count { buffer[count] = byte }
        count += 1
    }

    public mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        if bytes.count <= buffer.count - count, let source = bytes.baseAddress, let target = buffer.baseAddress {
            (target + count).update(from: source, count: bytes.count)
        }
        count += bytes.count
    }

    mutating func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func append(utf8Of string: String) {
        var string = string
        string.withUTF8 { append($0) }
    }

    /// Byte by byte, for the rare numbers that need ECMAScript's layout.
    mutating func appendAll(_ bytes: some Sequence<UInt8>) {
        for byte in bytes { append(byte) }
    }
}

/// What can be written as JSON text, into a byte array of its size.
public protocol JSONSerializable {
    func write(to writer: inout JSONWriter)
    /// The room `serializedBytes` makes at first: enough for most values of the kind.
    var expectedSerializedCount: Int { get }
}

extension JSONSerializable {
    /// Room for a typical event at once.
    public var expectedSerializedCount: Int { 256 }

    /// The JSON text as bytes, written straight into the array's storage: into room for `expectedSerializedCount`
    /// bytes, and when the text needs more, again into room of the size the first pass counted. Appending to an
    /// array checked its uniqueness and capacity for every piece of every event published.
    public func serializedBytes() -> [UInt8] {
        JSONWriter.bytes(expectedCount: expectedSerializedCount) { write(to: &$0) }
    }

    public func serialized() -> String {
        String(decoding: serializedBytes(), as: UTF8.self)
    }

    /// The size of the JSON text, counted without writing it.
    public var serializedCount: Int {
        var writer = JSONWriter(UnsafeMutableBufferPointer(start: nil, count: 0))
        write(to: &writer)
        return writer.count
    }
}

extension JSONValue: JSONSerializable {
    /// A value on an IO route is mostly a number.
    public var expectedSerializedCount: Int { 64 }

    /// The compact JSON text, byte for byte what `JSON.stringify` produces for the same value in JavaScript:
    /// no white space, members in order, numbers in ECMAScript form (`22`, `21.5`, `1e+21`), non-finite numbers
    /// as `null`, and only `"`, `\` and control characters escaped.
    public func write(to output: inout JSONWriter) {
        switch self {
        case .null:
            output.append("null")
        case .bool(let value):
            output.append(value ? "true" : "false")
        case .number(let value):
            JSONNumberFormat.write(value, to: &output)
        case .string(let value):
            JSONStringFormat.write(value, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for index in elements.indices {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                elements[index].write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            object.write(to: &output)
        }
    }
}

extension JSONObject: JSONSerializable {
    public func write(to output: inout JSONWriter) {
        output.append(UInt8(ascii: "{"))
        for index in members.indices {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONStringFormat.write(members[index].key, to: &output)
            output.append(UInt8(ascii: ":"))
            members[index].value.write(to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }
}

enum JSONStringFormat {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func write(_ string: String, to output: inout JSONWriter) {
        output.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { writeEscaped($0, to: &output) }
        output.append(UInt8(ascii: "\""))
    }

    /// Copies the runs between characters that need escaping as they are: most strings have none, and are
    /// checked eight bytes at a time.
    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout JSONWriter) {
        var runStart = 0
        for index in JSONStringScan.firstSpecialByte(in: bytes, from: 0)..<bytes.count {
            let byte = bytes[index]
            guard JSONStringScan.isSpecial(byte) else { continue }
            output.append(UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            writeEscape(of: byte, to: &output)
            runStart = index + 1
        }
        output.append(UnsafeBufferPointer(rebasing: bytes[runStart...]))
    }

    private static func writeEscape(of byte: UInt8, to output: inout JSONWriter) {
        output.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
        case 0x08: output.append(UInt8(ascii: "b"))
        case 0x0C: output.append(UInt8(ascii: "f"))
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        default:
            output.append("u00")
            output.append(hexDigits[Int(byte >> 4)])
            output.append(hexDigits[Int(byte & 0x0F)])
        }
    }
}

/// ECMAScript `Number::toString` for finite doubles, which is what `JSON.stringify` writes.
enum JSONNumberFormat {
    static func write(_ value: Double, to output: inout JSONWriter) {
        guard value.isFinite else {
            output.append("null")
            return
        }
        if value == 0 {
            output.append(UInt8(ascii: "0"))  // also for -0, as JavaScript does
            return
        }
        let isIntegral = value.rounded(.towardZero) == value
        if isIntegral, abs(value) < 1e15 {
            output.append(utf8Of: String(Int64(value)))
            return
        }
        // Swift's description has the shortest round-trip digits, as ECMAScript requires; where it writes them
        // without an exponent (and the value is not integral, which Swift writes with ".0"), the layout is
        // ECMAScript's too. Sensor values take this way.
        let description = value.description
        if !isIntegral, !description.utf8.contains(UInt8(ascii: "e")) {
            output.append(utf8Of: description)
            return
        }
        let (digits, pointPosition) = decimalDigits(of: abs(value))
        if value < 0 { output.append(UInt8(ascii: "-")) }
        let k = digits.count
        let n = pointPosition
        if k <= n && n <= 21 {
            output.appendAll(digits)
            output.appendAll(repeatElement(UInt8(ascii: "0"), count: n - k))
        } else if 0 < n && n <= 21 {
            output.appendAll(digits[0..<n])
            output.append(UInt8(ascii: "."))
            output.appendAll(digits[n...])
        } else if -6 < n && n <= 0 {
            output.append(UInt8(ascii: "0"))
            output.append(UInt8(ascii: "."))
            output.appendAll(repeatElement(UInt8(ascii: "0"), count: -n))
            output.appendAll(digits)
        } else {
            output.append(digits[0])
            if k > 1 {
                output.append(UInt8(ascii: "."))
                output.appendAll(digits[1...])
            }
            output.append(UInt8(ascii: "e"))
            let exponent = n - 1
            output.append(UInt8(ascii: exponent < 0 ? "-" : "+"))
            output.appendAll(String(abs(exponent)).utf8)
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
