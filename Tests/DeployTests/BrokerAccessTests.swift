import CoatyCommunication
import CoatyTestSupport
import Foundation
import Testing

/// A real mosquitto running one of the shipped broker configurations, changed in two ways only: its listeners (the
/// agents' and the operators') listen on free ports of 127.0.0.1, and its files are under a target root instead of /.
private struct Broker {
    let root: ScratchDirectory
    /// The agents' listener.
    let port: Int
    let operatorPort: Int
    let process: ChildProcess

    /// `configuration` is relative to the root; `shippedPorts` are the ports its listener lines name.
    init(root: ScratchDirectory, configuration: String, shippedPorts: (agents: Int, operators: Int)) async throws {
        self.root = root
        port = try freePort()
        operatorPort = try freePort()
        var text = try root.read(configuration)
        for (shipped, local) in [(shippedPorts.agents, port), (shippedPorts.operators, operatorPort)] {
            let listener = "\nlistener \(shipped)\n"
            try #require(text.contains(listener))
            text = text.replacingOccurrences(of: listener, with: "\nlistener \(local) 127.0.0.1\n")
        }
        text = text.replacingOccurrences(of: " /etc/mosquitto/", with: " \(root.path)/etc/mosquitto/")
        let settings = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        try #require(!settings.contains { $0.contains(" /etc/") })
        let file = try root.write(text, to: "broker-under-test.conf")
        process = try await ChildProcess(Command("mosquitto", "-c", file.path))
        try await process.line(containing: "running", onErrors: true)
    }

    struct Login {
        var user: String
        var password: String
        /// Logs in on the operators' listener.
        var isOperator = false
    }

    /// mosquitto_pub's and mosquitto_sub's arguments for a login, on its listener (an anonymous client on the agents').
    func clientArguments(_ login: Login?, host: String = "127.0.0.1", tls: [String] = []) -> [String] {
        let port = login?.isOperator == true ? operatorPort : port
        return ["-h", host, "-p", "\(port)"] + (login.map { ["-u", $0.user, "-P", $0.password] } ?? []) + tls
    }

    /// Publishes at QoS 1: mosquitto_pub returns only after the broker acknowledged, that is, after the broker dealt
    /// with the message (delivered it, or dropped it for the ACL).
    func publish(_ topic: String, _ message: String, as login: Login?, host: String = "127.0.0.1", tls: [String] = [])
        async throws -> CommandResult
    {
        try await Command(
            ["mosquitto_pub"] + clientArguments(login, host: host, tls: tls) + ["-q", "1", "-t", topic, "-m", message]
        ).run(timeout: .seconds(20))
    }

    /// `publish` of the contents of `file` (a command-line argument holds at most 128 KiB).
    func publish(_ topic: String, file: URL, as login: Login?) async throws -> CommandResult {
        try await Command(["mosquitto_pub"] + clientArguments(login) + ["-q", "1", "-t", topic, "-f", file.path])
            .run(timeout: .seconds(20))
    }

    /// Subscribes and returns once the broker acknowledged the subscription; the subscriber ends by itself after
    /// `count` messages. QoS 1 throughout keeps the messages in the order the broker took them.
    func subscribe(_ topics: [String], as login: Login?, count: Int, host: String = "127.0.0.1", tls: [String] = [])
        async throws -> ChildProcess
    {
        let subscriber = try await ChildProcess(
            Command(
                ["stdbuf", "-oL", "mosquitto_sub", "-d", "-v", "-q", "1", "-C", "\(count)"]
                    + clientArguments(login, host: host, tls: tls) + topics.flatMap { ["-t", $0] }))
        try await subscriber.line(containing: "Subscribed (mid")
        return subscriber
    }

    /// The messages ("topic payload") a subscriber received, once it has its count.
    static func received(by subscriber: ChildProcess) async throws -> [String] {
        let result = try await subscriber.finished(within: .seconds(20))
        #expect(result.succeeded, "\(result.errors)")
        return result.outputLines.filter { $0.hasPrefix("coaty/") }
    }

    /// No client was displaced by another with its client id: each connected once, and the broker closed no old
    /// connection for a new one.
    func expectNobodyDisplaced(_ clients: [ChildProcess]) {
        for client in clients {
            #expect(
                client.output.text.components(separatedBy: "received CONNACK").count - 1 == 1, "\(client.output.text)")
        }
        #expect(
            !process.errors.text.contains("already connected, closing old connection"), "\(process.errors.text)")
    }
}

