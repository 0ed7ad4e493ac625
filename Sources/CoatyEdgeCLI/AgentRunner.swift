import CoatyBrokerDiscovery
import CoatyCommunication
import CoatyEdgeAgent
import CoatyMQTT
import CoatyRuntime
import EdgeEmulation
import Logging
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
    import Glibc
#endif

/// `coaty-edge run`: the agent of a configuration file as a service, for systemd or a terminal.
public enum AgentRunner {
    public struct Settings: Sendable {
        public var configurationFile: String
        /// Overrides the configuration's `communication.brokerUrl` (host and port).
        public var brokerURL: String?
        /// Overrides the configuration's `logging.level`.
        public var logLevel: Logger.Level?
        /// Serves the metrics on this port (on the configuration's metrics host, or the loopback address).
        public var metricsPort: Int?
        /// Accepts a `passwordFile` that its group or others may read.
        public var allowsOpenPasswordFile = false

        public init(configurationFile: String) {
            self.configurationFile = configurationFile
        }
    }

    /// Loads and checks the whole configuration; every problem is a `.configuration` failure naming the file, the
    /// JSON path and the reason.
    public static func load(_ settings: Settings) throws(CommandFailure) -> AgentConfiguration {
        var configuration: AgentConfiguration
        do {
            configuration = try AgentConfiguration.load(
                file: settings.configurationFile, allowsOpenPasswordFile: settings.allowsOpenPasswordFile)
        } catch {
            throw CommandFailure(.configuration, "invalid configuration: \(error)")
        }
        if let brokerURL = settings.brokerURL {
            let address: BrokerAddress
            do {
                address = try BrokerAddress(parsing: brokerURL)
            } catch {
                throw CommandFailure(.usage, error.description)
            }
            switch address {
            case .url(let url):
                guard !url.usesTLS || configuration.base.communication.tls != nil else {
                    throw CommandFailure(
                        .usage, "--broker \(brokerURL): an mqtts:// broker needs \"tls\" in the configuration")
                }
                configuration.base.communication.host = url.host
                configuration.base.communication.port = url.port
                configuration.base.communication.mdnsServiceName = nil
            case .mdns(let serviceName):
                configuration.base.communication.mdnsServiceName = serviceName
            }
        }
        if let port = settings.metricsPort {
            configuration.base.metrics = Configuration.MetricsEndpoint(
                host: configuration.base.metrics?.host ?? "127.0.0.1", port: port)
        }
        return configuration
    }

    /// An agent needs no more than its devices' groups and its own files; as root, a flaw in it or in a library would
    /// own the machine. So `run` refuses root unless allowed (`--allow-root`), with the configuration's exit status:
    /// the systemd unit does not restart it.
    public static func refuseRoot(unless allowed: Bool, effectiveUser: uid_t = geteuid()) throws(CommandFailure) {
        guard effectiveUser == 0, !allowed else { return }
        throw CommandFailure(
            .configuration,
            "refusing to run the agent as root: run it as an unprivileged user in the groups of its devices (the "
                + "systemd unit uses \"coaty-edge\"), or pass --allow-root")
    }

    /// Emulated devices need the umockdev preload in the process: re-executes the program with it (same arguments
    /// and environment) unless it is there. Call it before starting anything.
    public static func prepareEmulation(for configuration: AgentConfiguration) throws(CommandFailure) {
        guard configuration.devices?.emulated == true else { return }
        do {
            try UMockdevPreload.reexecuteIfMissing()
        } catch {
            throw CommandFailure(.failure, "cannot emulate the devices: \(error)")
        }
    }

    /// Logging as the agent writes it: one line per event on standard error, for the journal when it reads it.
    public static func bootstrapLogging(level: Logger.Level) {
        let format = LogFormat.detect()
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, level: level, format: format) }
    }

    /// Runs the agent until SIGTERM or SIGINT, then shuts it down gracefully and at once, whatever is queued: inbound
    /// messages dropped (counted and logged), routers disassociate, outputs to their safe state, Deadvertise (the last
    /// publication), disconnect. Tells systemd READY=1 once the agent is started and STOPPING=1 when
    /// the shutdown begins.
    public static func run(_ configuration: AgentConfiguration, logger: Logger) async throws(CommandFailure) {
        // The metrics backend must be in place before the agent creates its counters.
        var metrics: MetricsService?
        if let endpoint = configuration.base.metrics {
            do {
                metrics = try MetricsService.bootstrap(host: endpoint.host, port: endpoint.port, logger: logger)
                logger.info("metrics at http://\(Checks.hostForURL(endpoint.host)):\(endpoint.port)/metrics")
            } catch {
                throw CommandFailure(.failure, "cannot serve the metrics: \(error)")
            }
        }
        let agent: Container
        do {
            agent = try await EdgeAgent.make(configuration)
        } catch {
            throw CommandFailure(.failure, "cannot start the agent: \(error)")
        }
        let notifier = SystemdNotifier.fromEnvironment()
        // Shut down in reverse order: first tell systemd, then stop the metrics, then the agent.
        var services: [any Service] = [agent]
        if let metrics { services.append(metrics) }
        services.append(NotifierService(notifier: notifier, agent: agent, logger: logger))
        services.append(DottedTopicCheck(agent: agent, logger: logger))
        services.append(StartupCodeRelease(agent: agent, logger: logger))
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        do {
            try await group.run()
        } catch {
            throw CommandFailure(.failure, "the agent failed: \(error)")
        }
    }
}

/// Tells systemd that the agent is ready once it started, and that it stops when the graceful shutdown begins.
struct NotifierService: Service {
    let notifier: SystemdNotifier
    let agent: Container
    let logger: Logger

    func run() async throws {
        for await state in agent.communicationManager.operatingStates() where state == .started {
            break
        }
        send(SystemdNotifier.ready)
        try? await gracefulShutdown()
        send(SystemdNotifier.stopping)
    }

    private func send(_ message: String) {
        do {
            try notifier.notify(message)
        } catch {
            logger.warning("\(error)")
        }
    }
}

/// Checks once, after the agent first comes online, that the broker delivers topic levels with a '.' (see
/// `DottedTopicProbe`), and names the likely cause when it does not; then waits for the shutdown.
struct DottedTopicCheck: Service {
    let agent: Container
    let logger: Logger

    static func warning(topic: String, within timeout: Duration) -> String {
        "the broker did not deliver this agent's own message on \(topic)/<agent> back to it within \(timeout): "
            + "Coaty puts object types with dots into topic levels (ADV::coaty.IoNode), and a broker that does not "
            + "deliver them leaves the agent deaf to IO nodes, routers and shared objects. RabbitMQ's MQTT plugin does "
            + "this (it maps '.' and '/' between MQTT and AMQP; coaty-js issue 11): use mosquitto or another MQTT "
            + "broker; otherwise check that the broker's ACL lets this agent read and write its namespace"
    }

    func run() async throws {
        let outcome = await cancelWhenGracefulShutdown { await DottedTopicProbe.run(agent.communicationManager) }
        switch outcome {
        case .delivered(let after):
            let milliseconds = after.components.seconds * 1000 + after.components.attoseconds / 1_000_000_000_000_000
            logger.info("the broker delivers topic levels with dots (the probe came back after \(milliseconds) ms)")
        case .notDelivered(let topic, let within):
            logger.warning("\(Self.warning(topic: topic, within: within))")
        case nil:
            break
        }
        try? await gracefulShutdown()
    }
}
