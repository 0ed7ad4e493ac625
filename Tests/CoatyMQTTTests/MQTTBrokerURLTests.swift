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
    @Test func theCeilingDoublesFromMinimumUpToMaximum() {
        let policy = MQTTReconnectPolicy(minimumDelay: .seconds(1), maximumDelay: .seconds(30))
        #expect((1...7).map(policy.ceiling(beforeAttempt:)) == [1, 2, 4, 8, 16, 30, 30].map { .seconds($0) })
        #expect(policy.ceiling(beforeAttempt: 10_000) == .seconds(30))
    }

    @Test func theCeilingClampsToTheMaximumEvenBetweenDoublings() {
        let policy = MQTTReconnectPolicy(minimumDelay: .milliseconds(100), maximumDelay: .milliseconds(250))
        #expect((1...4).map(policy.ceiling(beforeAttempt:)) == [100, 200, 250, 250].map { .milliseconds($0) })
    }

    @Test func treatsAttemptsBelowOneAsTheFirst() {
        let policy = MQTTReconnectPolicy(minimumDelay: .milliseconds(10), maximumDelay: .seconds(1))
        #expect(policy.delay(beforeAttempt: 0) == .milliseconds(10))
        #expect(policy.delay(beforeAttempt: -3) == .milliseconds(10))
    }

    /// Full jitter: every delay lies between the minimum and the attempt's ceiling, and they spread over that range
    /// (agents that lost the broker together do not come back in lockstep).
    @Test func delaysAreJitteredBetweenMinimumAndCeiling() {
        let policy = MQTTReconnectPolicy(minimumDelay: .milliseconds(100), maximumDelay: .seconds(1))
        var generator = SplitMix64(seed: 12)
        for attempt in 1...8 {
            let ceiling = policy.ceiling(beforeAttempt: attempt)
            let delays = (0..<500).map { _ in policy.delay(beforeAttempt: attempt, using: &generator) }
            #expect(delays.allSatisfy { $0 >= .milliseconds(100) && $0 <= ceiling }, "attempt \(attempt)")
            guard attempt > 1 else {
                #expect(Set(delays) == [.milliseconds(100)])
                continue
            }
            // Both ends of the range are reached within a tenth of it.
            let tenth = (ceiling - .milliseconds(100)) / 10
            #expect(
                delays.contains { $0 < .milliseconds(100) + tenth } && delays.contains { $0 > ceiling - tenth },
                "attempt \(attempt)")
        }
    }

    /// The agents' default resumes fast after an outage of any length: no delay is longer than 0.3 s, and none shorter
    /// than 0.1 s, so attempts against a broker that is away stay at a few per second.
    @Test func theDefaultCeilingIsLow() {
        let policy = MQTTReconnectPolicy.fastResume
        var generator = SplitMix64(seed: 7)
        let delays = (1...1000).map { policy.delay(beforeAttempt: $0, using: &generator) }
        #expect(delays.allSatisfy { $0 >= .milliseconds(100) && $0 <= .milliseconds(300) })
        #expect(policy.ceiling(beforeAttempt: 1_000_000) == .milliseconds(300))
        #expect(policy.maximumAttempts == nil)
    }
}

/// A seeded generator, so that a failing draw can be repeated.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
