import CoatyMQTT
import DetachedThread
import Glibc
import MQTTTestSupport
import Synchronization
import Testing

/// `ConnectionExecutor` on `MosquittoTransport`'s network thread, and the thread's own poll loop.
@Suite struct ConnectionExecutorTests {
    /// A transport connected with an executor; `callbackThreads` collects the threads that ran the message handler.
    final class Connection: Sendable {
        let transport: MosquittoTransport
        let executor = ConnectionExecutor()
        let callbackThreads = Mutex<Set<UInt>>([])
        let messages = Mutex<[MQTTMessage]>([])

        init(_ broker: TestBroker, clientId: String, adjust: (inout MQTTConnectOptions) -> Void = { _ in }) async throws
        {
            transport = try MosquittoTransport()
            var options = broker.connectOptions(clientId: clientId)
            adjust(&options)
            try transport.subscribe("to-\(clientId)")
            try transport.connect(options, executor: executor) { [weak self] inbound in
                self?.callbackThreads.withLock { _ = $0.insert(currentThread()) }
                guard case .message(let message) = inbound else { return }
                self?.messages.withLock { $0.append(message) }
            }
            for await event in transport.connectionEvents where event == .connected { break }
        }
    }

    @Test func tasksThatPreferTheExecutorRunOnTheNetworkThread() async throws {
        let broker = try await TestBroker.started()
        let connection = try await Connection(broker, clientId: "runner")
        let sender = try await TestClient.connected(to: broker)
        try sender.publish("to-runner", "hello")
        try await waitUntil("the message") { connection.messages.withLock { !$0.isEmpty } }
        let networkThread = try #require(connection.callbackThreads.withLock { $0.first })

        // Started from another thread while the network thread sleeps: the job must wake it, or it would wait for
        // the loop's next keepalive check (15 s with the default keepalive of 60 s).
        try await Task.sleep(for: .milliseconds(100))
        let threads = try await withDeadline(.seconds(5)) {
            await Task(executorPreference: connection.executor) {
                let first = currentThread()
                await Task.yield()
                try? await Task.sleep(for: .milliseconds(10))
                return ([first, currentThread()], currentThreadName())
            }.value
        }
        #expect(threads.0 == [networkThread, networkThread])
        // Named for top and perf, not after the thread that started it.
        #expect(threads.1 == "mqtt network")
        #expect(connection.callbackThreads.withLock { $0 } == [networkThread])

        await connection.transport.disconnect(.clean)
        // Without a network thread the jobs run on the global executor.
        let afterwards = await Task(executorPreference: connection.executor) { currentThread() }.value
        #expect(afterwards != networkThread)
        try await sender.disconnect()
    }

    @Test func whatATaskOnTheExecutorPublishesGoesOut() async throws {
        let broker = try await TestBroker.started()
        let connection = try await Connection(broker, clientId: "publisher")
        let receiver = try await TestClient.connected(to: broker, subscribingTo: ["out/#"])
        try await Task.sleep(for: .milliseconds(100))
        try await Task(executorPreference: connection.executor) {
            for index in 0..<100 {
                try connection.transport.publish(MQTTMessage(topic: "out/\(index)", payload: Array("\(index)".utf8)))
                if index % 10 == 0 { await Task.yield() }
            }
        }.value
        let received = try await receiver.nextMessages(100, timeout: .seconds(5))
        #expect(received.map(\.topic) == (0..<100).map { "out/\($0)" })
        await connection.transport.disconnect(.clean)
        try await receiver.disconnect()
    }

    /// A job's publication leaves as the job publishes, not after the job ends: an answer is not held back by the
    /// rest of the task that sends it. The job waits for the peer to receive it without suspending, which would
    /// never end if the packet were written only when the job returned to the loop.
    @Test func aJobsPublicationIsWrittenBeforeTheJobEnds() async throws {
        let broker = try await TestBroker.started()
        let publisher = try await Connection(broker, clientId: "answerer")
        let receiver = try await Connection(broker, clientId: "asker")
        try await Task.sleep(for: .milliseconds(100))
        let arrivedWithinTheJob = try await withDeadline(.seconds(10)) {
            await Task(executorPreference: publisher.executor) {
                try? publisher.transport.publish(MQTTMessage(topic: "to-asker", payload: Array("answer".utf8)))
                let deadline = ContinuousClock.now + .seconds(5)
                while ContinuousClock.now < deadline {
                    if receiver.messages.withLock({ !$0.isEmpty }) { return true }
                    usleep(1000)
                }
                return false
            }.value
        }
        #expect(arrivedWithinTheJob)
        #expect(receiver.messages.withLock { $0.map(\.payload) } == [Array("answer".utf8)])
        await publisher.transport.disconnect(.clean)
        await receiver.transport.disconnect(.clean)
    }

