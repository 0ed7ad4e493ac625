#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads the files an operator names (configuration, rule and password files) without trusting what the name
/// stands for: only a regular file is read, and only up to a limit, so that a device (`/dev/zero`), a FIFO (which
/// would block the reader until a writer comes) or a huge file cannot exhaust or stall the agent.
package enum BoundedFile {
    /// The whole file, if it is a regular file of at most `limit` bytes.
    public static func contents(of path: String, limit: Int) throws(FileReadError) -> [UInt8] {
        // Refused before it is opened: opening some devices does something (a watchdog starts, a tape rewinds).
        try checkRegular(path)
        // O_NONBLOCK: a FIFO swapped in since the check must not block the open (or the reads).
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else { throw FileReadError(file: path, code: .cannotOpen(errno: errno)) }
        defer { close(descriptor) }
        // The opened descriptor is what will be read, so its type and size are the ones that count.
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw FileReadError(file: path, code: .cannotRead(errno: errno)) }
        let kind = FileKind(mode: status.st_mode)
        guard kind == .regular else { throw FileReadError(file: path, code: .notRegular(kind)) }
        let size = Int(status.st_size)
        guard size <= limit else { throw FileReadError(file: path, code: .tooLarge(size: size, limit: limit)) }

        // One byte more than the limit allows, so that a file that grows while it is read is caught.
        var bytes = [UInt8](repeating: 0, count: size + 1)
        var filled = 0
        while true {
            if filled == bytes.count {
                guard bytes.count <= limit else {
                    throw FileReadError(file: path, code: .tooLarge(size: nil, limit: limit))
                }
                bytes += repeatElement(0, count: min(bytes.count, limit + 1 - bytes.count))
            }
            let count = bytes.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress.map { $0 + filled }, buffer.count - filled)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileReadError(file: path, code: .cannotRead(errno: errno))
            }
            if count == 0 { break }
            filled += count
        }
        bytes.removeSubrange(filled...)
        return bytes
    }

    /// Throws unless `path` names a regular file (after following symbolic links), for files that another
    /// library opens (TLS certificates and keys, read by libmosquitto and OpenSSL, which would block on a FIFO).
    public static func checkRegular(_ path: String) throws(FileReadError) {
        var status = stat()
        guard stat(path, &status) == 0 else { throw FileReadError(file: path, code: .cannotOpen(errno: errno)) }
        let kind = FileKind(mode: status.st_mode)
        guard kind == .regular else { throw FileReadError(file: path, code: .notRegular(kind)) }
    }
}

/// What a path names, as `stat` tells (after following symbolic links).
package enum FileKind: Sendable, Hashable, CustomStringConvertible {
    case regular, directory, fifo, characterDevice, blockDevice, socket, unknown

    init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFIFO: self = .fifo
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        case S_IFSOCK: self = .socket
        default: self = .unknown
        }
    }

    /// With its article, as in "not a regular file (a FIFO)".
    public var description: String {
        switch self {
        case .regular: "a regular file"
        case .directory: "a directory"
        case .fifo: "a FIFO"
        case .characterDevice: "a character device"
        case .blockDevice: "a block device"
        case .socket: "a socket"
        case .unknown: "an unknown kind of file"
        }
    }
}

/// Why a file was not read: which file, and why.
package struct FileReadError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// It does not exist, or may not be opened (an errno).
        case cannotOpen(errno: Int32)
        case notRegular(FileKind)
        /// Larger than the limit; `size` is nil when the file grew beyond the limit while it was read.
        case tooLarge(size: Int?, limit: Int)
        case cannotRead(errno: Int32)
    }

    public var file: String
    public var code: Code

    public init(file: String, code: Code) {
        self.file = file
        self.code = code
    }

    /// The reason without the file's name, for messages that name the file already.
    public var reason: String {
        switch code {
        case .cannotOpen(let number), .cannotRead(let number):
            "cannot read the file: \(String(cString: strerror(number)))"
        case .notRegular(let kind): "not a regular file (\(kind))"
        case .tooLarge(let size?, let limit):
            "\(Self.size(size, roundingUp: true)) is larger than the limit of \(Self.size(limit))"
        case .tooLarge(size: nil, let limit): "it grew larger than the limit of \(Self.size(limit)) while it was read"
        }
    }

    public var description: String { "\(file): \(reason)" }

    /// A size the way people read it: "512 bytes", "64 KiB", "3.1 MiB". Rounded up, a size just over a limit does
    /// not read as the limit.
    public static func size(_ bytes: Int, roundingUp: Bool = false) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        guard bytes >= 1024 else { return bytes == 1 ? "1 byte" : "\(bytes) bytes" }
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let tenths = (value * 10).rounded(roundingUp ? .up : .toNearestOrAwayFromZero)
        let text = tenths.truncatingRemainder(dividingBy: 10) == 0 ? "\(Int(tenths / 10))" : "\(tenths / 10)"
        return "\(text) \(units[unit])"
    }
}
