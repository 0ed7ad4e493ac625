import CMosquitto
import CoatyModel
import Dispatch
import Synchronization

/// The bare libmosquitto clients on the broker, one pair per pattern, so that no callback dispatches on topics.
final class BareClients: Sendable {
    enum Topic {
        static let ping = "coaty-edge-bench/ping"
        static let pong = "coaty-edge-bench/pong"
        static let handoffPing = "coaty-edge-bench/handoff-ping"
        static let handoffPong = "coaty-edge-bench/handoff-pong"
        static let value = "coaty-edge-bench/value"
        static let flood = "coaty-edge-bench/flood"

        /// The shape of the agents' Channel round trip (`Agents.channelRoundTrips`): Coaty topics of five levels in
        /// the agents' namespace, published with a client's identity as source level and subscribed with `+` there,
        /// beside the agents' own subscriptions in the broker's tree. The channel ids differ from the agents' (so that
        /// neither pair answers the other) and have the same length.
        static let coatyPingChannel = "coaty-edge-shape-ping"
        static let coatyPongChannel = "coaty-edge-shape-pong"
        static let coatyPing = coatyTopic(coatyPingChannel, sourceId: "6a1cf7e4-3f4b-4b8e-9d2a-5c0e1f3b7a90")
        static let coatyPong = coatyTopic(coatyPongChannel, sourceId: "0d9b2c61-8e7f-4a35-b1c4-2f6e8a9d3c57")
        static let coatyPingFilter = coatyFilter(coatyPingChannel)
        static let coatyPongFilter = coatyFilter(coatyPongChannel)

        private static func coatyTopic(_ channelId: String, sourceId: String) -> String {
            CoatyTopic(
                namespace: CoatyTopic.defaultNamespace, eventType: .channel, filter: channelId, sourceId: sourceId
            ).description
        }

        private static func coatyFilter(_ channelId: String) -> String {
            CoatyTopic.subscriptionFilter(
                namespace: CoatyTopic.defaultNamespace, eventType: .channel, filter: channelId)
        }
    }

    private let pinger: BareClient
    private let echoer: BareClient
    private let coatyPinger: BareClient
    private let coatyEchoer: BareClient
    private let handoffPinger: BareClient
    private let handoffEchoer: BareClient
    private let publisher: BareClient
    private let valueReceiver: BareClient
    private let floodReceiver: BareClient
    private let handoffAnswers = DispatchSemaphore(value: 0)
    private let values = DispatchSemaphore(value: 0)
    private let echoThread = EchoThread()
    private let pingPong = CallbackPingPong(topic: Topic.ping)
    private let coatyPingPong = CallbackPingPong(topic: Topic.coatyPing)
    let probe = DeliveryProbe()

    private var clients: [BareClient] {
        [
            pinger, echoer, coatyPinger, coatyEchoer, handoffPinger, handoffEchoer, publisher, valueReceiver,
            floodReceiver,
        ]
    }

