import EdgeEmulation
import CoatyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The whole test process runs under the umockdev preload, and once the emulation has started, with a testbed:
/// the other targets' network tests must not notice.
@Suite(.emulatedHardware, .timeLimit(.minutes(1))) struct PreloadCoexistenceTests {
    @Test func loopbackTCPStillWorksWithTheTestbedActive() throws {
        _ = try EmulatedHardware()
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try #require(withSockaddr(&address) { bind(listener, $0, length) } == 0)
        try #require(listen(listener, 1) == 0)
        try #require(withSockaddr(&address) { getsockname(listener, $0, &length) } == 0)

        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(client >= 0)
        defer { close(client) }
        try #require(withSockaddr(&address) { connect(client, $0, length) } == 0)
        let server = accept(listener, nil, nil)
        try #require(server >= 0)
        defer { close(server) }

        let message: [UInt8] = Array("CONNECT".utf8)
        #expect(send(client, message, message.count, 0) == message.count)
        var received = [UInt8](repeating: 0, count: 16)
        let count = recv(server, &received, received.count, 0)
        #expect(Array(received.prefix(max(count, 0))) == message)
    }
}

private func withSockaddr<T>(_ address: inout sockaddr_in, _ body: (UnsafeMutablePointer<sockaddr>) -> T) -> T {
    withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
}
