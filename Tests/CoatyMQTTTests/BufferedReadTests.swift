import CMosquittoSocket
import CoatyMQTT
import Dispatch
import Foundation
import MQTTTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// libmosquitto's reads of the broker socket come from a buffer of the network thread: a burst of packets costs a few
/// read() calls, not three per packet, and every byte still reaches libmosquitto in order.
@Suite struct BufferedReadTests {
    /// The buffer on its own, over a socket pair: small reads are served from one system read, a read at least as
    /// large as the buffer bypasses it, errors and end of file pass through, and other descriptors are not touched.
    @Test func theBufferServesSmallReadsFromOneSystemRead() throws {
        // Resolves the system's read() the buffer refills with.
        _ = coaty_mosquitto_buffer_reads()
        var pair: [Int32] = [-1, -1]
        // Close-on-exec: a process another test starts meanwhile must not keep the writer's end open past its close.
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { for descriptor in pair where descriptor >= 0 { close(descriptor) } }
        let (reader, writer) = (pair[0], pair[1])
        try #require(fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) | O_NONBLOCK) == 0)
        try #require(coaty_read_buffer_attach(reader, 64) == 0)
        defer { coaty_read_buffer_detach() }

        let sent = Array((0..<40).map { UInt8($0) })
        #expect(write(writer, sent, sent.count) == sent.count)
        var received: [UInt8] = []
        for count in [1, 1, 30, 30] {
            var bytes = [UInt8](repeating: 0, count: count)
            let read = coaty_buffered_read(reader, &bytes, count)
            try #require(read > 0)
            received += bytes.prefix(read)
        }
        #expect(received == sent)
        #expect(coaty_read_buffer_system_reads() == 1)
        #expect(coaty_read_buffer_pending() == 0)

        // Nothing left: the system's EAGAIN, as libmosquitto expects it.
        var byte: UInt8 = 0
        #expect(coaty_buffered_read(reader, &byte, 1) == -1 && errno == EAGAIN)
        #expect(coaty_read_buffer_system_reads() == 2)

        // 100 bytes asked for with an empty 64-byte buffer: read into the caller's bytes directly.
        let large = Array((0..<100).map { UInt8(255 - $0) })
        #expect(write(writer, large, large.count) == large.count)
        var bytes = [UInt8](repeating: 0, count: 100)
        #expect(coaty_buffered_read(reader, &bytes, 100) == 100)
        #expect(bytes == large && coaty_read_buffer_pending() == 0)

        // Bytes buffered, then part of them read: the rest stays pending, and a read of another descriptor (the
        // writer's end, which has nothing) goes to the system without touching it.
        #expect(write(writer, sent, 10) == 10)
        #expect(coaty_buffered_read(reader, &byte, 1) == 1 && byte == 0)
        #expect(coaty_read_buffer_pending() == 9)
        try #require(fcntl(writer, F_SETFL, fcntl(writer, F_GETFL) | O_NONBLOCK) == 0)
        #expect(coaty_buffered_read(writer, &byte, 1) == -1 && errno == EAGAIN)
        #expect(coaty_read_buffer_pending() == 9)

        // The peer closes: what was buffered comes first, then end of file.
        close(writer)
        pair[1] = -1
        bytes = [UInt8](repeating: 0, count: 20)
        #expect(coaty_buffered_read(reader, &bytes, 20) == 9)
        #expect(Array(bytes.prefix(9)) == Array(sent[1..<10]))
        #expect(coaty_buffered_read(reader, &bytes, 20) == 0)
    }

