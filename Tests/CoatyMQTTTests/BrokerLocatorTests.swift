import CoatyMQTT
import MQTTTestSupport
import Synchronization
import Testing

/// A transport with an `MQTTBrokerLocator` (what mDNS discovery gives it) asks where the broker is before every
/// attempt: it waits while none is known, and after losing its broker it connects to the one known next.
@Suite struct BrokerLocatorTests {
    /// Where the "discovery" says the broker is; changed by the test.
    private final class Directory: Sendable {
        let current = Mutex<MQTTBrokerLocator.Lookup>(.none(reason: "nothing announced yet"))
    }

    @Test func waitsForABrokerAndFollowsTheNextOneWhenItsOwnGoesAway() async throws {
        let first = try await TestBroker.started()
        let second = try await TestBroker.started()
        let directory = Directory()
        var options = first.connectOptions(clientId: "located")
        // A port no broker listens on: only the locator's answer can lead to a broker.
        options.port = try freeLoopbackPort()
        options.locator = MQTTBrokerLocator("test directory", owner: directory) { directory.current.withLock { $0 } }
        let transport = try MosquittoTransport()
        try transport.connect(options, executor: nil) { _ in }
        var events = transport.connectionEvents.makeAsyncIterator()

        // Nothing known: the attempt fails with the locator's reason.
        var event = await events.next()
        #expect(event == .connectionLost(reason: "no broker found: nothing announced yet"))

        directory.current.withLock { $0 = .found(host: "127.0.0.1", port: first.port) }
        while let next = await events.next(), next != .connected { event = next }
        try await first.waitForLog(containing: "as located")

        // The broker goes away and another is known: the reconnect goes there.
        directory.current.withLock { $0 = .found(host: "127.0.0.1", port: second.port) }
        try await first.kill()
        while let next = await events.next(), next != .connected { event = next }
        try await second.waitForLog(containing: "as located")

        await transport.disconnect(.clean)
    }

    @Test func locatorsAreEqualByTheirOwner() {
        let owner = Directory()
        let one = MQTTBrokerLocator("a", owner: owner) { .none(reason: "") }
        let same = MQTTBrokerLocator("b", owner: owner) { .found(host: "h", port: 1) }
        let other = MQTTBrokerLocator("a", owner: Directory()) { .none(reason: "") }
        #expect(one == same)
        #expect(one != other)
    }
}