    init(host: String, port: Int) throws(BenchmarkError) {
        let (handoffAnswers, values, probe, echoThread, pingPong, coatyPingPong) = (
            handoffAnswers, values, probe, echoThread, pingPong, coatyPingPong
        )
        // Takes the time and sends the next ping from the callback: no thread wakes on either side of the pair.
        pinger = try BareClient(clientId: "bench-bare-pinger") { handle, _ in pingPong.answered(handle) }
        // Answers from the callback, as a C client would: the copy is queued before libmosquitto frees the message.
        echoer = try BareClient(clientId: "bench-bare-echoer") { handle, message in
            mosquitto_publish(handle, nil, Topic.pong, message.pointee.payloadlen, message.pointee.payload, 0, false)
        }
        coatyPinger = try BareClient(clientId: "bench-bare-coaty-pinger") { handle, _ in
            coatyPingPong.answered(handle)
        }
        coatyEchoer = try BareClient(clientId: "bench-bare-coaty-echoer") { handle, message in
            mosquitto_publish(
                handle, nil, Topic.coatyPong, message.pointee.payloadlen, message.pointee.payload, 0, false)
        }
        handoffPinger = try BareClient(clientId: "bench-bare-handoff-pinger") { _, _ in handoffAnswers.signal() }
        handoffEchoer = try BareClient(clientId: "bench-bare-handoff-echoer") { _, message in
            echoThread.hand(
                UnsafeRawBufferPointer(start: message.pointee.payload, count: Int(message.pointee.payloadlen)))
        }
        publisher = try BareClient(clientId: "bench-bare-publisher") { _, _ in }
        valueReceiver = try BareClient(clientId: "bench-bare-value-receiver") { _, _ in values.signal() }
        floodReceiver = try BareClient(clientId: "bench-bare-flood-receiver") { _, _ in probe.delivered() }
        for client in clients {
            try client.connect(host: host, port: port)
        }
        try pinger.subscribe(Topic.pong)
        try echoer.subscribe(Topic.ping)
        try coatyPinger.subscribe(Topic.coatyPongFilter)
        try coatyEchoer.subscribe(Topic.coatyPingFilter)
        try handoffPinger.subscribe(Topic.handoffPong)
        try handoffEchoer.subscribe(Topic.handoffPing)
        try valueReceiver.subscribe(Topic.value)
        try floodReceiver.subscribe(Topic.flood)
        let handoffEchoer = handoffEchoer
        try echoThread.start { payload throws(BenchmarkError) in try handoffEchoer.publish(Topic.handoffPong, payload) }
    }

    func disconnect() {
        echoThread.stop()
        for client in clients { client.disconnect() }
    }

    /// Publishes `payload` to the echoer and waits for the echo, `count` times. Without `handoff`, the fastest bare
    /// pair there is: the echo is published from the echoer's callback, and the next ping from the pinger's callback
    /// as the echo arrives, so that no thread wakes in the whole round. With `handoff`, the echo is published from a
    /// thread that the echoer's callback wakes, and the pinger waits on a thread of its own, the way the agent hands
    /// an event from the network thread to the task that answers it.
    func roundTrips(_ count: Int, payload: [UInt8], handoff: Bool) async throws(BenchmarkError) -> [UInt64] {
        guard handoff else {
            return try await callbackRoundTrips(count, payload: payload, pinger: pinger, pingPong: pingPong)
        }
        let (client, topic, answers) = (handoffPinger, Topic.handoffPing, handoffAnswers)
        return try await onOwnThread { () throws(BenchmarkError) in
            var samples: [UInt64] = []
            samples.reserveCapacity(count)
            for _ in 0..<count {
                let start = monotonicNanoseconds()
                try client.publish(topic, payload)
                guard answers.wait(timeout: .now() + 5) == .success else { throw .timeout("a bare echo") }
                samples.append(monotonicNanoseconds() - start)
            }
            return samples
        }
    }

    /// The fastest bare pair (`roundTrips` without handoff) on the topics and filters of the agents' Channel round
    /// trip: what is left of the agents' ratio beside it is their own cost, not the protocol's topic shape.
    func coatyTopicsRoundTrips(_ count: Int, payload: [UInt8]) async throws(BenchmarkError) -> [UInt64] {
        try await callbackRoundTrips(count, payload: payload, pinger: coatyPinger, pingPong: coatyPingPong)
    }

    private func callbackRoundTrips(
        _ count: Int, payload: [UInt8], pinger: BareClient, pingPong: CallbackPingPong
    ) async throws(BenchmarkError) -> [UInt64] {
        try await onOwnThread { () throws(BenchmarkError) in
            try pingPong.run(count, payload: payload, timeout: 5) { () throws(BenchmarkError) in
                try pinger.publish(pingPong.topic, payload)
            }
        }
    }

