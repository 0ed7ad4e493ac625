import CoatyMQTT
import Glibc
import MQTTTestSupport
import Synchronization
import Testing

/// TLS with certificates made by `openssl` for the test, against a mosquitto that requires client certificates.
@Suite struct TLSTests {
    @Test func connectsWithCAAndClientCertificate() async throws {
        let certificates = try TestCertificates()
        let broker = try await TestBroker.started(TestBroker.Options(tls: certificates))
        let client = try await TestClient.connected(to: broker, subscribingTo: ["secure/#"]) { options in
            options.tls = MQTTTLSOptions(
                caFile: certificates.caFile, certFile: certificates.clientCertFile, keyFile: certificates.clientKeyFile)
        }
        try client.publish("secure/1", [0, 1, 2, 255])
        #expect(try await client.nextMessage() == MQTTMessage(topic: "secure/1", payload: [0, 1, 2, 255]))

        // OpenSSL writes the TLS records with write() too: a batch leaves in one or two (see GatheredWriteTests).
        let writesBefore = client.transport.socketWrites
        client.transport.publishingTogether {
            for index in 0..<50 { try? client.publish("secure/batch", "\(index)") }
        }
        let batch = try await client.nextMessages(50)
        #expect(batch.map { String(decoding: $0.payload, as: UTF8.self) } == (0..<50).map { "\($0)" })
        let writes = client.transport.socketWrites - writesBefore
        #expect(writes >= 1 && writes <= 2, "\(writes) write() calls for 50 publications")
        try await client.disconnect()
    }

    /// Each failure says why, in the TLS library's words: the broker's certificate from an unknown CA, a client
    /// certificate the broker does not accept, none where the broker requires one. With TLS 1.3 the broker checks
    /// the client's certificate after the client's part of the handshake; its alert may or may not arrive before the
    /// broker closes, so either reason is right for those two.
    @Test func failsWithoutClientCertificateOrWithAnotherCA() async throws {
        let certificates = try TestCertificates()
        let otherAuthority = try TestCertificates(authorityName: "another test CA")
        let broker = try await TestBroker.started(TestBroker.Options(tls: certificates))
        let closedBeforeAccepting = "TLS: the broker ended the session before it accepted the connection"
        for (tls, reasons) in [
            (
                MQTTTLSOptions(caFile: certificates.caFile),
                [
                    "TLS: the broker requires a client certificate (tlsv13 alert certificate required)",
                    "\(closedBeforeAccepting) (does it require a client certificate?)",
                ]
            ),
            (
                MQTTTLSOptions(
                    caFile: otherAuthority.caFile, certFile: certificates.clientCertFile,
                    keyFile: certificates.clientKeyFile),
                ["TLS: certificate verify failed (unknown CA: self-signed certificate in certificate chain)"]
            ),
            (
                MQTTTLSOptions(
                    caFile: certificates.caFile, certFile: otherAuthority.clientCertFile,
                    keyFile: otherAuthority.clientKeyFile),
                [
                    "TLS: the broker does not accept the client certificate (tlsv1 alert unknown ca)",
                    "\(closedBeforeAccepting) (does it trust the client certificate?)",
                ]
            ),
        ] {
            let client = try TestClient(options(broker, tls: tls))
            let events = try await client.events(through: .gaveUp(attempts: 0))
            #expect(events.count == 2, "\(tls)")
            #expect(reasons.contains(events.first?.reason ?? ""), "\(tls): \(events)")
            try await client.disconnect()
        }
    }

    @Test func checksTheHostNameUnlessAllowedToMismatch() async throws {
        let certificates = try TestCertificates(serverAltName: "DNS:elsewhere.invalid")
        let broker = try await TestBroker.started(
            TestBroker.Options(tls: certificates, requiresClientCertificate: false))
        let strict = try TestClient(options(broker, tls: MQTTTLSOptions(caFile: certificates.caFile)))
        let events = try await strict.events(through: .gaveUp(attempts: 0))
        #expect(
            events == [
                .connectionLost(reason: "TLS: the broker's certificate does not name 127.0.0.1 (hostname mismatch)"),
                .gaveUp(attempts: 0),
            ])
        try await strict.disconnect()

