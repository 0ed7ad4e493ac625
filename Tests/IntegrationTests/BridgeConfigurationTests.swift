import CoatyMQTT
import Foundation
import MQTTTestSupport
import Testing

/// The shipped bridge configuration (deploy/mosquitto/bridge) run for real: a central mosquitto with central.conf
/// and central.acl, a site mosquitto with site.conf, TLS with a CA made here and the site's own login. Changed only
/// where a test must: ports on 127.0.0.1, file paths, the site's name and password, and a plain listener on each
/// broker for the test's clients.
@Suite struct BridgeConfigurationTests {
    static let bridgeDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "deploy/mosquitto/bridge")

    /// A mosquitto started from `configuration` (written to `directory`), with a plain anonymous listener for the
    /// test's clients on `clientPort`.
    final class Broker: Sendable {
        let process: MQTTTestSupport.ChildProcess
        let clientPort: Int
        let logFile: URL

        init(_ name: String, configuration: String, clientPort: Int, directory: URL) throws {
            self.clientPort = clientPort
            let file = directory.appending(path: "\(name).conf")
            logFile = directory.appending(path: "\(name).log")
            let header = """
                per_listener_settings true
                persistence false
                log_dest file \(logFile.path)
                log_type all
                user \(ProcessInfo.processInfo.environment["USER"] ?? "root")
                listener \(clientPort) 127.0.0.1
                allow_anonymous true

                """
            try (header + configuration).write(to: file, atomically: true, encoding: .utf8)
            process = try MQTTTestSupport.ChildProcess(
                try findTool("mosquitto"), arguments: ["-c", file.path],
                errorFile: directory.appending(path: "\(name).stderr"))
        }

        var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

        func client() async throws -> TestClient {
            let client = try TestClient(
                MQTTConnectOptions(
                    host: "127.0.0.1", port: clientPort, clientId: "test-\(UUID().uuidString.prefix(8))",
                    reconnect: MQTTReconnectPolicy(minimumDelay: .milliseconds(50), maximumDelay: .milliseconds(200))))
            _ = try await client.events(through: .connected)
            return client
        }
    }

    /// Replaces `old` with `new`, requiring that the shipped file has it, so that the test follows the file.
    static func replacing(_ old: String, with new: String, in text: String) throws -> String {
        try #require(text.contains(old), "the shipped configuration has no \"\(old)\"")
        return text.replacingOccurrences(of: old, with: new)
    }

    @Test func theShippedSiteAndCentralConfigurationsBridgeCoatyOverTLSWithTheSiteLogin() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "coaty-bridge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificates = try TestCertificates(serverAltName: "IP:127.0.0.1")
        let password = UUID().uuidString
        let passwords = directory.appending(path: "bridges.passwd")
        let passwd = try MQTTTestSupport.ChildProcess(
            try findTool("mosquitto_passwd"), arguments: ["-c", "-b", passwords.path, "site-greenhouse", password],
            errorFile: directory.appending(path: "passwd.stderr"))
        try await passwd.waitForExit()
        try FileManager.default.copyItem(
            at: Self.bridgeDirectory.appending(path: "central.acl"), to: directory.appending(path: "bridges.acl"))

        let bridgePort = try freeLoopbackPort()
        var central = try String(contentsOf: Self.bridgeDirectory.appending(path: "central.conf"), encoding: .utf8)
        central = try Self.replacing("\nlistener 8885\n", with: "\nlistener \(bridgePort) 127.0.0.1\n", in: central)
        central = try Self.replacing(
            "/etc/mosquitto/ca_certificates/coaty-edge-ca.crt", with: certificates.caFile, in: central)
        central = try Self.replacing(
            "/etc/mosquitto/certs/coaty-edge-server.crt", with: certificates.serverCertFile, in: central)
        central = try Self.replacing(
            "/etc/mosquitto/certs/coaty-edge-server.key", with: certificates.serverKeyFile, in: central)
        central = try Self.replacing("/etc/mosquitto/coaty-edge-bridges.passwd", with: passwords.path, in: central)
        central = try Self.replacing(
            "/etc/mosquitto/coaty-edge-bridges.acl", with: directory.appending(path: "bridges.acl").path, in: central)
        let centralBroker = try Broker(
            "central", configuration: central, clientPort: try freeLoopbackPort(), directory: directory)

        var site = try String(contentsOf: Self.bridgeDirectory.appending(path: "site.conf"), encoding: .utf8)
        site = try Self.replacing("central.example.net:8885", with: "127.0.0.1:\(bridgePort)", in: site)
        site = try Self.replacing("CHANGE-ME", with: password, in: site)
        site = try Self.replacing(
            "/etc/mosquitto/ca_certificates/coaty-edge-central-ca.crt", with: certificates.caFile, in: site)
        site = try Self.replacing("SITE", with: "greenhouse", in: site)
        let siteBroker = try Broker(
            "site", configuration: site, clientPort: try freeLoopbackPort(), directory: directory)

        let onCentral = try await centralBroker.client()
        try await onCentral.subscribe(["coaty/#", "bridges/#"])
        let onSite = try await siteBroker.client()
        try await onSite.subscribe(["coaty/#"])

        // The bridge's state, retained on the central broker: 1 once the site's bridge logged in.
        let state = try await onCentral.nextMessage(timeout: .seconds(30))
        #expect(state.topic == "bridges/greenhouse/state")
        #expect(String(decoding: state.payload, as: UTF8.self) == "1")
        #expect(centralBroker.log.contains(" as site-greenhouse ("), "\(centralBroker.log)")

        // Coaty topics both ways, dotted levels included, each exactly once.
        let fromSite = "coaty/3/-/ADV::coaty.IoNode/\(UUID().uuidString)"
        try onSite.publish(fromSite, "from the site")
        let arrived = try await onCentral.nextMessage(timeout: .seconds(30))
        #expect(arrived.topic == fromSite)
        let fromCentral = "coaty/3/-/CHN:coaty-edge.probe/\(UUID().uuidString)"
        try onCentral.publish(fromCentral, "from the centre")
        let messages = try await onSite.nextMessages(2, timeout: .seconds(30))
        #expect(messages.map(\.topic) == [fromSite, fromCentral])
        try await onSite.sync()
        try await onCentral.sync()
        try await Task.sleep(for: .milliseconds(500))
        #expect(onSite.pendingMessages.isEmpty, "\(onSite.pendingMessages.map(\.topic))")
        #expect(onCentral.pendingMessages.map(\.topic) == [fromCentral], "the central client's own message, once")

        _ = try await onSite.disconnect()
        _ = try await onCentral.disconnect()
        siteBroker.process.signal(SIGTERM)
        try await siteBroker.process.waitForExit()
        centralBroker.process.signal(SIGTERM)
        try await centralBroker.process.waitForExit()
    }
}