    /// While the network thread sleeps, a publication from another thread is written by that thread; a packet too
    /// large for the socket's buffer is finished by the network thread, which must be woken for it (or it would
    /// wait for the loop's next keepalive check, 15 s away), and what follows keeps its order. Over TLS too, where
    /// the two threads must never use the TLS session at once.
    @Test(arguments: [false, true]) func publicationsFromOtherThreadsWhileTheLoopSleeps(tls: Bool) async throws {
        let certificates = tls ? try TestCertificates() : nil
        let broker = try await TestBroker.started(TestBroker.Options(tls: certificates))
        let secure: (inout MQTTConnectOptions) -> Void = { options in
            guard let certificates else { return }
            options.tls = MQTTTLSOptions(
                caFile: certificates.caFile, certFile: certificates.clientCertFile, keyFile: certificates.clientKeyFile)
        }
        let connection = try await Connection(broker, clientId: "handover", adjust: secure)
        let receiver = try await TestClient.connected(to: broker, subscribingTo: ["handover/#"], adjust: secure)
        let pattern = (0..<65_521).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        // Appended, not joined: joining 8 MiB element by element takes seconds of a debug build's test thread.
        var large: [UInt8] = []
        large.reserveCapacity(pattern.count * 128)
        for _ in 0..<128 { large.append(contentsOf: pattern) }
        var sent: [MQTTMessage] = []
        for round in 0..<3 {
            try await Task.sleep(for: .milliseconds(100))
            let batch =
                [MQTTMessage(topic: "handover/\(round)/large", payload: large)]
                + (0..<50).map { MQTTMessage(topic: "handover/\(round)/\($0)", payload: Array("\($0)".utf8)) }
            try await Task.detached {
                for message in batch { try connection.transport.publish(message) }
            }.value
            sent += batch
        }
        let received = try await receiver.nextMessages(sent.count, timeout: .seconds(10))
        #expect(received.map(\.topic) == sent.map(\.topic))
        #expect(received.filter { $0.topic.hasSuffix("/large") }.allSatisfy { $0.payload == large })
        await connection.transport.disconnect(.clean)
        try await receiver.disconnect()
    }

    /// The loop pings on its own: an idle connection outlives 1.5 keepalive periods, after which the broker
    /// would close a silent one.
    @Test func anIdleConnectionStaysUpThroughPings() async throws {
        let broker = try await TestBroker.started()
        let connection = try await Connection(broker, clientId: "idle") { $0.keepAlive = .seconds(5) }
        let events = Mutex<[MQTTConnectionEvent]>([])
        let watcher = Task { [transport = connection.transport] in
            for await event in transport.connectionEvents { events.withLock { $0.append(event) } }
        }
        try await broker.waitForLog(containing: "Received PINGREQ from idle", timeout: .seconds(15))
        try await Task.sleep(for: .seconds(4))
        #expect(events.withLock { $0 }.isEmpty)
        let sender = try await TestClient.connected(to: broker)
        try sender.publish("to-idle", "still there")
        try await waitUntil("the message") { connection.messages.withLock { !$0.isEmpty } }
        await connection.transport.disconnect(.clean)
        watcher.cancel()
        try await sender.disconnect()
    }

    /// The keepalive check runs on a loop that never waits out its poll, too: a task on the executor wakes the
    /// thread every 10 ms and publishes, and the connection receives nothing, so libmosquitto must ping once a
    /// keepalive period has passed without a packet from the broker.
    @Test func aBusyConnectionPingsToo() async throws {
        let broker = try await TestBroker.started()
        let connection = try await Connection(broker, clientId: "busy") { $0.keepAlive = .seconds(5) }
        let events = Mutex<[MQTTConnectionEvent]>([])
        let watcher = Task { [transport = connection.transport] in
            for await event in transport.connectionEvents { events.withLock { $0.append(event) } }
        }
        let publisher = Task(executorPreference: connection.executor) {
            var index = 0
            while !Task.isCancelled {
                try? connection.transport.publish(MQTTMessage(topic: "busy/\(index % 10)", payload: [1]))
                index += 1
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        try await broker.waitForLog(containing: "Received PINGREQ from busy", timeout: .seconds(15))
        publisher.cancel()
        await publisher.value
        #expect(events.withLock { $0 }.isEmpty)
        await connection.transport.disconnect(.clean)
        watcher.cancel()
    }

    @Test func aSecondTransportOnABusyExecutorRunsWithoutIt() async throws {
        let broker = try await TestBroker.started()
        let first = try await Connection(broker, clientId: "first")
        let second = try MosquittoTransport()
        try second.connect(broker.connectOptions(clientId: "second"), executor: first.executor) { _ in }
        for await event in second.connectionEvents where event == .connected { break }
        let receiver = try await TestClient.connected(to: broker, subscribingTo: ["from-second"])
        try second.publish(MQTTMessage(topic: "from-second", payload: [1]))
        #expect(try await receiver.nextMessage().payload == [1])
        await second.disconnect(.clean)
        // The first connection still runs the executor's jobs.
        let sender = try await TestClient.connected(to: broker)
        try sender.publish("to-first", "x")
        try await waitUntil("the message") { first.messages.withLock { !$0.isEmpty } }
        let networkThread = try #require(first.callbackThreads.withLock { $0.first })
        #expect(await Task(executorPreference: first.executor) { currentThread() }.value == networkThread)
        await first.transport.disconnect(.clean)
        try await receiver.disconnect()
        try await sender.disconnect()
    }
}

private func currentThread() -> UInt { UInt(pthread_self()) }

private func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let result = try await group.next() ?? nil else { throw TestSupportError("not done within \(limit)") }
        return result
    }
}
