#if canImport(Glibc)
    import Glibc
#endif

/// Tells systemd about the service's state through `$NOTIFY_SOCKET` (`Type=notify`), as `sd_notify` does, without
/// libsystemd: one datagram per message on a unix socket, whose name is in the abstract namespace when it starts
/// with '@'. Without `$NOTIFY_SOCKET` (not started by systemd) it does nothing.
public struct SystemdNotifier: Sendable {
    public static let ready = "READY=1"
    public static let stopping = "STOPPING=1"

    /// The socket's path, or its abstract name with a leading '@'.
    public let socketPath: String?

    public init(socketPath: String?) {
        self.socketPath = socketPath.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Reads `$NOTIFY_SOCKET`.
    public static func fromEnvironment() -> SystemdNotifier {
        SystemdNotifier(socketPath: getenv("NOTIFY_SOCKET").map { String(cString: $0) })
    }

    /// Sends `message` ("READY=1", "STOPPING=1", or several `KEY=VALUE` lines); nothing to send to is not an error.
    public func notify(_ message: String) throws(NotifyError) {
        guard let socketPath else { return }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name = Array(socketPath.utf8)
        let isAbstract = name.first == UInt8(ascii: "@")
        if isAbstract { name[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // A path needs room for its terminating NUL; an abstract name is exactly its bytes.
        guard name.count + (isAbstract ? 0 : 1) <= capacity else {
            throw NotifyError("socket name too long: \(socketPath)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
        let length =
            (MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? MemoryLayout<sa_family_t>.size) + name.count
            + (isAbstract ? 0 : 1)

        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw NotifyError("socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, socklen_t(length))
            }
        }
        guard sent == bytes.count else {
            throw NotifyError("cannot notify \(socketPath): \(String(cString: strerror(errno)))")
        }
    }
}

public struct NotifyError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
