import ArgumentParser
import CoatyEdgeCLI
import Logging

/// How the client subcommands reach the broker.
struct ConnectionOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The broker, mqtt://host[:port] or mqtts://host[:port], or mdns[:<service name>] to find it by mDNS.", valueName: "url"))
    var broker: String?

    @Option(help: "The Coaty namespace to join (default: the configuration's, or \"-\").")
    var namespace: String?

    @Flag(help: "See the events of every namespace (Coaty's cross-namespacing).")
    var allNamespaces = false

    @Option(help: "The broker user.")
    var username: String?

    @Option(help: ArgumentHelp("A file holding the broker password.", valueName: "file"))
    var passwordFile: String?

    @Option(help: ArgumentHelp("The PEM file of the CA that signed the broker's certificate (TLS).", valueName: "file"))
    var caFile: String?

    @Option(help: ArgumentHelp("A PEM client certificate, for brokers that ask for one.", valueName: "file"))
    var certFile: String?

    @Option(help: ArgumentHelp("The PEM key of the client certificate.", valueName: "file"))
    var keyFile: String?

    @Option(help: ArgumentHelp("Take the broker, namespace and credentials from this agent configuration.", valueName: "file"))
    var config: String?

    @Flag(help: "Use a password file that its group or others may read (refused otherwise, as ssh refuses such a key).")
    var allowOpenPasswordFile = false

    @Option(help: ArgumentHelp("Seconds to wait for the broker to accept the connection.", valueName: "seconds"))
    var connectTimeout = Seconds(5)

    @Option(help: "Log level of the client's own messages (trace, debug, info, notice, warning, error, critical).")
    var logLevel: LogLevelArgument = .warning

    var settings: BrokerSettings {
        var settings = BrokerSettings()
        settings.brokerURL = broker
        settings.namespace = namespace
        settings.allNamespaces = allNamespaces
        settings.username = username
        settings.passwordFile = passwordFile
        settings.caFile = caFile
        settings.certFile = certFile
        settings.keyFile = keyFile
        settings.configurationFile = config
        settings.allowsOpenPasswordFile = allowOpenPasswordFile
        return settings
    }

    /// Connects as "coaty-edge cli", runs `body` once online, and leaves.
    func withSession<T: Sendable>(
        censusTimeout: Duration = .seconds(3), _ body: @escaping @Sendable (ClientSession) async throws -> T
    ) async throws -> T {
        AgentRunner.bootstrapLogging(level: logLevel.level)
        let session = ClientSession(options: try settings.communicationOptions(), censusTimeout: censusTimeout)
        return try await session.run(connectTimeout: connectTimeout.duration, body)
    }
}

/// A wait on the command line, in seconds: a finite number above zero, at most a day. `Duration.seconds(_: Double)`
/// traps on infinity, NaN and numbers beyond its range, and "inf" and "nan" parse as Doubles: check first.
struct Seconds: ExpressibleByArgument, Sendable {
    static let maximum = 86_400.0
    let value: Double

    init(_ value: Double) {
        precondition(value.isFinite && value > 0 && value <= Self.maximum, "a wait of \(value) s")
        self.value = value
    }

    init?(argument: String) {
        guard let value = Double(argument), value.isFinite, value > 0, value <= Self.maximum else { return nil }
        self.value = value
    }

    var duration: Duration { .seconds(value) }

    var defaultValueDescription: String { "\(value)" }
}

enum LogLevelArgument: String, ExpressibleByArgument, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}
