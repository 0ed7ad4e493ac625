import CMosquittoSocket
import CoatyMQTT
import MQTTTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// libmosquitto's writes of the broker socket are gathered in a buffer of the connection for the length of one
/// `mosquitto_loop_write`: a batch of packets costs one write(), not one each, and every byte still leaves in order.
@Suite struct GatheredWriteTests {
    /// The buffer on its own, over a socket pair: writes while gathering are held until the end of the gathering and
    /// then leave in one system write; one that would overflow the buffer sends what it held first; one at least as
    /// large as the empty buffer goes straight to the socket; other descriptors and other times pass through.
    @Test func gatheredWritesLeaveTogetherAtTheEnd() throws {
        // Resolves the system's write() that writes of other descriptors and times go to.
        _ = coaty_mosquitto_gather_writes()
        let pair = try SocketPair()
        let buffer = try #require(coaty_write_buffer_create(64))
        defer { coaty_write_buffer_destroy(buffer) }
        coaty_write_buffer_attach(buffer, pair.writer, pair.writerDuplicate)

        let bytes = (0..<200).map { UInt8($0) }
        coaty_write_gather_begin(buffer)
        #expect(write(bytes[0..<10]) == 10)
        #expect(write(bytes[10..<30]) == 20)
        #expect(write(bytes[30..<35]) == 5)
        #expect(pair.readAvailable() == [], "held until the end of the gathering")
        #expect(coaty_write_buffer_pending(buffer) == 35)
        #expect(coaty_write_gather_end() == 0)
        #expect(pair.readAvailable() == Array(bytes[0..<35]))
        #expect(coaty_write_buffer_system_writes(buffer) == 1)
        #expect(coaty_write_buffer_pending(buffer) == 0)

        // 50 then 30 bytes: the second would overflow, so the first 50 leave before it is taken.
        coaty_write_gather_begin(buffer)
        #expect(write(bytes[0..<50]) == 50)
        #expect(write(bytes[50..<80]) == 30)
        #expect(pair.readAvailable() == Array(bytes[0..<50]))
        #expect(coaty_write_gather_end() == 0)
        #expect(pair.readAvailable() == Array(bytes[50..<80]))
        #expect(coaty_write_buffer_system_writes(buffer) == 3)

        // 100 bytes into an empty 64-byte buffer: straight to the socket.
        coaty_write_gather_begin(buffer)
        #expect(write(bytes[0..<100]) == 100)
        #expect(pair.readAvailable() == Array(bytes[0..<100]))
        #expect(coaty_write_gather_end() == 0)
        #expect(coaty_write_buffer_system_writes(buffer) == 4)

        // Not gathering, or another descriptor while gathering: the system's write, at once.
        #expect(write(bytes[0..<3]) == 3)
        #expect(pair.readAvailable() == Array(bytes[0..<3]))
        coaty_write_gather_begin(buffer)
        let other: [UInt8] = [7, 8]
        #expect(coaty_gathered_write(pair.reader, other, 2) == 2)
        #expect(coaty_write_gather_end() == 0)
        #expect(pair.readAvailable(from: pair.writer) == [7, 8])
        #expect(coaty_write_buffer_system_writes(buffer) == 4)

        func write(_ slice: ArraySlice<UInt8>) -> Int {
            Array(slice).withUnsafeBytes { coaty_gathered_write(pair.writer, $0.baseAddress, $0.count) }
        }
    }

    /// A socket whose send buffer is full takes part of the gathered bytes or none: the rest is held (the transport
    /// then waits for the socket to be writable), later writes are refused (EAGAIN, so libmosquitto keeps its packet)
    /// while they do not fit behind it, and the held bytes leave first once the socket takes them.
    @Test func bytesTheSocketDoesNotTakeAreHeldAndLeaveFirst() throws {
        let pair = try SocketPair()
        let buffer = try #require(coaty_write_buffer_create(64))
        defer { coaty_write_buffer_destroy(buffer) }
        coaty_write_buffer_attach(buffer, pair.writer, pair.writerDuplicate)
        let filler = pair.fillSendBuffer()
        #expect(filler > 0)

        let first = (0..<40).map { UInt8($0) }
        let second = (100..<130).map { UInt8($0) }
        coaty_write_gather_begin(buffer)
        #expect(first.withUnsafeBytes { coaty_gathered_write(pair.writer, $0.baseAddress, 40) } == 40)
        #expect(coaty_write_gather_end() == 0, "a full socket is no failure")
        #expect(coaty_write_buffer_pending(buffer) == 40)

        coaty_write_gather_begin(buffer)
        #expect(second.withUnsafeBytes { coaty_gathered_write(pair.writer, $0.baseAddress, 30) } == -1)
        #expect(errno == EAGAIN)
        #expect(coaty_write_gather_end() == 0)
        #expect(coaty_write_buffer_pending(buffer) == 40)

        // The reader takes everything: the socket has room again, and the held bytes leave before the new ones.
        var received = pair.readAll(count: filler)
        coaty_write_gather_begin(buffer)
        #expect(second.withUnsafeBytes { coaty_gathered_write(pair.writer, $0.baseAddress, 30) } == 30)
        #expect(coaty_write_gather_end() == 0)
        #expect(coaty_write_buffer_pending(buffer) == 0)
        received = pair.readAll(count: 70)
        #expect(received == first + second)
    }

