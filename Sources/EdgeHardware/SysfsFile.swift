#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import CoatyJSON
import Dispatch

/// Reads small sysfs attribute files, the way the kernel exposes 1-Wire devices and thermal zones.
enum SysfsFile {
    /// The largest attribute this agent reads; sysfs attributes are at most one page.
    private static let capacity = 4096

    /// The whole file as text. A missing file or directory is `noDevice`; any other failure is `io`.
    static func contents(of path: String) throws(SensorError) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure(errno, path) }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: capacity)
        var filled = 0
        while filled < capacity {
            let count = buffer.withUnsafeMutableBytes { bytes in
                read(descriptor, bytes.baseAddress.map { $0 + filled }, capacity - filled)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure(errno, path)
            }
            if count == 0 { break }
            filled += count
        }
        return String(decoding: buffer[..<filled], as: UTF8.self)
    }

    /// Reads the file on `queue` instead of a cooperative thread: a 1-Wire read blocks for the whole
    /// temperature conversion (up to 750 ms), which must not stall the agent's other tasks.
    static func contents(of path: String, on queue: DispatchQueue) async throws(SensorError) -> String {
        let result: Result<String, SensorError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(SensorError) in try contents(of: path) })
            }
        }
        return try result.get()
    }

    /// The names in a directory, or nil when the directory does not exist.
    static func entries(of directory: String) -> [String]? {
        guard let stream = opendir(directory) else { return nil }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func failure(_ code: Int32, _ path: String) -> SensorError {
        switch code {
        case ENOENT, ENOTDIR, ENODEV, ENXIO: .noDevice(path)
        default: .io(errno: code, path)
        }
    }

    /// Text from a device, quoted and escaped for an error message, cut short if long.
    static func quoted(_ text: some StringProtocol) -> String {
        let limit = 120
        let shown = JSONValue.string(String(text.prefix(limit))).serialized()
        return text.count > limit ? shown + "..." : shown
    }

    /// The text without the whitespace around it; attributes end in a newline.
    static func trimmed(_ text: String) -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }
        return String(text.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
