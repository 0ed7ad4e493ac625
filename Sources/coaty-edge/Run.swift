import ArgumentParser
import CoatyEdgeCLI
import CoatyEdgeOptions
import Logging

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the agent of a configuration file until SIGTERM or SIGINT.",
        discussion: """
            The whole configuration (routers, rules, devices) is checked first; an invalid one exits with status 78 \
            (systemd: RestartPreventExitStatus=78). With "devices": {"emulated": true} the program re-executes itself \
            under the umockdev preload. On SIGTERM or SIGINT the agent drops what is still queued inbound, the \
            outputs go to their safe state, the agent deadvertises and disconnects, and it exits 0. Under systemd \
            (Type=notify) it sends READY=1 once started and STOPPING=1 when stopping; logs go to the journal with \
            their priorities. It refuses to run as root (exit 78) unless given --allow-root, and refuses a \
            passwordFile that its group or others may read (exit 78) unless given --allow-open-password-file.
            """)

    @Option(help: ArgumentHelp("The agent configuration (JSON).", valueName: "file"))
    var config: String

    @Option(
        help: ArgumentHelp(
            "Use this broker instead of the configuration's brokerUrl (a URL, or mdns[:<service name>]).",
            valueName: "url"))
    var broker: String?

    @Option(help: "Log level, overriding the configuration's logging.level.")
    var logLevel: LogLevelArgument?

    @Option(
        help: ArgumentHelp(
            "Serve Prometheus metrics at http://127.0.0.1:<port>/metrics (or the configuration's metrics host).",
            valueName: "port"))
    var metricsPort: Int?

    @Flag(help: "Run even as root (refused otherwise: the agent needs only its devices' groups).")
    var allowRoot = false

    @Flag(help: "Use a passwordFile that its group or others may read (refused otherwise, as ssh refuses such a key).")
    var allowOpenPasswordFile = false

    func validate() throws {
        if let metricsPort, !(1...65535).contains(metricsPort) {
            throw ValidationError("--metrics-port must be within 1...65535")
        }
    }

    func run() async throws {
        try await perform {
            try AgentRunner.refuseRoot(unless: allowRoot)
            var settings = AgentRunner.Settings(configurationFile: config)
            settings.brokerURL = broker
            settings.logLevel = logLevel?.level
            settings.metricsPort = metricsPort
            settings.allowsOpenPasswordFile = allowOpenPasswordFile
            let configuration = try AgentRunner.load(settings)
            try AgentRunner.prepareEmulation(for: configuration)
            let level = settings.logLevel ?? Logger.Level(rawValue: configuration.base.logLevel.rawValue) ?? .info
            AgentRunner.bootstrapLogging(level: level)
            try await AgentRunner.run(configuration, logger: Logger(label: "coaty-edge"))
        }
    }
}
