import CoatyMQTT
import Foundation
import Synchronization

/// A real mosquitto on 127.0.0.1, on a port of its own, configured in a fresh temporary directory.
///
/// `stop()` and `start()` keep the port, for tests of broker restarts. The broker logs everything (`log_type all`)
/// to `logText`, where tests can read what the broker saw: client ids, `(p2, c1, k60)`, will flags.
public final class TestBroker: Sendable {
    public struct Options: Sendable {
        /// Users and passwords; when not empty, the broker loads a password file made with `mosquitto_passwd`.
        public var users: [String: String]
        /// Content of an ACL file (`user alice` / `topic readwrite sensors/#` ...).
        public var acl: String?
        /// Serves TLS with these files instead of plain MQTT.
        public var tls: TestCertificates?
        public var requiresClientCertificate: Bool
        public var allowsAnonymous: Bool
        /// More lines for mosquitto.conf, after the others (a bridge's `connection` section, for example).
        public var extraConfiguration: [String]

        public init(
            users: [String: String] = [:], acl: String? = nil, tls: TestCertificates? = nil,
            requiresClientCertificate: Bool = true, allowsAnonymous: Bool? = nil, extraConfiguration: [String] = []
        ) {
            self.users = users
            self.acl = acl
            self.tls = tls
            self.requiresClientCertificate = requiresClientCertificate
            self.allowsAnonymous = allowsAnonymous ?? users.isEmpty
            self.extraConfiguration = extraConfiguration
        }
    }

    public let port: Int
    private let directory: ScratchDirectory
    private let configFile: URL
    private let logFile: URL
    private let running = Mutex<SpawnedProcess?>(nil)
    private let starts = Mutex(0)

    /// Writes the configuration; `start()` runs the broker.
    public init(_ options: Options = Options()) throws {
        directory = try ScratchDirectory("coaty-broker")
        port = try freeLoopbackPort()
        configFile = directory.url.appending(path: "mosquitto.conf")
        logFile = directory.url.appending(path: "broker.log")

        var config = [
            "listener \(port) 127.0.0.1",
            "allow_anonymous \(options.allowsAnonymous)",
            "persistence false",
            "log_dest file \(logFile.path)",
            "log_type all",
            "connection_messages true",
            // Started as root, mosquitto would switch to the user "mosquitto", who cannot read this directory.
            "user \(currentUserName())",
        ]
        if !options.users.isEmpty {
            let passwordFile = directory.url.appending(path: "passwords")
            for (user, password) in options.users.sorted(by: { $0.key < $1.key }) {
                let create = FileManager.default.fileExists(atPath: passwordFile.path) ? [] : ["-c"]
                try runTool("mosquitto_passwd", create + ["-b", passwordFile.path, user, password])
            }
            config.append("password_file \(passwordFile.path)")
        }
        if let acl = options.acl {
            let aclFile = directory.url.appending(path: "acl")
            try acl.write(to: aclFile, atomically: true, encoding: .utf8)
            config.append("acl_file \(aclFile.path)")
        }
        if let tls = options.tls {
            config += [
                "cafile \(tls.caFile)", "certfile \(tls.serverCertFile)", "keyfile \(tls.serverKeyFile)",
                "require_certificate \(options.requiresClientCertificate)",
            ]
        }
        config += options.extraConfiguration
        try (config.joined(separator: "\n") + "\n").write(to: configFile, atomically: true, encoding: .utf8)
    }

    /// A broker that is already accepting connections.
    /// The port is free when chosen, but another socket of a test running alongside can take it before the
    /// broker binds it; then a new port is tried.
    public static func started(_ options: Options = Options()) async throws -> TestBroker {
        for attempt in 1...5 {
            let broker = try TestBroker(options)
            do {
                try await broker.start()
                return broker
            } catch let error as TestSupportError
                where attempt < 5 && error.description.contains("Address already in use")
            {
                continue
            }
        }
        throw TestSupportError("no free port for the broker after 5 attempts")
    }

