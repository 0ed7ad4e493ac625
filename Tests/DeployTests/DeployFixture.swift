import CoatyTestSupport
import Foundation

/// Where the repository's deploy files are, and the scratch places the tests make.
enum Deploy {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let directory = repository.appendingPathComponent("deploy")

    static func path(_ relative: String) -> String { directory.appendingPathComponent(relative).path }

    static var isRoot: Bool { getuid() == 0 }

    /// Whether every one of `commands` is on PATH (or in the sbin directories).
    static func has(_ commands: String...) -> Bool {
        let directories =
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/sbin", "/sbin"]
        return commands.allSatisfy { command in
            directories.contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(command)") }
        }
    }

    /// The host's user `mosquitto` (uid, gid), which a broker started as root switches to.
    static var hostMosquittoUser: (uid: UInt32, gid: UInt32)? {
        guard let entry = getpwnam("mosquitto") else { return nil }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }
}

/// A target root for `install.sh --root`: an empty tree with the user database of a Debian system on which the
/// mosquitto package is installed (its user has the host's ids, so that a real broker can read the files).
func makeTargetRoot() throws -> ScratchDirectory {
    let root = try ScratchDirectory("coaty-root")
    let mosquitto = Deploy.hostMosquittoUser ?? (uid: 4242, gid: 4242)
    try root.write(
        "root:x:0:0:root:/root:/bin/bash\nmosquitto:x:\(mosquitto.uid):\(mosquitto.gid)::/var/lib/mosquitto:/usr/sbin/nologin\n",
        to: "etc/passwd")
    try root.write("root:x:0:\nmosquitto:x:\(mosquitto.gid):\n", to: "etc/group")
    try root.write("", to: "etc/shadow", mode: 0o640)
    try root.write("", to: "etc/gshadow", mode: 0o640)
    return root
}

/// Everything about a tree that an installer could change: kind, mode, owner, content or link target.
func snapshot(of directory: URL) throws -> [String: String] {
    var entries: [String: String] = [:]
    let base = directory.path
    guard let walker = FileManager.default.enumerator(atPath: base) else { return entries }
    while let relative = walker.nextObject() as? String {
        let path = "\(base)/\(relative)"
        var status = stat()
        guard lstat(path, &status) == 0 else { continue }
        var entry = "mode \(String(status.st_mode, radix: 8)) owner \(status.st_uid):\(status.st_gid)"
        if (status.st_mode & S_IFMT) == S_IFLNK {
            entry += " -> \((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?")"
        } else if (status.st_mode & S_IFMT) == S_IFREG {
            entry += " content \(try Data(contentsOf: URL(fileURLWithPath: path)).base64EncodedString())"
        }
        entries[relative] = entry
    }
    return entries
}

/// Owner, group and permission bits of a file.
struct FileStatus: Equatable, CustomStringConvertible {
    var uid: UInt32
    var gid: UInt32
    var permissions: UInt32

    init(_ path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else { throw ChildProcessError(description: "cannot stat \(path)") }
        uid = status.st_uid
        gid = status.st_gid
        permissions = status.st_mode & 0o7777
    }

    init(uid: UInt32, gid: UInt32, permissions: UInt32) {
        self.uid = uid
        self.gid = gid
        self.permissions = permissions
    }

    var description: String { "\(uid):\(gid) \(String(permissions, radix: 8))" }
}

/// One entry of a passwd or group file in a target root: its fields.
func databaseEntry(_ name: String, in file: URL) throws -> [String]? {
    try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
        .map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) }
        .first { $0.first == name }
}

/// A TCP port on 127.0.0.1 that nothing listens on right now.
func freePort() throws -> Int {
    let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socketDescriptor >= 0 else { throw ChildProcessError(description: "socket: \(errno)") }
    defer { close(socketDescriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(socketDescriptor, pointer, length) == 0 && getsockname(socketDescriptor, pointer, &length) == 0
        }
    }
    guard bound else { throw ChildProcessError(description: "bind: \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
