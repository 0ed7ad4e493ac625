#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import CFileSystemType
import Synchronization

/// A sysfs attribute that is read again and again (a thermal zone's `temp`): the file stays open and each read is
/// one `pread` from its start into a buffer on the stack, parsed where it lies. The kernel regenerates an
/// attribute's text on every read from offset 0, so the open file never goes stale, and a read of an attribute whose
/// device went away fails (ENODEV). After a failed read the file is closed and opened afresh by the next one, so a
/// device that comes back is found again.
///
/// A file elsewhere (a tree that tests, the emulation or a benchmark write; umockdev's testbed, where its preload
/// sends `/sys`) does not fail when it is removed or replaced by a rename (the emulation writes its files so), so a
/// read of such a file also checks with `fstat` that the open file still has a name, and opens the path again if not:
/// the first read at least `linkCheckInterval` after the previous check does, so that a zone read ten times a second
/// costs one `fstat` a second, not one per read, and a removed or replaced file is noticed within about that
/// interval. Whether the file is on sysfs is asked once per open (`fstatfs`): a real attribute is one `pread` a read.
/// The file is opened without access-time updates where the kernel allows it (`coaty_open_for_rereading`): on a disk
/// file system each read would otherwise go through `touch_atime`.
final class SysfsAttribute: Sendable {
    let path: String
    /// How long a read of a file outside sysfs trusts the previous check that the file still has a name, in
    /// nanoseconds.
    private let linkCheckNanoseconds: Int64
    private let file = Mutex(OpenFile())

    /// The open file, or none (-1) before the first read and after a failure. The lock also keeps a read from racing
    /// a close.
    private struct OpenFile {
        var descriptor: Int32 = -1
        /// Whether reads check that the file still has a name: it is not on sysfs.
        var checksLink = false
        /// When the file was opened or last found to have a name, in nanoseconds of `CLOCK_MONOTONIC_COARSE`.
        var linkCheckedAt: Int64 = 0
    }

    /// The largest attribute read; sysfs attributes are at most one page.
    private static let capacity = 4096

    /// `linkCheckInterval`: how long after a check that the file still has a name the next is due (see above); the
    /// emulation writes its files once a second.
    init(path: String, linkCheckInterval: Duration = .seconds(1)) {
        self.path = path
        let (seconds, attoseconds) = linkCheckInterval.components
        linkCheckNanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    deinit {
        file.withLock { if $0.descriptor >= 0 { close($0.descriptor) } }
    }

    /// Whether reads check that the open file still has a name (it is not on sysfs); false before the first read.
    var checksLink: Bool { file.withLock { $0.descriptor >= 0 && $0.checksLink } }

    /// The whole attribute, trimmed of the whitespace around it, as a decimal integer (`-10125`, `48312`). A missing
    /// file is `noDevice`, any other failure of the file is `io`, and text that is not one integer is an
    /// `invalidReading` that quotes it.
    func integer() throws(SensorError) -> Int64 {
        try withUnsafeTemporaryAllocation(byteCount: Self.capacity, alignment: 1) {
            buffer throws(SensorError) -> Int64 in
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<(try read(into: buffer))])
            guard let value = Self.parseInteger(bytes) else {
                throw SensorError.invalidReading(
                    "\(path) holds \(SysfsFile.quoted(String(decoding: bytes, as: UTF8.self)))")
            }
            return value
        }
    }

    /// Reads the attribute from its start; returns the number of bytes read.
    private func read(into buffer: UnsafeMutableRawBufferPointer) throws(SensorError) -> Int {
        let result: Result<Int, SensorError> = file.withLock { file in
            if file.descriptor < 0 {
                guard openPath(&file) else { return .failure(SysfsFile.failure(errno, path)) }
            }
            var count = Self.readAll(file.descriptor, into: buffer)
            if count >= 0 && file.checksLink && isLinkCheckDue(&file) && !Self.isLinked(file.descriptor) {
                // Removed or replaced since it was opened: read what is at the path now.
                close(file.descriptor)
                file.descriptor = -1
                guard openPath(&file) else { return .failure(SysfsFile.failure(errno, path)) }
                count = Self.readAll(file.descriptor, into: buffer)
            }
            guard count >= 0 else {
                let code = errno
                close(file.descriptor)
                file.descriptor = -1
                return .failure(SysfsFile.failure(code, path))
            }
            return .success(count)
        }
        return try result.get()
    }

    /// Opens the path; false with errno set when it cannot.
    private func openPath(_ file: inout OpenFile) -> Bool {
        file.descriptor = coaty_open_for_rereading(path)
        guard file.descriptor >= 0 else { return false }
        file.checksLink = coaty_file_is_on_sysfs(file.descriptor) == 0
        file.linkCheckedAt = Self.coarseNanoseconds()
        return true
    }

    /// Whether the link check is due (`linkCheckInterval` since the last one); if so, it counts as done now.
    private func isLinkCheckDue(_ file: inout OpenFile) -> Bool {
        let now = Self.coarseNanoseconds()
        guard now - file.linkCheckedAt >= linkCheckNanoseconds else { return false }
        file.linkCheckedAt = now
        return true
    }

    /// The monotonic clock at the kernel tick's resolution (milliseconds): read from the vDSO without the time
    /// counter, the cheapest clock there is, and fine enough for an interval of a second.
    private static func coarseNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Whether the open file still has a name: false once it was removed, or replaced by a rename.
    private static func isLinked(_ descriptor: Int32) -> Bool {
        var status = stat()
        return fstat(descriptor, &status) != 0 || status.st_nlink > 0
    }

    /// Reads from offset 0 until the end of the file or of the buffer; the number of bytes, or -1 with errno set. A
    /// read that returns less than asked for reached the end (sysfs hands out an attribute whole, a regular file all
    /// up to its end), so one `pread` reads an attribute.
    private static func readAll(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var filled = 0
        while filled < buffer.count {
            let asked = buffer.count - filled
            let count = pread(descriptor, buffer.baseAddress.map { $0 + filled }, asked, off_t(filled))
            if count < 0 {
                if errno == EINTR { continue }
                return -1
            }
            filled += count
            if count < asked { break }
        }
        return filled
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
