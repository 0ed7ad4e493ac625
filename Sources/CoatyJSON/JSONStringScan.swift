/// Finds the bytes of a string's text that JSON treats specially: `"`, `\` and the control characters below 0x20,
/// which end a string or need an escape. Ids and names, the bulk of a Coaty payload, have none, so the parser and the
/// writer skip them eight bytes at a time.
enum JSONStringScan {
    /// Whether JSON treats `byte` specially in a string's text: the one-byte form of the word test below.
    @inline(__always)
    static func isSpecial(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// The index of the first special byte from `start` on, or, when the words before them hold none, of the start
    /// of the last fewer than eight bytes; the caller goes on byte by byte from there (a word that holds one returns
    /// its own start). Each word is tested with the bit tricks for a zero byte (Hacker's Delight, 6-1):
    /// `(x - 0x0101..) & ~x & 0x8080..` is nonzero exactly when some byte of `x` is zero, so with `x` the word
    /// XOR-ed with a repeated `"` or `\` it finds those, and `(word - 0x2020..) & ~word & 0x8080..` is nonzero
    /// exactly when some byte is below 0x20.
    @inline(__always)
    static func firstSpecialByte(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = bytes.baseAddress else { return start }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let quotes = ones &* UInt64(UInt8(ascii: "\""))
        let backslashes = ones &* UInt64(UInt8(ascii: "\\"))
        var index = start
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            let quote = word ^ quotes
            let backslash = word ^ backslashes
            let special =
                ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
            if special & highBits != 0 { return index }
            index += 8
        }
        return index
    }
}
