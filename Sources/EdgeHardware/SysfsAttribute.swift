#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A sysfs attribute that is read again and again (a thermal zone's `temp`): the file stays open and each read is
/// one `pread` from its start into a buffer on the stack, parsed where it lies. The kernel regenerates an
/// attribute's text on every read from offset 0, so the open file never goes stale; after a failed read the file is
/// closed and opened afresh by the next one, so a device that goes away and comes back is found again.
final class SysfsAttribute: Sendable {
    let path: String
    /// The open file, or -1 before the first read and after a failure. The lock also keeps a read from racing a
    /// close.
    private let descriptor = Mutex<Int32>(-1)

    /// The largest attribute read; sysfs attributes are at most one page.
    private static let capacity = 4096

    init(path: String) {
        self.path = path
    }

    deinit {
        descriptor.withLock { if $0 >= 0 { close($0) } }
    }

    /// The whole attribute, trimmed of the whitespace around it, as a decimal integer (`-10125`, `48312`). A missing
    /// file is `noDevice`, any other failure of the file is `io`, and text that is not one integer is an
    /// `invalidReading` that quotes it.
    func integer() throws(SensorError) -> Int64 {
        try withUnsafeTemporaryAllocation(byteCount: Self.capacity, alignment: 1) { buffer throws(SensorError) -> Int64 in
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<(try read(into: buffer))])
            guard let value = Self.parseInteger(bytes) else {
                throw SensorError.invalidReading("\(path) holds \(SysfsFile.quoted(String(decoding: bytes, as: UTF8.self)))")
            }
            return value
        }
    }

    /// Reads the attribute from its start; returns the number of bytes read.
    private func read(into buffer: UnsafeMutableRawBufferPointer) throws(SensorError) -> Int {
        let result: Result<Int, SensorError> = descriptor.withLock { descriptor in
            if descriptor < 0 {
                descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { return .failure(SysfsFile.failure(errno, path)) }
            }
            var filled = 0
            while filled < buffer.count {
                let count = pread(descriptor, buffer.baseAddress.map { $0 + filled }, buffer.count - filled, off_t(filled))
                if count < 0 {
                    if errno == EINTR { continue }
                    let code = errno
                    close(descriptor)
                    descriptor = -1
                    return .failure(SysfsFile.failure(code, path))
                }
                if count == 0 { break }
                filled += count
            }
            return .success(filled)
        }
        return try result.get()
    }

    /// The integer the bytes spell, with whitespace around it allowed and a sign before it: what `Int64(String)`
    /// takes after trimming, without making a string.
    static func parseInteger(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D }
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end && isSpace(bytes[start]) { start += 1 }
        while end > start && isSpace(bytes[end - 1]) { end -= 1 }
        var negative = false
        if start < end && (bytes[start] == UInt8(ascii: "-") || bytes[start] == UInt8(ascii: "+")) {
            negative = bytes[start] == UInt8(ascii: "-")
            start += 1
        }
        guard start < end else { return nil }
        var value: Int64 = 0
        for index in start..<end {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit <= 9 else { return nil }
            // Accumulated negatively, so that Int64.min parses too.
            let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (next, underflowed) = shifted.subtractingReportingOverflow(Int64(digit))
            guard !overflowed && !underflowed else { return nil }
            value = next
        }
        if negative { return value }
        let (positive, overflowed) = Int64(0).subtractingReportingOverflow(value)
        return overflowed ? nil : positive
    }
}
