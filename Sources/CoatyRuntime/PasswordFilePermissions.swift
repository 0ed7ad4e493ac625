import CoatyFiles

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A broker password in a file that its group or others may read is refused, as ssh refuses such a private key:
/// whoever else can read it can log in as the agent. A file that cannot be examined is left to the read that follows,
/// which reports it.
package struct PasswordFilePermissions: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    /// The permission bits, e.g. 0o644.
    public var mode: UInt32

    /// Throws if `path` is open to its group or others (`mode & 0o077 != 0`).
    public static func check(_ path: String) throws(PasswordFilePermissions) {
        var status = stat()
        // What is not a regular file is refused by the read, with that reason.
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return }
        let mode = UInt32(status.st_mode) & 0o7777
        guard mode & 0o077 == 0 else { throw PasswordFilePermissions(file: path, mode: mode) }
    }

    public var description: String {
        let who = mode & 0o007 != 0 ? "others" : "its group"
        let access = mode & 0o044 != 0 ? "readable" : "accessible"
        let octal = String(mode, radix: 8)
        return "\(file) is \(access) by \(who) (\(String(repeating: "0", count: max(0, 4 - octal.count)) + octal)); "
            + "chmod 600 it (or allow it with --allow-open-password-file)"
    }
}

/// The broker password in a file, the one way both the agent's configuration and the clients' `--password-file`
/// read it: refused when its group or others may read it (unless allowed), read with a bound of
/// `Configuration.maximumPasswordFileSize`, trailing line breaks removed.
package enum PasswordFile {
    public enum Problem: Error, Sendable, CustomStringConvertible {
        case open(PasswordFilePermissions)
        case unreadable(FileReadError)

        public var description: String {
            switch self {
            case .open(let permissions): permissions.description
            case .unreadable(let error): error.description
            }
        }
    }

    public static func password(in path: String, allowingOpenFile: Bool) throws(Problem) -> String {
        if !allowingOpenFile {
            do { try PasswordFilePermissions.check(path) } catch { throw .open(error) }
        }
        let bytes: [UInt8]
        do { bytes = try BoundedFile.contents(of: path, limit: Configuration.maximumPasswordFileSize) } catch {
            throw .unreadable(error)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        return String(text.reversed().drop { $0 == "\n" || $0 == "\r" }.reversed())
    }
}
