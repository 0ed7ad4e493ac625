import CoatyTestSupport
import Foundation
import Testing

@testable import CoatyEdgeCLI

@Suite struct SystemdNotifierTests {
    @Test(arguments: ["path", "abstract"])
    func sendsDatagramsToTheNotifySocket(kind: String) async throws {
        let name =
            kind == "path"
            ? FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString)").path
            : "@coaty-edge-test-\(UUID().uuidString)"
        let socket = try NotifySocket(name: name)
        let notifier = SystemdNotifier(socketPath: name)
        try notifier.notify(SystemdNotifier.ready)
        #expect(try await socket.receive() == "READY=1")
        try notifier.notify(SystemdNotifier.stopping)
        #expect(try await socket.receive() == "STOPPING=1")
    }

    @Test func withoutASocketThereIsNothingToDo() throws {
        try SystemdNotifier(socketPath: nil).notify(SystemdNotifier.ready)
        try SystemdNotifier(socketPath: "").notify(SystemdNotifier.ready)
    }

    @Test func aSocketThatIsNotThereIsAnError() {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("absent-\(UUID().uuidString)").path
        #expect(throws: NotifyError.self) { try SystemdNotifier(socketPath: missing).notify(SystemdNotifier.ready) }
    }
}

@Suite struct MetricsServerTests {
    static func withServer(host: String = "127.0.0.1", _ body: (MetricsServer) async throws -> Void) async throws {
        let server = try MetricsServer(host: host, port: 0) { Array("# TYPE x_total counter\nx_total 3\n".utf8) }
        let thread = Thread { try? server.serve() }
        thread.start()
        defer { server.stop() }
        try await body(server)
    }

    @Test(arguments: ["127.0.0.1", "::1"])
    func servesTheMetricsOnGET(host: String) async throws {
        try await Self.withServer(host: host) { server in
            let response = try await httpExchange(
                port: server.port, host: host, request: "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(response.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"))
            #expect(response.contains("Content-Length: 33\r\n"))
            #expect(response.hasSuffix("\r\n\r\n# TYPE x_total counter\nx_total 3\n"))
        }
    }

    @Test func answersOtherRequestsWithTheirErrors() async throws {
        try await Self.withServer { server in
            let notFound = try await httpExchange(port: server.port, request: "GET / HTTP/1.1\r\n\r\n")
            #expect(notFound.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
            let wrongMethod = try await httpExchange(
                port: server.port, request: "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
            #expect(
                wrongMethod.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n")
                    && wrongMethod.contains("Allow: GET, HEAD\r\n"))
            let head = try await httpExchange(port: server.port, request: "HEAD /metrics HTTP/1.0\r\n\r\n")
            #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.hasSuffix("\r\n\r\n"))
            let garbage = try await httpExchange(port: server.port, request: "hello\r\n\r\n")
            #expect(garbage.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        }
    }

    /// A listening socket that fails otherwise than by `stop()` ends `serve()` with the reason, and the service logs
    /// an error saying that the agent stops, and throws (the agent's exit status 1): before, `serve()` returned and
    /// the agent stopped without a word.
    @Test func aFailingListenerStopsTheServiceWithAnError() async throws {
        let lines = LogLines()
        let server = try MetricsServer(host: "127.0.0.1", port: 0, logger: lines.logger()) { [] }
        let service = MetricsService(server: server, logger: lines.logger())
        let running = Task { try await service.run() }
        // What `stop()` does to end a waiting accept, without `stop()`: accept fails with EINVAL.
        #expect(shutdown(server.listener, Int32(SHUT_RDWR)) == 0)
        let failure = await #expect(throws: MetricsServerError.self) { try await running.value }
        let reason = "accept on port \(server.port): Invalid argument"
        #expect(failure?.code == .cannotAccept && failure?.description == reason)
        #expect(lines.lines == ["error: the metrics endpoint failed (\(reason)): the agent stops"])
    }

    /// A taken port cannot be listened on; a host name (rather than an address) is refused before any socket.
    @Test func aTakenPortOrAHostNameIsAnErrorWithItsCode() throws {
        let first = try MetricsServer(host: "127.0.0.1", port: 0) { [] }
        let taken = #expect(throws: MetricsServerError.self) {
            try MetricsServer(host: "127.0.0.1", port: first.port) { [] }
        }
        #expect(taken?.code == .cannotListen)
        #expect(taken?.description == "cannot listen on 127.0.0.1 port \(first.port): Address already in use")
        let named = #expect(throws: MetricsServerError.self) { try MetricsServer(host: "localhost", port: 0) { [] } }
        #expect(named?.code == .invalidAddress)
        #expect(named?.description == "localhost is not an IPv4 or IPv6 address")
    }
}
