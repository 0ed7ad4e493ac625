import CoatyMQTT
import Testing

@Suite struct MQTTBrokerURLTests {
    @Test(arguments: [
        ("mqtt://broker.local", "broker.local", 1883, false),
        ("mqtts://broker.local", "broker.local", 8883, true),
        ("mqtt://10.0.0.2:1884", "10.0.0.2", 1884, false),
        ("MQTTS://Pi-4_b:443", "Pi-4_b", 443, true),
        ("mqtt://[::1]:1885", "::1", 1885, false),
        ("mqtts://[fe80::1%eth0]", "fe80::1%eth0", 8883, true),
        ("mqtt://[::ffff:192.0.2.1]:65535", "::ffff:192.0.2.1", 65535, false),
    ])
    func parsesGoodURLs(text: String, host: String, port: Int, usesTLS: Bool) throws {
        let url = try MQTTBrokerURL(parsing: text)
        #expect(url == MQTTBrokerURL(host: host, port: port, usesTLS: usesTLS))
        #expect(try MQTTBrokerURL(parsing: url.description) == url)
    }

    @Test func describesWithPortAndBrackets() throws {
        #expect(try MQTTBrokerURL(parsing: "mqtt://[::1]").description == "mqtt://[::1]:1883")
        #expect(try MQTTBrokerURL(parsing: "mqtts://pi").description == "mqtts://pi:8883")
    }

    @Test(arguments: [
        ("broker.local:1883", "expected mqtt://host or mqtts://host"),
        ("ws://broker.local", "unsupported scheme \"ws\""),
        ("tcp://broker.local", "unsupported scheme \"tcp\""),
        ("mqtt://", "missing host"),
        ("mqtt://:1883", "missing host"),
        ("mqtt://broker:0", "port \"0\" is not a number in 1...65535"),
        ("mqtt://broker:65536", "port \"65536\""),
        ("mqtt://broker:+1", "port \"+1\""),
        ("mqtt://broker:", "port \"\""),
        ("mqtt://broker:1883:1", "IPv6 addresses go in brackets"),
        ("mqtt://broker/coaty", "unexpected \"/coaty\" after the host and port"),
        ("mqtt://broker:1883?x=1", "unexpected \"?x=1\""),
        ("mqtt://user:secret@broker", "credentials do not belong in the URL"),
        ("mqtt://bro ker", "\"bro ker\" is not a host name"),
        ("mqtt://::1", "IPv6 addresses go in brackets"),
        ("mqtt://[::1", "missing \"]\""),
        ("mqtt://[broker]", "\"broker\" is not an IPv6 address"),
        ("mqtt://[::1%]", "\"::1%\" is not an IPv6 address"),
        ("mqtt://[::1]x", "unexpected \"x\" after the IPv6 address"),
    ])
    func rejectsBadURLs(text: String, reason: String) {
        #expect {
            try MQTTBrokerURL(parsing: text)
        } throws: { error in
            let error = error as? MQTTBrokerURLError
            return error?.url == text && error?.reason.contains(reason) == true
                && error?.description.hasPrefix("invalid broker URL \"\(text)\": ") == true
        }
    }
}

@Suite struct MQTTReconnectPolicyTests {
    @Test func doublesFromMinimumUpToMaximum() {
        let policy = MQTTReconnectPolicy(minimumDelay: .seconds(1), maximumDelay: .seconds(30))
        #expect((1...7).map(policy.delay(beforeAttempt:)) == [1, 2, 4, 8, 16, 30, 30].map { .seconds($0) })
        #expect(policy.delay(beforeAttempt: 10_000) == .seconds(30))
    }

    @Test func clampsToTheMaximumEvenBetweenDoublings() {
        let policy = MQTTReconnectPolicy(minimumDelay: .milliseconds(100), maximumDelay: .milliseconds(250))
        #expect((1...4).map(policy.delay(beforeAttempt:)) == [100, 200, 250, 250].map { .milliseconds($0) })
    }

    @Test func treatsAttemptsBelowOneAsTheFirst() {
        let policy = MQTTReconnectPolicy(minimumDelay: .milliseconds(10), maximumDelay: .seconds(1))
        #expect(policy.delay(beforeAttempt: 0) == .milliseconds(10))
        #expect(policy.delay(beforeAttempt: -3) == .milliseconds(10))
    }
}
