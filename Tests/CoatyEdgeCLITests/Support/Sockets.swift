import Foundation

/// A unix datagram socket standing in for systemd's notification socket: a path, or an abstract name ('@...').
final class NotifySocket: Sendable {
    let name: String
    private let descriptor: Int32

    init(name: String) throws {
        self.name = name
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        let isAbstract = bytes.first == UInt8(ascii: "@")
        if isAbstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (isAbstract ? 0 : 1))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else { throw SocketError("bind \(name): errno \(errno)") }
    }

    deinit {
        close(descriptor)
        if !name.hasPrefix("@") { unlink(name) }
    }

    /// The next datagram as text; throws when none arrives within `limit`.
    func receive(within limit: Duration = .seconds(20)) async throws -> String {
        let descriptor = self.descriptor
        let seconds = limit.components.seconds
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                var timeout = timeval(tv_sec: Int(seconds), tv_usec: 0)
                setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count < 0 {
                    continuation.resume(throwing: SocketError("no datagram within \(limit): errno \(errno)"))
                } else {
                    continuation.resume(returning: String(decoding: buffer[..<count], as: UTF8.self))
                }
            }.start()
        }
    }
}

struct SocketError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One HTTP/1.1 exchange with a local server: the request as given, the whole response (the server closes).
func httpExchange(port: Int, host: String = "127.0.0.1", request: String) async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            do {
                continuation.resume(returning: try blockingExchange(port: port, host: host, request: request))
            } catch {
                continuation.resume(throwing: error)
            }
        }.start()
    }
}

private func blockingExchange(port: Int, host: String, request: String) throws -> String {
    let isIPv6 = host.contains(":")
    let descriptor = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw SocketError("socket: errno \(errno)") }
    defer { close(descriptor) }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let connected: Int32
    if isIPv6 {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET6, host, &address.sin6_addr)
        connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    } else {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
    guard connected == 0 else { throw SocketError("connect to port \(port): errno \(errno)") }
    let bytes = Array(request.utf8)
    guard send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else {
        throw SocketError("send: errno \(errno)")
    }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = recv(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { break }
        response += buffer[..<count]
    }
    return String(decoding: response, as: UTF8.self)
}