    /// A socket that failed fails the end of the gathering and every later write with its error (the transport then
    /// ends the connection), until the buffer is attached to the next connection.
    @Test func aFailedSocketFailsEveryWriteUntilTheNextAttach() throws {
        let pair = try SocketPair()
        let buffer = try #require(coaty_write_buffer_create(64))
        defer { coaty_write_buffer_destroy(buffer) }
        coaty_write_buffer_attach(buffer, pair.writer, pair.writerDuplicate)
        let bytes: [UInt8] = [1, 2, 3, 4, 5]

        coaty_write_gather_begin(buffer)
        #expect(coaty_gathered_write(pair.writer, bytes, 5) == 5)
        pair.closeReader()
        #expect(coaty_write_gather_end() == -1)
        #expect(errno == EPIPE)
        coaty_write_gather_begin(buffer)
        #expect(coaty_gathered_write(pair.writer, bytes, 5) == -1)
        #expect(errno == EPIPE)
        #expect(coaty_write_gather_end() == -1)

        let next = try SocketPair()
        #expect(coaty_write_buffer_attach(buffer, next.writer, next.writerDuplicate) == 0)
        coaty_write_gather_begin(buffer)
        #expect(coaty_gathered_write(next.writer, bytes, 5) == 5)
        #expect(coaty_write_gather_end() == 0)
        #expect(next.readAvailable() == bytes)
    }

    /// A batch published inside `publishingTogether` leaves the transport in one write() (it fits the buffer; two
    /// if the network thread happened to be awake and wrote the first part) and arrives complete and in order; a
    /// publication on its own is written by libmosquitto directly, not through the buffer.
    @Test func aBatchLeavesTheTransportInOneWrite() async throws {
        #expect(MosquittoTransport.writesAreGathered)
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(to: broker, subscribingTo: ["batch/#"])
        let publisher = try await TestClient.connected(to: broker)
        let count = 100

        // The publisher's network thread goes to sleep, having nothing to do.
        try await Task.sleep(for: .milliseconds(50))
        let writesBefore = publisher.transport.socketWrites
        publisher.transport.publishingTogether {
            for index in 0..<count { try? publisher.publish("batch/\(index % 10)", "\(index)") }
        }
        let messages = try await subscriber.nextMessages(count)
        #expect(messages.map { String(decoding: $0.payload, as: UTF8.self) } == (0..<count).map { "\($0)" })
        let batchWrites = publisher.transport.socketWrites - writesBefore
        #expect(batchWrites >= 1 && batchWrites <= 2, "\(batchWrites) write() calls for \(count) publications")

        let writesAlone = publisher.transport.socketWrites
        for index in 0..<10 {
            try publisher.publish("batch/alone", "\(index)")
            #expect(try await subscriber.nextMessage().payload == Array("\(index)".utf8))
        }
        #expect(publisher.transport.socketWrites - writesAlone == 0)
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }
}

/// A connected pair of Unix stream sockets, both ends non-blocking and close-on-exec (a process another test starts
/// meanwhile must not keep an end open past its close); the writer's end also has a duplicate, as the transport
/// keeps one of the broker socket.
private final class SocketPair {
    private(set) var reader: Int32
    let writer: Int32
    let writerDuplicate: Int32

    init() throws {
        var pair: [Int32] = [-1, -1]
        let flags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        guard socketpair(AF_UNIX, flags, 0, &pair) == 0 else { throw TestSupportError("socketpair: errno \(errno)") }
        (reader, writer) = (pair[0], pair[1])
        writerDuplicate = fcntl(pair[1], F_DUPFD_CLOEXEC, 0)
    }

    deinit {
        if reader >= 0 { close(reader) }
        close(writer)
        close(writerDuplicate)
    }

    func closeReader() {
        close(reader)
        reader = -1
    }

    /// What has arrived at `descriptor` (the reader's end unless said otherwise), without waiting.
    func readAvailable(from descriptor: Int32? = nil) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = read(descriptor ?? reader, &bytes, bytes.count)
        return count > 0 ? Array(bytes.prefix(count)) : []
    }

    /// Reads until `count` bytes have arrived, or nothing more came for a second.
    func readAll(count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var idleSince = ContinuousClock.now
        while received.count < count && ContinuousClock.now - idleSince < .seconds(1) {
            let bytes = readAvailable()
            if bytes.isEmpty {
                usleep(1_000)
            } else {
                received += bytes
                idleSince = .now
            }
        }
        return received
    }

    /// Writes to the writer's end until its send buffer is full; returns how many bytes that took.
    func fillSendBuffer() -> Int {
        let block = [UInt8](repeating: 0xEE, count: 4096)
        var total = 0
        while true {
            let written = write(writer, block, block.count)
            guard written > 0 else { break }
            total += written
        }
        return total
    }
}