/// The ACL and logins of the plain broker configuration, with the broker users made by broker-user.sh: agents of the
/// namespaces A and B, and the operator.
@Suite(
    "Broker access",
    .enabled(if: Deploy.has("mosquitto", "mosquitto_pub", "mosquitto_sub", "mosquitto_passwd", "stdbuf")),
    .timeLimit(.minutes(1)))
struct BrokerAccessTests {
    private let root: ScratchDirectory
    private let agentA: Broker.Login
    /// A second agent of namespace A, and of B: a login holds one connection (the broker's client id is the user name).
    private let agentA2: Broker.Login
    private let agentB: Broker.Login
    private let agentB2: Broker.Login
    private let operatorLogin: Broker.Login

    init() async throws {
        let root = try makeTargetRoot()
        try FileManager.default.createDirectory(
            at: root.file("etc/mosquitto/conf.d"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Deploy.path("mosquitto/coaty-edge.conf"),
            toPath: root.file("etc/mosquitto/conf.d/coaty-edge.conf").path)
        self.root = root
        agentA = try await Self.addUser("agent-a", "A", in: root)
        agentA2 = try await Self.addUser("agent-a2", "A", in: root)
        agentB = try await Self.addUser("agent-b", "B", in: root)
        agentB2 = try await Self.addUser("agent-b2", "B", in: root)
        var operatorLogin = try await Self.addUser("coaty-operator", "--all-namespaces", in: root)
        operatorLogin.isOperator = true
        self.operatorLogin = operatorLogin
    }

    private static func addUser(_ name: String, _ namespace: String, in root: ScratchDirectory) async throws
        -> Broker.Login
    {
        let result = try await Command(Deploy.path("broker-user.sh"), "--root", root.path, "add", name, namespace).run()
        try #require(result.succeeded, "\(result.errors)")
        return Broker.Login(user: name, password: result.output.trimmingCharacters(in: .newlines))
    }

    private func startBroker() async throws -> Broker {
        try await Broker(root: root, configuration: "etc/mosquitto/conf.d/coaty-edge.conf", shippedPorts: (1883, 1884))
    }

    @Test("an agent publishes and subscribes in its own namespace, with Coaty's wildcard subscriptions")
    func ownNamespace() async throws {
        let broker = try await startBroker()
        let subscriber = try await broker.subscribe(
            ["coaty/3/A/ADV:Identity/+", "coaty/3/A/IOV/+"], as: agentA, count: 2)
        #expect(try await broker.publish("coaty/3/A/ADV:Identity/agent-a2", #"{"object":{}}"#, as: agentA2).succeeded)
        #expect(try await broker.publish("coaty/3/A/IOV/source-1", "21.5", as: agentA2).succeeded)
        #expect(
            try await Broker.received(by: subscriber) == [
                #"coaty/3/A/ADV:Identity/agent-a2 {"object":{}}"#, "coaty/3/A/IOV/source-1 21.5",
            ])
    }

    /// The broker acknowledges the intruding publication and drops it: the subscribers of namespace B, and the operator
    /// who sees every namespace, receive only what B published after it.
    @Test("an agent cannot publish into another namespace")
    func noPublishingIntoAnotherNamespace() async throws {
        let broker = try await startBroker()
        let inB = try await broker.subscribe(["coaty/3/B/#"], as: agentB, count: 1)
        let everywhere = try await broker.subscribe(["coaty/3/#"], as: operatorLogin, count: 1)
        let intrusion = try await broker.publish("coaty/3/B/IOV/source-1", "from A", as: agentA)
        #expect(intrusion.succeeded)
        #expect(try await broker.publish("coaty/3/B/IOV/source-2", "from B", as: agentB2).succeeded)
        #expect(try await Broker.received(by: inB) == ["coaty/3/B/IOV/source-2 from B"])
        #expect(try await Broker.received(by: everywhere) == ["coaty/3/B/IOV/source-2 from B"])
    }

    /// mosquitto accepts a subscription to topics the user may not read, but delivers nothing on it: what B published
    /// never reaches A, whose first message is the one from its own namespace published after.
    @Test("an agent cannot subscribe to another namespace, not even with wildcards")
    func noSubscribingToAnotherNamespace() async throws {
        let broker = try await startBroker()
        let subscriber = try await broker.subscribe(
            ["coaty/3/B/#", "coaty/3/+/IOV/+", "#"], as: agentA, count: 1)
        #expect(try await broker.publish("coaty/3/B/IOV/source-2", "from B", as: agentB).succeeded)
        #expect(try await broker.publish("coaty/3/A/IOV/source-1", "from A", as: agentA2).succeeded)
        #expect(try await Broker.received(by: subscriber) == ["coaty/3/A/IOV/source-1 from A"])
    }