    /// A buffer belongs to the thread that attached it: another thread reads the same descriptor from the system.
    @Test func aBufferServesOnlyItsOwnThread() throws {
        _ = coaty_mosquitto_buffer_reads()
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { for descriptor in pair { close(descriptor) } }
        try #require(coaty_read_buffer_attach(pair[0], 64) == 0)
        defer { coaty_read_buffer_detach() }
        #expect(write(pair[1], "ab", 2) == 2)
        let reader = pair[0]
        let otherThreadRead = Shared<[UInt8]>([])
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var byte: UInt8 = 0
            if coaty_buffered_read(reader, &byte, 1) == 1 { otherThreadRead.value.withLock { $0.append(byte) } }
            finished.signal()
        }
        finished.wait()
        #expect(otherThreadRead.value.withLock { $0 } == [UInt8(ascii: "a")])
        #expect(coaty_read_buffer_system_reads() == 0)
        var byte: UInt8 = 0
        #expect(coaty_buffered_read(reader, &byte, 1) == 1 && byte == UInt8(ascii: "b"))
        #expect(coaty_read_buffer_system_reads() == 1)
    }

    /// 2,000 publications wait in the subscriber's socket while its network thread is held in the callback of the
    /// first; once let go, it reads them all, in order, in a few read() calls (libmosquitto alone: three per packet,
    /// 6,000).
    @Test func libmosquittoReadsABurstInAFewSystemReads() async throws {
        #expect(MosquittoTransport.readsAreBuffered)
        let broker = try await TestBroker.started()
        let reader = try await HeldReader.connected(
            broker.connectOptions(clientId: "burst-reader"), topic: "burst", holdingOn: "0")
        let (subscriber, received, gate) = (reader.transport, reader.received, reader.gate)

        let publisher = try await TestClient.connected(to: broker)
        let count = 2_000
        publisher.transport.publishingTogether {
            for index in 0..<count {
                try? publisher.publish("burst/\(index % 10)", "\(index)")
            }
        }
        // The broker has handled every publication once the publisher's own probe comes back; it writes them to the
        // subscriber as it handles them.
        try await publisher.sync()
        try await Task.sleep(for: .milliseconds(200))
        let readsBefore = subscriber.socketReads
        gate.signal()
        try await waitUntil { received.value.withLock { $0.count } == count + 1 }

        #expect(received.value.withLock { Array($0.dropFirst()) } == (0..<count).map { "\($0)" })
        // About 20 bytes a packet: 40 KB in 16 KiB reads, and an EAGAIN or two.
        let reads = subscriber.socketReads - readsBefore
        #expect(reads > 0 && reads <= count / 20, "\(reads) read() calls for \(count) packets")
        await subscriber.disconnect(.clean)
        try await publisher.disconnect()
    }

    /// A clean stop during a flood, where the buffer may still hold packets (the thread reads at most 256 a turn):
    /// the stop reads on through the buffer while it writes what is queued, so every packet it reads is one the broker
    /// sent, in order, the last publication goes out and the DISCONNECT with it (the broker publishes no will).
    @Test func aCleanStopDuringAFloodReadsOnlyTheBrokersPacketsAndEndsCleanly() async throws {
        let broker = try await TestBroker.started()
        let watcher = try await TestClient.connected(to: broker, subscribingTo: ["stop/#"])
        var options = broker.connectOptions(clientId: "stopping-reader")
        options.will = MQTTMessage(topic: "stop/will", payload: Array("gone".utf8))
        let reader = try await HeldReader.connected(options, topic: "flood", holdingOn: "hold")
        let (subscriber, received, gate) = (reader.transport, reader.received, reader.gate)

        let publisher = try await TestClient.connected(to: broker)
        let count = 2_000
        publisher.transport.publishingTogether {
            try? publisher.publish("flood/hold", "hold")
            for index in 0..<count { try? publisher.publish("flood/\(index % 10)", "\(index)") }
        }
        try await publisher.sync()
        try await Task.sleep(for: .milliseconds(200))
        // Queued while the network thread is held; then the stop, then the thread goes on.
        try subscriber.publish(MQTTMessage(topic: "stop/last", payload: Array("last".utf8)))
        let stopped = Task { await subscriber.disconnect(.clean) }
        try await Task.sleep(for: .milliseconds(100))
        gate.signal()
        await stopped.value

        #expect(try await watcher.nextMessage().topic == "stop/last")
        let texts = received.value.withLock { Array($0.drop { $0 != "hold" }.dropFirst()) }
        #expect(texts == (0..<texts.count).map { "\($0)" }, "only the broker's packets, in order")
        // The broker publishes a will at once when a connection ends without DISCONNECT.
        try await Task.sleep(for: .milliseconds(500))
        try await watcher.sync()
        #expect(watcher.pendingMessages.allSatisfy { $0.topic != "stop/will" })
        try await watcher.disconnect()
        try await publisher.disconnect()
    }

    /// Payloads smaller and larger than the buffer, in one burst: each arrives whole and unchanged, whether it began
    /// in the buffer and ended in the socket or was read straight into libmosquitto's packet.
    @Test func payloadsAcrossTheBuffersEdgesArriveWhole() async throws {
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(to: broker, subscribingTo: ["edges/#"])
        let publisher = try await TestClient.connected(to: broker)
        let sizes = [1, 16_370, 16_384, 16_385, 5, 40_000, 0, 300_000, 3, 16_383, 2, 65_536, 7]
        let payloads = sizes.enumerated().map { index, size in
            (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
        }
        for _ in 0..<3 {
            publisher.transport.publishingTogether {
                for (index, payload) in payloads.enumerated() {
                    try? publisher.publish("edges/\(index)", payload)
                }
            }
        }
        let messages = try await subscriber.nextMessages(payloads.count * 3)
        for (position, message) in messages.enumerated() {
            let index = position % payloads.count
            #expect(message.topic == "edges/\(index)")
            #expect(message.payload == payloads[index], "payload \(index) of \(sizes[index]) bytes")
        }
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }

    /// A transport subscribed to `topic/#` that records every payload as text and holds its network thread in the
    /// callback of the payload `holdingOn` until `gate` is signalled; connected, and its subscription applied (a probe
    /// it published to itself came back).
    private struct HeldReader {
        let transport: MosquittoTransport
        let received = Shared<[String]>([])
        let gate = DispatchSemaphore(value: 0)

        static func connected(_ options: MQTTConnectOptions, topic: String, holdingOn held: String) async throws
            -> HeldReader
        {
            let reader = HeldReader(transport: try MosquittoTransport())
            try reader.transport.subscribe("\(topic)/#")
            try reader.transport.connect(options, executor: nil) { [received = reader.received, gate = reader.gate] in
                guard case .message(let message) = $0 else { return }
                let text = String(decoding: message.payload, as: UTF8.self)
                received.value.withLock { $0.append(text) }
                if text == held { gate.wait() }
            }
            for await event in reader.transport.connectionEvents where event == .connected { break }
            try reader.transport.publish(MQTTMessage(topic: "\(topic)/probe", payload: Array("probe".utf8)))
            try await waitUntil { reader.received.value.withLock { $0.contains("probe") } }
            return reader
        }
    }

    private final class Shared<Value: Sendable>: Sendable {
        let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
    }

}

/// Returns once `condition` holds; fails the test after 30 s (a guard against hanging, not a timing).
private func waitUntil(_ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while !condition() {
        try #require(ContinuousClock.now < deadline, "timed out")
        try await Task.sleep(for: .milliseconds(5))
    }
}
