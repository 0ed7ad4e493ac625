import CoatyMQTT
import Foundation
import Synchronization

/// A `MosquittoTransport` whose inbound messages and connection events are collected, for tests to await.
///
/// Awaiting takes a timeout, which only guards against a hanging test; it asserts nothing about speed.
/// `subscribe` and `unsubscribe` return once the broker applies them: the client then publishes a probe to itself
/// and waits for it, and the broker handles one client's packets in order.
public final class TestClient: Sendable {
    public let transport: MosquittoTransport
    public let clientId: String
    private let inbox = Inbox()
    private var syncTopic: String { "\(Self.syncTopicPrefix)\(clientId)" }
    /// Probes of all test clients are kept out of everyone's messages, so that `#` sees only the test's traffic.
    private static let syncTopicPrefix = "test-client-sync/"
    /// The probes' topics; a broker ACL must let test clients read and write them.
    public static let syncTopicFilter = "\(syncTopicPrefix)#"

    /// Starts connecting with `options` and returns at once; see `connected(to:...)` for the usual case.
    public init(_ options: MQTTConnectOptions) throws {
        transport = try MosquittoTransport()
        clientId = options.clientId
        try transport.subscribe(syncTopic)
        try transport.connect(options, executor: nil) { [inbox] inbound in
            inbox.update { inbox in
                guard case .message(let message) = inbound else {
                    inbox.oversized.append(inbound)
                    return
                }
                if message.topic.hasPrefix(Self.syncTopicPrefix) {
                    inbox.probes.insert(String(decoding: message.payload, as: UTF8.self))
                } else {
                    inbox.messages.append(message)
                }
            }
        }
        Task { [transport, inbox] in
            for await event in transport.connectionEvents {
                inbox.update { $0.events.append(event) }
            }
            inbox.update { $0.eventsEnded = true }
        }
    }

    /// A client of `broker` that is connected and subscribed to `filters`.
    public static func connected(
        to broker: TestBroker, clientId: String = "test-\(UUID().uuidString.prefix(8))",
        subscribingTo filters: [String] = [],
        adjust: (inout MQTTConnectOptions) -> Void = { _ in }
    ) async throws -> TestClient {
        var options = broker.connectOptions(clientId: clientId)
        adjust(&options)
        let client = try TestClient(options)
        _ = try await client.events(through: .connected)
        try await client.subscribe(filters)
        return client
    }

    public func subscribe(_ filters: [String]) async throws {
        for filter in filters { try transport.subscribe(filter) }
        try await sync()
    }

    public func unsubscribe(_ filters: [String]) async throws {
        for filter in filters { try transport.unsubscribe(filter) }
        try await sync()
    }

    /// Returns once the broker has handled everything this client sent before.
    public func sync() async throws {
        let token = UUID().uuidString
        try transport.publish(MQTTMessage(topic: syncTopic, payload: Array(token.utf8)))
        _ = try await inbox.take("the sync probe") { $0.probes.remove(token) }
    }

    public func publish(_ topic: String, _ payload: [UInt8], retain: Bool = false) throws {
        try transport.publish(MQTTMessage(topic: topic, payload: payload, retain: retain))
    }

    public func publish(_ topic: String, _ text: String, retain: Bool = false) throws {
        try publish(topic, Array(text.utf8), retain: retain)
    }

    /// The messages received and not taken yet, left in place (to count them, duplicates included).
    public var pendingMessages: [MQTTMessage] {
        var messages: [MQTTMessage] = []
        inbox.update { messages = $0.messages }
        return messages
    }

    public func nextMessage(timeout: Duration = .seconds(30)) async throws -> MQTTMessage {
        try await nextMessages(1, timeout: timeout)[0]
    }

    public func nextMessages(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [MQTTMessage] {
        try await inbox.take("\(count) message(s)", timeout: timeout) { inbox in
            guard inbox.messages.count >= count else { return nil }
            defer { inbox.messages.removeFirst(count) }
            return Array(inbox.messages.prefix(count))
        }
    }

    /// The next message the transport dropped for its size (`MQTTInbound.oversized`).
    public func nextOversized(timeout: Duration = .seconds(30)) async throws -> MQTTInbound {
        try await inbox.take("an oversized message", timeout: timeout) { inbox in
            inbox.oversized.isEmpty ? nil : inbox.oversized.removeFirst()
        }
    }

    /// Takes the events up to and including the first `event`.
    public func events(through event: MQTTConnectionEvent, timeout: Duration = .seconds(30)) async throws
        -> [MQTTConnectionEvent]
    {
        try await events(through: "event \(event)", timeout: timeout) { $0 == event }
    }

    /// Takes the events up to and including the first that `matches` (`what` names it in a timeout).
    public func events(
        through what: String, timeout: Duration = .seconds(30),
        where matches: @escaping @Sendable (MQTTConnectionEvent) -> Bool
    ) async throws -> [MQTTConnectionEvent] {
        try await inbox.take(what, timeout: timeout) { inbox in
            guard let index = inbox.events.firstIndex(where: matches) else { return nil }
            defer { inbox.events.removeFirst(index + 1) }
            return Array(inbox.events[...index])
        }
    }

    /// Disconnects and returns the events that were not taken yet, `.disconnected` last.
    @discardableResult
    public func disconnect(_ mode: MQTTDisconnectMode = .clean) async throws -> [MQTTConnectionEvent] {
        await transport.disconnect(mode)
        return try await inbox.take("the end of the connection events") { inbox in
            guard inbox.eventsEnded else { return nil }
            defer { inbox.events = [] }
            return inbox.events
        }
    }
}

/// What a test client received, and the tasks waiting for some of it.
private final class Inbox: Sendable {
    struct Content {
        var messages: [MQTTMessage] = []
        var oversized: [MQTTInbound] = []
        var events: [MQTTConnectionEvent] = []
        var probes: Set<String> = []
        var eventsEnded = false
    }

    private struct State {
        var content = Content()
        var changes = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var waiterCount = 0
    }

    private let state = Mutex(State())

    func update(_ change: (inout Content) -> Void) {
        let waiters = state.withLock { state in
            change(&state.content)
            state.changes += 1
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until `take` finds what it needs and takes it out.
    func take<T: Sendable>(
        _ what: String, timeout: Duration = .seconds(30), _ take: @escaping @Sendable (inout Content) -> T?
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await self.take(take) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw TestSupportError("timed out after \(timeout) waiting for \(what)")
            }
            defer { group.cancelAll() }
            guard let result = try await group.next() else { throw TestSupportError("no result for \(what)") }
            return result
        }
    }

    private func take<T: Sendable>(_ take: @Sendable (inout Content) -> T?) async throws -> T {
        let id = state.withLock { state in
            state.waiterCount += 1
            return state.waiterCount
        }
        var seen = -1
        while true {
            let (result, changes) = state.withLock { ($0.changes == seen ? nil : take(&$0.content), $0.changes) }
            if let result { return result }
            seen = changes
            try Task.checkCancellation()
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state in
                        guard state.changes == seen, !Task.isCancelled else { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
    }
}