    @Test("a wrong password, an unknown user and an anonymous client are refused")
    func loginIsRequired() async throws {
        let broker = try await startBroker()
        for login in [
            Broker.Login(user: agentA.user, password: agentB.password), Broker.Login(user: "nobody", password: "x"),
            nil,
        ] {
            let result = try await broker.publish("coaty/3/A/IOV/source-1", "x", as: login)
            #expect(!result.succeeded)
            #expect(result.errors.contains("not authorised"), "\(login?.user ?? "anonymous"): \(result.errors)")
        }
    }

    /// Both shipped configurations limit payloads to the agents' default `maxInboundPayload`: the broker drops a larger
    /// one (the publisher stays connected and what follows is delivered), and disconnects a publisher whose packet is
    /// over the hard ceiling of 1 MiB before reading it.
    @Test("the broker drops payloads over the agents' limit and refuses huge packets")
    func payloadSizeLimit() async throws {
        let limit = CommunicationOptions.defaultMaximumInboundPayload
        for configuration in ["mosquitto/coaty-edge.conf", "mosquitto/coaty-edge-tls.conf"] {
            let text = try String(contentsOfFile: Deploy.path(configuration), encoding: .utf8)
            #expect(text.contains("\nmessage_size_limit \(limit)\n"), "\(configuration)")
            #expect(text.contains("\nmax_packet_size 1048576\n"), "\(configuration)")
        }
        let broker = try await startBroker()
        let atLimit = try root.write(String(repeating: "a", count: limit), to: "at-limit.txt")
        let overLimit = try root.write(String(repeating: "b", count: limit + 1), to: "over-limit.txt")
        let huge = try root.write(String(repeating: "c", count: 2 * 1024 * 1024), to: "huge.txt")
        // The publisher has a login of its own: a second connection with the subscriber's would displace it.
        let subscriber = try await broker.subscribe(["coaty/3/A/IOV/+"], as: agentA, count: 2)
        #expect(try await broker.publish("coaty/3/A/IOV/source-1", file: overLimit, as: agentA2).succeeded)
        #expect(try await broker.publish("coaty/3/A/IOV/source-1", file: atLimit, as: agentA2).succeeded)
        let refused = try await broker.publish("coaty/3/A/IOV/source-1", file: huge, as: agentA2)
        #expect(!refused.succeeded)
        try await broker.process.line(containing: "disconnected due to oversize packet", onErrors: true)
        #expect(try await broker.publish("coaty/3/A/IOV/source-1", "21.5", as: agentA2).succeeded)
        let received = try await Broker.received(by: subscriber)
        #expect(
            received.map(\.count) == ["coaty/3/A/IOV/source-1 ".count + limit, "coaty/3/A/IOV/source-1 21.5".count])
    }

    /// Coaty registers the agent's Deadvertise as its MQTT last will. When a connection breaks, the broker sends the
    /// will only if its topic is in the user's namespace: a will aimed at another namespace is dropped.
    @Test("a last will reaches the agent's namespace and no other")
    func lastWill() async throws {
        let broker = try await startBroker()
        let everywhere = try await broker.subscribe(["coaty/3/#"], as: operatorLogin, count: 1)
        // Both connect as agent-a (the broker's client id for the login, whatever the client asks for); the first is
        // gone, will and all, before the second connects.
        for (clientID, willTopic) in [
            ("agent-a-intruder", "coaty/3/B/DAD/agent-a"), ("agent-a", "coaty/3/A/DAD/agent-a"),
        ] {
            let client = try await ChildProcess(
                Command(
                    ["stdbuf", "-oL", "mosquitto_sub", "-d", "-i", clientID, "-t", "coaty/3/A/ASC:Greenhouse/+"]
                        + broker.clientArguments(agentA)
                        + [
                            "--will-topic", willTopic, "--will-qos", "1", "--will-payload",
                            #"{"objectIds":["agent-a"]}"#,
                        ]))
            try await client.line(containing: "received CONNACK (0)")
            try await client.stop(with: SIGKILL)
            if clientID != agentA.user {
                try await broker.process.line(containing: "Client \(agentA.user) closed its connection", onErrors: true)
            }
        }
        #expect(try await Broker.received(by: everywhere) == [#"coaty/3/A/DAD/agent-a {"objectIds":["agent-a"]}"#])
    }

    /// MQTT lets a client displace another by connecting with its client id. On the agents' listener the broker takes
    /// the user name as client id, so B, connecting with A's client id (the one A chose, or its user name), displaces
    /// nobody: A keeps its one connection and still receives.
    @Test("a login cannot displace another namespace's agent by taking its client id")
    func clientIdsBelongToLogins() async throws {
        let broker = try await startBroker()
        let agentAClientId = "Coaty5e4a0b1c2d3e4f508a"
        let subscriber = try await ChildProcess(
            Command(
                [
                    "stdbuf", "-oL", "mosquitto_sub", "-d", "-v", "-q", "1", "-C", "1", "-i", agentAClientId, "-t",
                    "coaty/3/A/#",
                ]
                    + broker.clientArguments(agentA)))
        try await subscriber.line(containing: "Subscribed (mid")
        for clientId in [agentAClientId, agentA.user] {
            let intruder = try await Command(
                ["mosquitto_pub"] + broker.clientArguments(agentB) + [
                    "-i", clientId, "-q", "1", "-t", "coaty/3/B/IOV/x", "-m", "hi",
                ]
            ).run(timeout: .seconds(20))
            #expect(intruder.succeeded, "\(intruder.errors)")
        }
        #expect(try await broker.publish("coaty/3/A/IOV/source-1", "still here", as: operatorLogin).succeeded)
        #expect(try await Broker.received(by: subscriber) == ["coaty/3/A/IOV/source-1 still here"])
        broker.expectNobodyDisplaced([subscriber])
    }

    /// Operators run several clients at once with one login (observe and agents, each with its own client id, as the
    /// CLI makes them): on their listener neither displaces the other.
    @Test("two operator clients at once both stay connected")
    func operatorsRunSeveralClients() async throws {
        let broker = try await startBroker()
        let observers = [
            try await broker.subscribe(["coaty/3/#"], as: operatorLogin, count: 1),
            try await broker.subscribe(["coaty/3/A/#"], as: operatorLogin, count: 1),
        ]
        #expect(try await broker.publish("coaty/3/A/IOV/source-1", "21.5", as: agentA).succeeded)
        for observer in observers {
            #expect(try await Broker.received(by: observer) == ["coaty/3/A/IOV/source-1 21.5"])
        }
        broker.expectNobodyDisplaced(observers)
    }

    /// Each listener knows only its own logins: an agent's login is refused on the operators' listener, where client ids
    /// are free, and the operator's on the agents' listener.
    @Test("agents and operators log in on their own listeners only")
    func listenersKeepTheirLogins() async throws {
        let broker = try await startBroker()
        var agentAsOperator = agentA
        agentAsOperator.isOperator = true
        var operatorAsAgent = operatorLogin
        operatorAsAgent.isOperator = false
        for login in [agentAsOperator, operatorAsAgent] {
            let result = try await broker.publish("coaty/3/A/IOV/source-1", "x", as: login)
            #expect(!result.succeeded)
            #expect(result.errors.contains("not authorised"), "\(login): \(result.errors)")
        }
    }

    @Test("a user removed with broker-user.sh is refused after the broker reloads")
    func removedUser() async throws {
        let broker = try await startBroker()
        #expect(try await broker.publish("coaty/3/B/IOV/source-2", "before", as: agentB).succeeded)
        let removal = try await Command(Deploy.path("broker-user.sh"), "--root", root.path, "remove", agentB.user).run()
        #expect(removal.succeeded, "\(removal.errors)")
        #expect(!(try root.read("etc/mosquitto/coaty-edge.acl")).contains("user agent-b\n"))
        // A broker once held SIGHUP pending for minutes (ShdPnd 1, SIGHUP in its blocked mask, inherited from the
        // thread that spawned it; ChildProcess now clears the mask). A connection attempt (anonymous, refused) after
        // each signal also ends an idle broker's wait at once, as any client would on a live broker.
        var reloaded = false
        for _ in 0..<3 where !reloaded {
            kill(broker.process.processIdentifier, SIGHUP)
            _ = try? await broker.publish("coaty/3/-/IOV/wake", "wake", as: nil)
            reloaded =
                (try? await broker.process.line(containing: "Reloading config", onErrors: true, within: .seconds(7)))
                != nil
        }
        // What the kernel says about the broker's signals, and what the broker wrote, should it happen again.
        let status = (try? procFile("/proc/\(broker.process.processIdentifier)/status")) ?? ""
        let signals = status.split(separator: "\n").filter { ["Sig", "ShdPnd", "State"].contains(where: $0.hasPrefix) }
        #expect(reloaded, "\(signals.joined(separator: ", "))\n\(broker.process.errors.text.suffix(2000))")
        let afterwards = try await broker.publish("coaty/3/B/IOV/source-2", "after", as: agentB)
        #expect(afterwards.errors.contains("not authorised"), "\(afterwards.errors)")
        #expect(try await broker.publish("coaty/3/A/IOV/source-1", "still here", as: agentA).succeeded)
    }
}

