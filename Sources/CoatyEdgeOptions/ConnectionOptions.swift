import ArgumentParser
import CoatyEdgeCLI
import Logging

/// How the client subcommands (and `coaty-edge-dashboard`) reach the broker.
public struct ConnectionOptions: ParsableArguments, Sendable {
    @Option(
        help: ArgumentHelp(
            "The broker, mqtt://host[:port] or mqtts://host[:port], or mdns[:<service name>] to find it by mDNS.",
            valueName: "url"))
    public var broker: String?

    @Option(help: "The Coaty namespace to join (default: the configuration's, or \"-\").")
    public var namespace: String?

    @Flag(help: "See the events of every namespace (Coaty's cross-namespacing).")
    public var allNamespaces = false

    @Option(help: "The broker user.")
    public var username: String?

    @Option(help: ArgumentHelp("A file holding the broker password.", valueName: "file"))
    public var passwordFile: String?

    @Option(help: ArgumentHelp("The PEM file of the CA that signed the broker's certificate (TLS).", valueName: "file"))
    public var caFile: String?

    @Option(help: ArgumentHelp("A PEM client certificate, for brokers that ask for one.", valueName: "file"))
    public var certFile: String?

    @Option(help: ArgumentHelp("The PEM key of the client certificate.", valueName: "file"))
    public var keyFile: String?

    @Option(
        help: ArgumentHelp(
            "Take the broker, namespace and credentials from this agent configuration.", valueName: "file"))
    public var config: String?

    @Flag(help: "Use a password file that its group or others may read (refused otherwise, as ssh refuses such a key).")
    public var allowOpenPasswordFile = false

    @Option(help: ArgumentHelp("Seconds to wait for the broker to accept the connection.", valueName: "seconds"))
    public var connectTimeout = Seconds(5)

    @Option(help: "Log level of the client's own messages (trace, debug, info, notice, warning, error, critical).")
    public var logLevel: LogLevelArgument = .warning

    public init() {}

    public var settings: BrokerSettings {
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
    public func withSession<T: Sendable>(
        censusTimeout: Duration = .seconds(3), _ body: @escaping @Sendable (ClientSession) async throws -> T
    ) async throws -> T {
        AgentRunner.bootstrapLogging(level: logLevel.level)
        let session = ClientSession(options: try settings.communicationOptions(), censusTimeout: censusTimeout)
        return try await session.run(connectTimeout: connectTimeout.duration, body)
    }

    /// The shape of a one-shot subcommand: connects, runs `body` once online, leaves, and prints what `text` makes of
    /// its answer. A `CommandFailure` from connecting, from `body` or from `text` becomes the message and exit status,
    /// as with `perform`.
    package func printAnswer<T: Sendable>(
        censusTimeout: Duration = .seconds(3), _ body: @escaping @Sendable (ClientSession) async throws -> T,
        as text: (T) throws -> String
    ) async throws {
        try await perform {
            let answer = try await withSession(censusTimeout: censusTimeout, body)
            StandardOutput.write(try text(answer))
        }
    }

    /// Prints the text `body` answers, as the generic `printAnswer` does.
    package func printAnswer(
        censusTimeout: Duration = .seconds(3), _ body: @escaping @Sendable (ClientSession) async throws -> String
    ) async throws {
        try await printAnswer(censusTimeout: censusTimeout, body, as: { $0 })
    }
}

/// A wait on the command line, in seconds: a finite number above zero, at most a day. `Duration.seconds(_: Double)`
/// traps on infinity, NaN and numbers beyond its range, and "inf" and "nan" parse as Doubles: check first.
public struct Seconds: ExpressibleByArgument, Sendable {
    public static let maximum = 86_400.0
    public let value: Double

    public init(_ value: Double) {
        precondition(value.isFinite && value > 0 && value <= Self.maximum, "a wait of \(value) s")
        self.value = value
    }

    public init?(argument: String) {
        guard let value = Double(argument), value.isFinite, value > 0, value <= Self.maximum else { return nil }
        self.value = value
    }

    public var duration: Duration { .seconds(value) }

    public var defaultValueDescription: String { "\(value)" }
}

public enum LogLevelArgument: String, ExpressibleByArgument, CaseIterable, Sendable {
    case trace, debug, info, notice, warning, error, critical

    public var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}

/// Runs a subcommand's work; a `CommandFailure` becomes its message on standard error and its exit status.
public func perform(_ work: () async throws -> Void) async throws {
    do {
        try await work()
    } catch let failure as CommandFailure {
        StandardError.write("coaty-edge: \(failure.description)\n")
        throw ExitCode(failure.status.rawValue)
    }
}
