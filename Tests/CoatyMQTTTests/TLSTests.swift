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

    @Test func failsWithoutClientCertificateOrWithAnotherCA() async throws {
        let certificates = try TestCertificates()
        let otherAuthority = try TestCertificates()
        let broker = try await TestBroker.started(TestBroker.Options(tls: certificates))
        for tls in [
            MQTTTLSOptions(caFile: certificates.caFile),
            MQTTTLSOptions(
                caFile: otherAuthority.caFile, certFile: certificates.clientCertFile,
                keyFile: certificates.clientKeyFile),
            MQTTTLSOptions(
                caFile: certificates.caFile, certFile: otherAuthority.clientCertFile,
                keyFile: otherAuthority.clientKeyFile),
        ] {
            let client = try TestClient(options(broker, tls: tls))
            let events = try await client.events(through: .gaveUp(attempts: 0))
            #expect(events.count == 2 && isConnectionLost(events[0]), "\(tls)")
            try await client.disconnect()
        }
    }

    @Test func checksTheHostNameUnlessAllowedToMismatch() async throws {
        let certificates = try TestCertificates(serverAltName: "DNS:elsewhere.invalid")
        let broker = try await TestBroker.started(
            TestBroker.Options(tls: certificates, requiresClientCertificate: false))
        let strict = try TestClient(options(broker, tls: MQTTTLSOptions(caFile: certificates.caFile)))
        let events = try await strict.events(through: .gaveUp(attempts: 0))
        #expect(events.count == 2 && isConnectionLost(events[0]))
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