/// The TLS variant exactly as `install.sh --tls` sets it up (local CA, broker certificate, the agent's and the
/// operator's logins), so it runs as root; the foreign CA is made here with openssl.
@Suite(
    "TLS broker",
    .enabled(if: Deploy.isRoot && Deploy.has("mosquitto", "mosquitto_pub", "mosquitto_sub", "stdbuf", "openssl", "jq")),
    .timeLimit(.minutes(1)))
struct TLSBrokerTests {
    @Test("the TLS listener admits the agent that trusts the local CA and refuses plain MQTT and other CAs")
    func tlsListener() async throws {
        let root = try makeTargetRoot()
        let program = try ScratchDirectory("coaty-binary")
        try FileManager.default.copyItem(atPath: "/bin/true", toPath: program.file("coaty-edge").path)
        let install = try await Command(
            Deploy.path("install.sh"), "--root", root.path, "--tls", "--binary", program.file("coaty-edge").path
        ).run(timeout: .seconds(90))
        try #require(install.succeeded, "\(install.output)\(install.errors)")
        #expect(!FileManager.default.fileExists(atPath: root.file("etc/mosquitto/conf.d/coaty-edge.conf").path))
        let agentConfig = try root.read("etc/coaty-edge/agent.json")
        #expect(agentConfig.contains(#""brokerUrl": "mqtts://localhost:8883""#))
        #expect(agentConfig.contains(#""caFile": "/etc/coaty-edge/tls/ca.crt""#))

        let broker = try await Broker(
            root: root, configuration: "etc/mosquitto/conf.d/coaty-edge-tls.conf", shippedPorts: (8883, 8884))
        let agent = Broker.Login(
            user: "coaty-edge",
            password: try root.read("etc/coaty-edge/broker.password").trimmingCharacters(in: .newlines))
        let operatorLogin = Broker.Login(
            user: "coaty-operator",
            password: try root.read("etc/coaty-edge/operator.password").trimmingCharacters(in: .newlines),
            isOperator: true)
        let trusted = ["--cafile", root.file("etc/coaty-edge/tls/ca.crt").path]

        // The agent's URL names localhost, which the broker's certificate must carry; so does the operators' listener.
        let subscriber = try await broker.subscribe(
            ["coaty/3/greenhouse/IOV/+"], as: operatorLogin, count: 1, host: "localhost", tls: trusted)
        #expect(
            try await broker.publish("coaty/3/greenhouse/IOV/soc", "48.2", as: agent, host: "localhost", tls: trusted)
                .succeeded)
        #expect(try await Broker.received(by: subscriber) == ["coaty/3/greenhouse/IOV/soc 48.2"])

        // Plain MQTT on the TLS port: the broker reads it as a broken TLS handshake.
        let plain = try await broker.publish("coaty/3/greenhouse/IOV/soc", "x", as: agent, host: "localhost")
        #expect(!plain.succeeded)
        try await broker.process.line(containing: "wrong version number", onErrors: true)

        let foreign = try ScratchDirectory("coaty-foreign-ca")
        let madeCA = try await Command(
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days",
            "1",
            "-subj", "/CN=foreign CA", "-keyout", foreign.file("ca.key").path, "-out", foreign.file("ca.crt").path
        ).run()
        try #require(madeCA.succeeded, "\(madeCA.errors)")
        let untrusted = try await broker.publish(
            "coaty/3/greenhouse/IOV/soc", "x", as: agent, host: "localhost",
            tls: ["--cafile", foreign.file("ca.crt").path])
        #expect(!untrusted.succeeded)
        // The client refused the broker's certificate and told the broker so.
        try await broker.process.line(containing: "alert unknown ca", onErrors: true)
    }
}