    /// Publishes `payload` and waits until the receiver's callback has it, `count` times.
    func oneWay(_ count: Int, payload: [UInt8]) async throws(BenchmarkError) -> [UInt64] {
        try await onOwnThread { [self] () throws(BenchmarkError) in
            var samples: [UInt64] = []
            samples.reserveCapacity(count)
            for _ in 0..<count {
                let start = monotonicNanoseconds()
                try publisher.publish(Topic.value, payload)
                guard values.wait(timeout: .now() + 5) == .success else { throw .timeout("a bare value") }
                samples.append(monotonicNanoseconds() - start)
            }
            return samples
        }
    }

    func flood(_ count: Int, window: Int, payload: [UInt8]) async throws(BenchmarkError) -> ThroughputRound {
        try await onOwnThread { [self] () throws(BenchmarkError) in
            try probe.flood(count: count, window: window) { _ throws(BenchmarkError) in
                try publisher.publish(Topic.flood, payload)
            }
        }
    }
}

/// Round trips driven from the pinger's callback: each echo is timed there and the next ping published from there,
/// the way a C client on libmosquitto's network thread would run them.
private final class CallbackPingPong: Sendable {
    private struct Round {
        var payload: [UInt8] = []
        var remaining = 0
        var start: UInt64 = 0
        var samples: [UInt64] = []
    }

    /// Where the pings go.
    let topic: String
    private let round = Mutex(Round())
    private let finished = DispatchSemaphore(value: 0)

    init(topic: String) {
        self.topic = topic
    }

    /// Sends the first ping with `publish` and waits until the callbacks have made `count` round trips; a round trip
    /// that takes `timeout` seconds ends the round with an error.
    func run(
        _ count: Int, payload: [UInt8], timeout: Double, publish: () throws(BenchmarkError) -> Void
    ) throws(BenchmarkError) -> [UInt64] {
        while finished.wait(timeout: .now()) == .success {}
        round.withLock { round in
            round = Round(payload: payload, remaining: count, start: monotonicNanoseconds(), samples: [])
            round.samples.reserveCapacity(count)
        }
        try publish()
        var completed = 0
        while finished.wait(timeout: .now() + timeout) != .success {
            // Still under way as long as round trips complete.
            let done = round.withLock { $0.samples.count }
            if done == completed { throw .timeout("a bare echo") }
            completed = done
        }
        return round.withLock { $0.samples }
    }

    /// On the pinger's network thread, for each echo: takes its time and sends the next ping, or ends the round.
    func answered(_ handle: OpaquePointer) {
        let isLast: Bool = round.withLock { round in
            guard round.remaining > 0 else { return false }
            let now = monotonicNanoseconds()
            round.samples.append(now - round.start)
            round.remaining -= 1
            guard round.remaining > 0 else { return true }
            round.start = monotonicNanoseconds()
            round.payload.withUnsafeBytes { bytes in
                _ = mosquitto_publish(handle, nil, topic, Int32(bytes.count), bytes.baseAddress, 0, false)
            }
            return false
        }
        if isLast { finished.signal() }
    }
}

/// A thread that publishes the payloads a callback hands it: the bare equivalent of an agent's answering task.
private final class EchoThread: Sendable {
    private let mailbox = Mutex<(payloads: [[UInt8]], isStopped: Bool)>(([], false))
    private let wakeUp = DispatchSemaphore(value: 0)

    func start(publish: @escaping @Sendable ([UInt8]) throws(BenchmarkError) -> Void) throws(BenchmarkError) {
        try startThread { [self] in
            while true {
                wakeUp.wait()
                let (payloads, isStopped) = mailbox.withLock { mailbox in
                    defer { mailbox.payloads = [] }
                    return mailbox
                }
                if isStopped { return }
                for payload in payloads { try? publish(payload) }
            }
        }
    }

    /// Copies the payload (libmosquitto frees it after the callback) and wakes the thread.
    func hand(_ payload: UnsafeRawBufferPointer) {
        let copy = [UInt8](payload)
        mailbox.withLock { $0.payloads.append(copy) }
        wakeUp.signal()
    }

    func stop() {
        mailbox.withLock { $0.isStopped = true }
        wakeUp.signal()
    }
}