        let lenient = try TestClient(
            options(broker, tls: MQTTTLSOptions(caFile: certificates.caFile, allowsHostnameMismatch: true)))
        #expect(try await lenient.events(through: .connected) == [.connected])
        try await lenient.disconnect()
    }

    /// libmosquitto 2.0 retries a handshake whose write failed with EPIPE (OpenSSL's SSL_ERROR_SYSCALL) for good: an
    /// agent whose broker went away while its connect was still under way spun a core and never stopped. Here the
    /// connect waits in a full queue of a listener that then closes, so the retried SYN is refused.
    @Test func aHandshakeWhoseConnectionEndedFails() async throws {
        let certificates = try TestCertificates()
        let listener = try UnansweringListener()
        let client = try TestClient(options(port: listener.port, tls: MQTTTLSOptions(caFile: certificates.caFile)))
        try await Task.sleep(for: .milliseconds(200))
        listener.close()
        let events = try await client.events(through: .gaveUp(attempts: 0), timeout: .seconds(10))
        #expect(events.count == 2, "\(events)")
        let reason = events.first?.reason ?? ""
        #expect(
            reason == "TLS: connection refused during the handshake"
                || reason == "TLS: the connection ended during the handshake", "\(events)")
        try await client.disconnect()
    }

    /// An abrupt stop (an agent that stops before it was connected) ends a handshake that waits for its connect.
    @Test func anAbruptStopEndsAHandshakeUnderWay() async throws {
        let certificates = try TestCertificates()
        let listener = try UnansweringListener()
        defer { listener.close() }
        let client = try TestClient(options(port: listener.port, tls: MQTTTLSOptions(caFile: certificates.caFile)))
        try await Task.sleep(for: .milliseconds(200))
        // Unstructured, so that a stop that never returns fails the test instead of hanging it. The limit is generous:
        // in a full parallel test run the task itself may wait seconds for a thread of the pool.
        let stopped = Mutex(false)
        Task {
            await client.transport.disconnect(.abrupt)
            stopped.withLock { $0 = true }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while !stopped.withLock({ $0 }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(stopped.withLock { $0 }, "the stop did not return within 30 s")
    }

    private func options(port: Int, tls: MQTTTLSOptions) -> MQTTConnectOptions {
        var options = MQTTConnectOptions(host: "127.0.0.1", port: port, clientId: "tls-client", tls: tls)
        options.reconnect.maximumAttempts = 0
        return options
    }

    private func options(_ broker: TestBroker, tls: MQTTTLSOptions) -> MQTTConnectOptions {
        var options = broker.connectOptions(clientId: "tls-client")
        options.tls = tls
        options.reconnect.maximumAttempts = 0
        return options
    }
}

/// A TCP listener on 127.0.0.1 that accepts nothing and whose queue is full, so that a client's connect stays under
/// way (its SYN is dropped and retried after a second) until `close`, after which the retried SYN is refused.
private final class UnansweringListener: Sendable {
    let port: Int
    private let descriptors: Mutex<[Int32]>

    init() throws {
        let listener: Int32
        (listener, port) = try loopbackSocket(listeningWith: 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        // A backlog of 0 holds one connection; the next ones fill what the kernel keeps beyond it.
        var all = [listener]
        for _ in 0..<3 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    _ = connect(filler, address, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            all.append(filler)
        }
        descriptors = Mutex(all)
    }

    func close() {
        descriptors.withLock { descriptors in
            for descriptor in descriptors { _ = Glibc.close(descriptor) }
            descriptors = []
        }
    }

    deinit { close() }
}
