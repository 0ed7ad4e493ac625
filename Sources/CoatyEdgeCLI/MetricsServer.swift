import CoatyRuntime
import DetachedThread
import Logging
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
    let listener: Int32
    private let render: @Sendable () -> [UInt8]
    private let logger: Logger
    private let isStopped = Atomic(false)

    static let maximumRequestSize = 8192
    /// How long `serve()` waits before it accepts again while the process has no descriptor (or memory) to spare.
    static let shortageRetryInterval = Duration.milliseconds(500)

    /// Binds and listens; `serve()` then answers requests until `stop()`.
    public init(
        host: String, port: Int, logger: Logger = Logger(label: "coaty.metrics"),
        render: @escaping @Sendable () -> [UInt8]
    ) throws(MetricsServerError) {
        let address = try SocketAddress(host: host, port: port)
        let descriptor = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw MetricsServerError(.cannotListen, "socket: \(errorText())") }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard address.withSockaddr({ bind(descriptor, $0, $1) }) == 0, listen(descriptor, 16) == 0 else {
            let reason = errorText()
            close(descriptor)
            throw MetricsServerError(.cannotListen, "cannot listen on \(host) port \(port): \(reason)")
        }
        var bound = address
        _ = bound.withMutableSockaddr { address, length in
            var length = length
            return getsockname(descriptor, address, &length)
        }
        self.port = bound.port
        listener = descriptor
        self.render = render
        self.logger = logger
    }

    deinit {
        close(listener)
    }

    /// Accepts and answers connections until `stop()`; blocks, so run it on a thread of its own. Throws when the
    /// listening socket fails otherwise, which leaves nothing to serve.
    ///
    /// A shortage of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) does not end it: it is the process's
    /// condition, which may pass (a burst of connections), and the endpoint only watches the agent, which should not
    /// stop (its outputs going to their safe state) for a scrape it could not take. While it lasts, it logs a
    /// warning once and tries again every `shortageRetryInterval` (the waiting connection stays in the backlog, so
    /// trying at once would spin). An error of the one waiting connection (ECONNABORTED, and the network errors
    /// Linux passes on from it, which accept(2) says to treat as EAGAIN) is that client's: the next one is accepted.
    public func serve() throws(MetricsServerError) {
        var isShort = false
        while !isStopped.load(ordering: .acquiring) {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                let code = errno
                if isStopped.load(ordering: .acquiring) { return }
                switch code {
                case EINTR, EAGAIN, ECONNABORTED, EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP,
                    ENETDOWN, ENETUNREACH, EPERM:
                    continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    if !isShort {
                        logger.warning(
                            "the metrics endpoint cannot accept a connection: \(errorText(code)); trying again every \(Self.shortageRetryInterval) while it lasts"
                        )
                        isShort = true
                    }
                    pause(for: Self.shortageRetryInterval)
                    continue
                default:
                    throw MetricsServerError(.cannotAccept, "accept on port \(port): \(errorText(code))")
                }
            }
            if isShort {
                logger.info("the metrics endpoint accepts connections again")
                isShort = false
            }
            answer(connection)
            close(connection)
        }
    }

    private func pause(for duration: Duration) {
        var remaining = timespec(duration)
        var interval = remaining
        while nanosleep(&interval, &remaining) != 0 && errno == EINTR { interval = remaining }
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
            throw MetricsServerError(.invalidAddress, "\(host) is not an IPv4 or IPv6 address")
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

/// Why the metrics endpoint could not start, or could not go on.
public struct MetricsServerError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The host is not an IPv4 or IPv6 address.
        case invalidAddress
        /// No socket, or it could not be bound (the port is taken, the address is not the machine's) or listen.
        case cannotListen
        /// The listening socket failed otherwise than by a shortage or a client's error: nothing is left to serve.
        case cannotAccept
    }

    public var code: Code
    public var description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

/// The metrics endpoint as a service of the agent's service group: the server on its thread until shutdown.
public struct MetricsService: Service {
    public let server: MetricsServer
    let logger: Logger

    /// Makes swift-metrics record into a Prometheus registry (call it once, before anything creates a metric) and
    /// binds the endpoint that serves it.
    public static func bootstrap(host: String, port: Int, logger: Logger) throws(MetricsServerError) -> MetricsService {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let server = try MetricsServer(host: host, port: port, logger: logger) { registry.emitToBuffer() }
        return MetricsService(server: server, logger: logger)
    }

    /// Serves until shutdown; throws, and so stops the agent (exit status 1, which systemd restarts), with an error
    /// logged, when the endpoint cannot go on.
    public func run() async throws {
        let server = self.server
        let failure = await withTaskCancellationOrGracefulShutdownHandler {
            await withCheckedContinuation { (finished: CheckedContinuation<MetricsServerError?, Never>) in
                let serving: @Sendable () -> Void = {
                    do throws(MetricsServerError) {
                        try server.serve()
                        finished.resume(returning: nil)
                    } catch {
                        finished.resume(returning: error)
                    }
                }
                // No thread to be had: serve on this one rather than not at all.
                if startDetachedThread(serving) != 0 { serving() }
            }
        } onCancelOrGracefulShutdown: {
            server.stop()
        }
        if let failure {
            logger.error("the metrics endpoint failed (\(failure)): the agent stops")
            throw failure
        }
    }
}
