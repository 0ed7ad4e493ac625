import CMosquitto
import MQTTTestSupport
import Testing

@testable import CoatyMQTT

/// libmosquitto's wake-up pipe, which nobody reads in the transport's own loop, is closed before the connect, so
/// that a publication costs no failing write into it; the connection works as before.
@Suite struct LibraryWakePipeTests {
    /// A client as libmosquitto makes it has the pair; once closed, libmosquitto's fields say it has none, and the
    /// client is destroyed without touching the closed descriptors.
    @Test func recognisesAndClosesThePairOfAFreshClient() throws {
        _ = try MosquittoTransport()  // initialises the library
        let handle = try #require(mosquitto_new(nil, true, nil))
        defer { mosquitto_destroy(handle) }
        let pair = try #require(LibraryWakePipe.descriptors(of: handle))
        #expect(pair.reader >= 0 && pair.writer >= 0 && pair.reader != pair.writer)
        #expect(LibraryWakePipe.close(in: handle))
        #expect(LibraryWakePipe.descriptors(of: handle) == nil)
        #expect(!LibraryWakePipe.close(in: handle))
    }

    /// Many more publications than the pair's buffer could take (a few hundred one-byte writes), and a reconnect:
    /// all arrive, and the pair stays closed.
    @Test func aConnectedTransportHasNoWakePipeAndCarriesMessages() async throws {
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(to: broker, subscribingTo: ["pipe/#"])
        let publisher = try await TestClient.connected(to: broker)
        #expect(!publisher.transport.hasLibraryWakePipe)
        let count = 3_000
        for index in 0..<count {
            try publisher.publish("pipe/\(index % 7)", "\(index)")
        }
        let received = try await subscriber.nextMessages(count)
        #expect(received.map { String(decoding: $0.payload, as: UTF8.self) } == (0..<count).map { "\($0)" })

        try await broker.stop()
        try await broker.start()
        _ = try await publisher.events(through: .connected, timeout: .seconds(60))
        _ = try await subscriber.events(through: .connected, timeout: .seconds(60))
        try await subscriber.sync()
        try publisher.publish("pipe/after", "after")
        #expect(try await subscriber.nextMessage().topic == "pipe/after")
        #expect(!publisher.transport.hasLibraryWakePipe)
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }
}
