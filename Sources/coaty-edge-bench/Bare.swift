import CMosquitto
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
    }

    private let pinger: BareClient
    private let echoer: BareClient
    private let handoffPinger: BareClient
    private let handoffEchoer: BareClient
    private let publisher: BareClient
    private let valueReceiver: BareClient
    private let floodReceiver: BareClient
    private let answers = DispatchSemaphore(value: 0)
    private let handoffAnswers = DispatchSemaphore(value: 0)
    private let values = DispatchSemaphore(value: 0)
    private let echoThread = EchoThread()
    let probe = DeliveryProbe()

    private var clients: [BareClient] {
        [pinger, echoer, handoffPinger, handoffEchoer, publisher, valueReceiver, floodReceiver]
    }

    init(host: String, port: Int) throws(BenchmarkError) {
        let (answers, handoffAnswers, values, probe, echoThread) = (answers, handoffAnswers, values, probe, echoThread)
        pinger = try BareClient(clientId: "bench-bare-pinger") { _, _ in answers.signal() }
        // Answers from the callback, as a C client would: the copy is queued before libmosquitto frees the message.
        echoer = try BareClient(clientId: "bench-bare-echoer") { handle, message in
            mosquitto_publish(handle, nil, Topic.pong, message.pointee.payloadlen, message.pointee.payload, 0, false)
        }
        handoffPinger = try BareClient(clientId: "bench-bare-handoff-pinger") { _, _ in handoffAnswers.signal() }
        handoffEchoer = try BareClient(clientId: "bench-bare-handoff-echoer") { _, message in
            echoThread.hand(UnsafeRawBufferPointer(start: message.pointee.payload, count: Int(message.pointee.payloadlen)))
        }
        publisher = try BareClient(clientId: "bench-bare-publisher") { _, _ in }
        valueReceiver = try BareClient(clientId: "bench-bare-value-receiver") { _, _ in values.signal() }
        floodReceiver = try BareClient(clientId: "bench-bare-flood-receiver") { _, _ in probe.delivered() }
        for client in clients {
            try client.connect(host: host, port: port)
        }
        try pinger.subscribe(Topic.pong)
        try echoer.subscribe(Topic.ping)
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

    /// Publishes `payload` to the echoer and waits for the echo, `count` times. The echo is published from the
    /// echoer's callback, or with `handoff` from a thread that the callback wakes, the way the agent hands an
    /// event from the network thread to the task that answers it.
    func roundTrips(_ count: Int, payload: [UInt8], handoff: Bool) async throws(BenchmarkError) -> LatencyRound {
        let (client, topic, answers) = handoff ? (handoffPinger, Topic.handoffPing, handoffAnswers) : (pinger, Topic.ping, answers)
        return try await onOwnThread { () throws(BenchmarkError) in
            var samples: [UInt64] = []
            samples.reserveCapacity(count)
            for _ in 0..<count {
                let start = monotonicNanoseconds()
                try client.publish(topic, payload)
                guard answers.wait(timeout: .now() + 5) == .success else { throw .timeout("a bare echo") }
                samples.append(monotonicNanoseconds() - start)
            }
            return LatencyRound(nanoseconds: samples)
        }
    }

    /// Publishes `payload` and waits until the receiver's callback has it, `count` times.
    func oneWay(_ count: Int, payload: [UInt8]) async throws(BenchmarkError) -> LatencyRound {
        try await onOwnThread { [self] () throws(BenchmarkError) in
            var samples: [UInt64] = []
            samples.reserveCapacity(count)
            for _ in 0..<count {
                let start = monotonicNanoseconds()
                try publisher.publish(Topic.value, payload)
                guard values.wait(timeout: .now() + 5) == .success else { throw .timeout("a bare value") }
                samples.append(monotonicNanoseconds() - start)
            }
            return LatencyRound(nanoseconds: samples)
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
