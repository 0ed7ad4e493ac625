import CoatyRuntime
import Metrics
import Prometheus
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The agent's metrics in Prometheus's text format over HTTP/1.1, `GET /metrics` only, from one thread of its own.
///
/// Scrapes are rare and small, so the server answers one connection at a time and closes it after the response;
/// a client gets 5 s to send its request. No web framework: this is all the agent needs, and it keeps builds lean.
public final class MetricsServer: Sendable {
    /// The port it listens on (the one asked for, or the one the system chose for port 0).
    public let port: Int
    private let listener: Int32
    private let render: @Sendable () -> [UInt8]
    private let isStopped = Atomic(false)

    static let maximumRequestSize = 8192

    /// Binds and listens; `serve()` then answers requests until `stop()`.
    public init(host: String, port: Int, render: @escaping @Sendable () -> [UInt8]) throws(MetricsServerError) {
        let address = try SocketAddress(host: host, port: port)
        let descriptor = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw MetricsServerError("socket: \(errorText())") }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard address.withSockaddr({ bind(descriptor, $0, $1) }) == 0, listen(descriptor, 16) == 0 else {
            let reason = errorText()
            close(descriptor)
            throw MetricsServerError("cannot listen on \(host) port \(port): \(reason)")
        }
        var bound = address
        _ = bound.withMutableSockaddr { address, length in
            var length = length
            return getsockname(descriptor, address, &length)
        }
        self.port = bound.port
        listener = descriptor
        self.render = render
    }

    deinit {
        close(listener)
    }

    /// Accepts and answers connections until `stop()`; blocks, so run it on a thread of its own.
    public func serve() {
        while !isStopped.load(ordering: .acquiring) {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            answer(connection)
            close(connection)
        }
    }

    /// Makes `serve()` return.
    public func stop() {
        isStopped.store(true, ordering: .releasing)
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func answer(_ connection: Int32) {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !Self.containsHeaderEnd(request) {
            guard request.count < Self.maximumRequestSize else { break }
            let count = recv(connection, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            request += buffer[..<count]
        }
        _ = writeAll(connection, Self.response(to: request, render: render))
    }

    static func containsHeaderEnd(_ bytes: [UInt8]) -> Bool {
        let end: [UInt8] = [13, 10, 13, 10]
        return bytes.count >= 4 && (0...(bytes.count - 4)).contains { bytes[$0..<($0 + 4)].elementsEqual(end) }
    }

    /// The response to a request (its bytes up to the end of the headers): the metrics for `GET /metrics`
    /// (`HEAD` gives the headers only), 404 for other paths, 405 for other methods, 400 for anything else.
    static func response(to request: [UInt8], render: () -> [UInt8]) -> [UInt8] {
        guard Self.containsHeaderEnd(request),
            let lineEnd = request.firstIndex(of: 13),
            case let parts = request[..<lineEnd].split(separator: UInt8(ascii: " ")), parts.count == 3,
            parts[2].starts(with: "HTTP/1.".utf8)
        else {
            return message(400, "Bad Request", "a request is \"GET /metrics HTTP/1.1\" and headers\n")
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        let target = String(decoding: parts[1], as: UTF8.self)
        guard method == "GET" || method == "HEAD" else {
            return message(405, "Method Not Allowed", "only GET\n", extraHeaders: "Allow: GET, HEAD\r\n")
        }
        guard target == "/metrics" || target.hasPrefix("/metrics?") else {
            return message(404, "Not Found", "the metrics are at /metrics\n")
        }
        let body = render()
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + (method == "HEAD" ? [] : body)
    }

    private static func message(_ status: Int, _ reason: String, _ text: String, extraHeaders: String = "") -> [UInt8] {
        Array(
            ("HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(text.utf8.count)\r\n"
                + "\(extraHeaders)Connection: close\r\n\r\n\(text)").utf8)
    }
}

/// An IPv4 or IPv6 socket address.
enum SocketAddress {
    case v4(sockaddr_in)
    case v6(sockaddr_in6)

    init(host: String, port: Int) throws(MetricsServerError) {
        var v6 = sockaddr_in6()
        var v4 = sockaddr_in()
        if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            self = .v6(v6)
        } else if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            self = .v4(v4)
        } else {
            throw MetricsServerError("\(host) is not an IPv4 or IPv6 address")
        }
    }

    var family: Int32 {
        switch self {
        case .v4: AF_INET
        case .v6: AF_INET6
        }
    }

    var port: Int {
        switch self {
        case .v4(let address): Int(UInt16(bigEndian: address.sin_port))
        case .v6(let address): Int(UInt16(bigEndian: address.sin6_port))
        }
    }

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var copy = self
        return copy.withMutableSockaddr { body($0, $1) }
    }

    mutating func withMutableSockaddr<T>(_ body: (UnsafeMutablePointer<sockaddr>, socklen_t) -> T) -> T {
        switch self {
        case .v4(var address):
            defer { self = .v4(address) }
            return withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .v6(var address):
            defer { self = .v6(address) }
            return withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }
}

public struct MetricsServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The metrics endpoint as a service of the agent's service group: the server on its thread until shutdown.
public struct MetricsService: Service {
    public let server: MetricsServer

    /// Makes swift-metrics record into a Prometheus registry (call it once, before anything creates a metric) and
    /// binds the endpoint that serves it.
    public static func bootstrap(host: String, port: Int) throws(MetricsServerError) -> MetricsService {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return MetricsService(server: try MetricsServer(host: host, port: port) { registry.emitToBuffer() })
    }

    public func run() async throws {
        let server = self.server
        await withTaskCancellationOrGracefulShutdownHandler {
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                startThread {
                    server.serve()
                    finished.resume()
                }
            }
        } onCancelOrGracefulShutdown: {
            server.stop()
        }
    }
}
