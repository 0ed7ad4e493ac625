import CoatyMQTT
import MQTTTestSupport
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

    private func options(_ broker: TestBroker, tls: MQTTTLSOptions) -> MQTTConnectOptions {
        var options = broker.connectOptions(clientId: "tls-client")
        options.tls = tls
        options.reconnect.maximumAttempts = 0
        return options
    }
}
