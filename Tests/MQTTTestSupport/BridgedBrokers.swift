import CoatyMQTT
import Foundation

/// Site brokers bridged to a central broker on loopback, as a fleet of sites runs them (deploy/mosquitto/bridge):
/// each site's mosquitto connects to the central one and bridges `coaty/#` both ways at QoS 0; the central broker
/// has no bridges of its own (a star, so that no message can come round again).
public final class BridgedBrokers: Sendable {
    public let central: TestBroker
    public let sites: [TestBroker]

    /// How a site bridges to the central broker.
    public struct Bridge: Sendable {
        /// mosquitto's `try_private`: the site's bridge tells the central broker that it is a bridge, and the central
        /// broker then never sends a message back over the bridge it came in by. Without it, every message published
        /// on a site comes back to that site a second time.
        public var tryPrivate = true

        public init(tryPrivate: Bool = true) { self.tryPrivate = tryPrivate }

        /// The `connection` section of site `name`'s mosquitto.conf.
        func configuration(name: String, centralPort: Int) -> [String] {
            [
                "connection \(name)",
                "address 127.0.0.1:\(centralPort)",
                "remote_clientid \(name)",
                "topic coaty/# both 0",
                "try_private \(tryPrivate)",
                "cleansession true",
                "notifications false",
                "restart_timeout 1",
            ]
        }
    }

    private init(central: TestBroker, sites: [TestBroker]) {
        self.central = central
        self.sites = sites
    }

    /// A central broker and `count` sites ("site-a", "site-b", ...) whose bridges carry messages both ways already.
    public static func started(sites count: Int, bridge: Bridge = Bridge()) async throws -> BridgedBrokers {
        let central = try await TestBroker.started()
        var sites: [TestBroker] = []
        for index in 0..<count {
            let name = "site-" + String(UnicodeScalar(UInt8(ascii: "a") + UInt8(index)))
            sites.append(
                try await TestBroker.started(
                    TestBroker.Options(extraConfiguration: bridge.configuration(name: name, centralPort: central.port)))
            )
        }
        let brokers = BridgedBrokers(central: central, sites: sites)
        try await brokers.waitUntilBridged()
        return brokers
    }

    public var all: [TestBroker] { [central] + sites }

    /// Returns once a message published on any broker reaches every other one. A bridge connects and subscribes
    /// some time after its broker started; until then the broker drops what it would bridge.
    public func waitUntilBridged(timeout: Duration = .seconds(30)) async throws {
        let topic = "coaty/bridge-check/\(UUID().uuidString)"
        var listeners: [TestClient] = []
        for broker in all {
            listeners.append(try await TestClient.connected(to: broker, subscribingTo: [topic + "/#"]))
        }
        let deadline = ContinuousClock.now + timeout
        for (index, broker) in all.enumerated() {
            let publisher = try await TestClient.connected(to: broker)
            let subtopic = "\(topic)/\(index)"
            while !listeners.allSatisfy({ $0.pendingMessages.contains { $0.topic == subtopic } }) {
                guard ContinuousClock.now < deadline else {
                    throw TestSupportError(
                        "the bridges did not carry a message from broker \(index) to every other within \(timeout)")
                }
                try publisher.publish(subtopic, "probe")
                try await Task.sleep(for: .milliseconds(100))
            }
            _ = try await publisher.disconnect()
        }
        for listener in listeners { _ = try await listener.disconnect() }
    }

    public func stop() async throws {
        for site in sites { try await site.stop() }
        try await central.stop()
    }
}