    /// Runs the broker and returns once it accepts connections.
    public func start() async throws {
        guard running.withLock({ $0 == nil }) else { throw TestSupportError("the broker is already running") }
        let errorFile = directory.url.appending(path: "stderr")
        let process = try SpawnedProcess(
            try findTool("mosquitto"), arguments: ["-c", configFile.path], errorFile: errorFile)
        running.withLock { $0 = process }
        let expectedStarts = starts.withLock { count in
            count += 1
            return count
        }
        try await waitUntil("the broker to accept connections") {
            guard process.isRunning else {
                let stderr = (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
                throw TestSupportError("mosquitto exited: \(stderr)\(self.logText)")
            }
            // The broker logs "running" once its listener is open.
            return self.logText.components(separatedBy: " running\n").count - 1 >= expectedStarts
        }
    }

    /// Terminates the broker (SIGTERM, so it closes connections as on a shutdown) and waits until it has exited.
    public func stop() async throws { try await end(signal: SIGTERM) }

    /// Kills the broker (SIGKILL) and waits until it has exited.
    public func kill() async throws { try await end(signal: SIGKILL) }

    /// Sends `signal` to the running broker and returns (SIGSTOP freezes it: its connections stay open, unread).
    public func send(_ signal: Int32) {
        running.withLock { $0?.signal(signal) }
    }

    private func end(signal: Int32) async throws {
        guard let process = running.withLock({ $0.take() }) else { return }
        process.signal(signal)
        try await process.waitForExit()
    }

    /// Everything the broker logged so far, across restarts.
    public var logText: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Waits until the log contains `text` (a broker's reaction to a client arrives in its log, not at the client).
    public func waitForLog(containing text: String, timeout: Duration = .seconds(10)) async throws {
        try await waitUntil("the broker log to contain \"\(text)\"", timeout: timeout) { self.logText.contains(text) }
    }

    /// Options for a plain client of this broker with quick reconnects.
    public func connectOptions(clientId: String) -> MQTTConnectOptions {
        MQTTConnectOptions(
            host: "127.0.0.1", port: port, clientId: clientId,
            reconnect: MQTTReconnectPolicy(minimumDelay: .milliseconds(10), maximumDelay: .milliseconds(200)))
    }
}

public struct TestSupportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds; the timeout only guards against hanging.
public func waitUntil(_ what: String, timeout: Duration = .seconds(10), _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw TestSupportError("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// A port nobody listens on now. The kernel does not hand the same ephemeral port out again right away.
public func freeLoopbackPort() throws -> Int {
    let (descriptor, port) = try loopbackSocket()
    close(descriptor)
    return port
}

/// A TCP socket bound to an ephemeral port of 127.0.0.1, listening with `backlog` if one is given: its descriptor
/// (the caller closes it) and port.
public func loopbackSocket(listeningWith backlog: Int32? = nil) throws -> (descriptor: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(fd, address, length) == 0 && backlog.map { listen(fd, $0) == 0 } != false
                && getsockname(fd, address, &length) == 0
        }
    }
    guard bound else {
        let code = errno
        close(fd)
        throw TestSupportError("bind or listen: errno \(code)")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

public func findTool(_ name: String) throws -> URL {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin"]
    for directory in directories where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
        return URL(filePath: directory).appending(path: name)
    }
    throw TestSupportError("\(name) is not installed")
}

/// Runs a command-line tool to its end; its output goes into the error when it fails.
package func runTool(_ name: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = try findTool(name)
    process.arguments = arguments
    // Into a file, not a pipe: the end of a pipe's output never comes while another child spawned meanwhile holds
    // its write end, and a test then waited for it for good (seen once in a full run).
    let directory = try ScratchDirectory("coaty-tool")
    let outputFile = try directory.write("", to: "output")
    let output = try FileHandle(forWritingTo: outputFile)
    defer { try? output.close() }
    process.standardOutput = output
    process.standardError = output
    try process.run()
    process.waitUntilExit()
    let text = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
    guard process.terminationStatus == 0 else {
        throw TestSupportError("\(name) \(arguments.joined(separator: " ")) failed: \(text)")
    }
}

private func currentUserName() -> String {
    guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "root" }
    return String(cString: name)
}
