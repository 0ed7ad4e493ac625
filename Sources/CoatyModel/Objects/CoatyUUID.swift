#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Object ids and correlation ids: RFC 4122 version 4 UUIDs in lowercase canonical form on the wire.
///
/// Ids are carried as strings because Coaty JS accepts any non-empty string as an object id; CoatySwift narrowed
/// them to UUIDs and fails to decode objects from agents that use other ids.
public enum CoatyUUID {
    public static func random() -> String {
        // Two 64-bit draws: the system generator makes a getrandom() system call for each draw, and the 16 draws of
        // a byte each that `random(using:)` makes were a tenth of a Call's round trip (one correlation id each).
        var generator = SystemRandomNumberGenerator()
        let halves = (generator.next(), generator.next())
        return withUnsafeBytes(of: halves) { canonical($0) }
    }

    /// `count` ids from one read of the system's random source, rather than two getrandom() calls each: a requester
    /// makes the correlation ids of its spare response topics a batch at a time, between a request and its response.
    /// Falls back to `random()` where the source cannot be read.
    package static func random(count: Int) -> [String] {
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: 16 * count)
        guard randomSource >= 0, bytes.withUnsafeMutableBytes({ fill($0, from: randomSource) }) else {
            return (0..<count).map { _ in random() }
        }
        return bytes.withUnsafeBytes { all in
            (0..<count).map { index in
                canonical(UnsafeRawBufferPointer(rebasing: all[(16 * index)..<(16 * index + 16)]))
            }
        }
    }

    /// `/dev/urandom`, opened once (close-on-exec) when ids are first made in batches; -1 if it cannot be opened.
    private static let randomSource = open("/dev/urandom", O_RDONLY | O_CLOEXEC)

    /// Fills `buffer` from `descriptor`; false on an error or the end of the file.
    private static func fill(_ buffer: UnsafeMutableRawBufferPointer, from descriptor: Int32) -> Bool {
        guard let base = buffer.baseAddress else { return true }
        var filled = 0
        while filled < buffer.count {
            let count = read(descriptor, base + filled, buffer.count - filled)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            filled += count
        }
        return true
    }

    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> String {
        (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }.withUnsafeBytes { canonical($0) }
    }

    /// The version 4 UUID of 16 random bytes, in canonical form; written straight into the string's storage (a
    /// requester's upkeep makes 16 at a time, and the copies and the digit table made per id were half their cost).
    private static func canonical(_ random: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: 36) { text in
            var position = 0
            for index in 0..<16 {
                var byte = random[index]
                if index == 6 { byte = byte & 0x0F | 0x40 }
                if index == 8 { byte = byte & 0x3F | 0x80 }
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[position] = UInt8(ascii: "-")
                    position += 1
                }
                text[position] = hexDigit(byte >> 4)
                text[position + 1] = hexDigit(byte & 0x0F)
                position += 2
            }
            return position
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// Whether `text` is a canonical version 4 UUID as Coaty generates them.
    public static func isVersion4(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            switch index {
            case 8, 13, 18, 23:
                guard byte == UInt8(ascii: "-") else { return false }
            case 14:
                guard byte == UInt8(ascii: "4") else { return false }
            case 19:
                guard "89abAB".utf8.contains(byte) else { return false }
            default:
                guard "0123456789abcdefABCDEF".utf8.contains(byte) else { return false }
            }
        }
        return true
    }
}
