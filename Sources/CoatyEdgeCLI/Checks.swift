import CoatyEdgeAgent
import CoatyHomeAssistant
import CoatyJSON
import CoatyRuntime
import EdgeHardware
import RoutingRules

/// `coaty-edge rules check` and `config check`: the checks the agent makes when it starts, without starting it.
public enum Checks {
    /// What a check prints: the summary (standard output) when valid, else one line per error (standard error);
    /// warnings (standard error) in both cases. Warnings alone do not fail a check.
    public struct Report: Sendable, Hashable {
        public var output: String
        public var errors: String
        public var status: ExitStatus
    }

    /// Loads each argument as a router would: a directory as one rule set, a file on its own.
    public static func rules(_ paths: [String]) -> Report {
        var output = ""
        var errors = ""
        var warnings = ""
        for path in paths {
            do {
                let rules = try RoutingRuleSet.load(path: path)
                let files = Set(rules.rules.map(\.origin.file)).count
                let names = rules.rules.map(\.name).joined(separator: ", ")
                output +=
                    "\(path): \(count(rules.rules.count, "rule")) in \(count(files, "file"))"
                    + (names.isEmpty ? "\n" : ": \(names)\n")
                warnings += lines(rules.warnings())
            } catch {
                errors += lines(error.problems)
            }
        }
        return Report(
            output: errors.isEmpty ? output : "", errors: warnings + errors,
            status: errors.isEmpty ? .success : .configuration)
    }

    static func lines(_ problems: [RuleFileProblem]) -> String {
        problems.map { $0.description + "\n" }.joined()
    }

    /// Loads an agent configuration with its routers, rules and devices.
    public static func configuration(_ file: String, allowsOpenPasswordFile: Bool = false) -> Report {
        let configuration: AgentConfiguration
        do {
            configuration = try AgentConfiguration.load(file: file, allowsOpenPasswordFile: allowsOpenPasswordFile)
        } catch {
            return Report(output: "", errors: error.description + "\n", status: .configuration)
        }
        let warnings = configuration.routers.flatMap { router -> [RuleFileProblem] in
            switch router.rules {
            case .allCompatiblePairs: []
            case .directory(_, let rules), .file(_, let rules): rules.warnings(context: router.context)
            }
        }
        let (found, missing) = gpioLines(of: configuration)
        var output = summary(of: configuration)
        output += found.map { $0 + "\n" }.joined()
        return Report(output: output, errors: lines(warnings) + missing.map { $0 + "\n" }.joined(), status: .success)
    }

    /// What the GPIO chips named by label and the lines named by name are on this machine: a line each for those found
    /// (output) and for those not found, with the chips present (warnings: the file may be meant for another machine).
    /// Emulated devices are not looked up.
    static func gpioLines(of configuration: AgentConfiguration) -> (found: [String], missing: [String]) {
        guard let devices = configuration.devices, !devices.emulated else { return ([], []) }
        let addresses =
            devices.outputs.map { ($0.line, $0.path) } + devices.inputs.map { ($0.line, $0.path) }
            + devices.counters.map { ($0.line, $0.path) }
        var found: [String] = []
        var missing: [String] = []
        for (address, path) in addresses where !GPIOChips.isDeviceName(address.chip) || address.offset == nil {
            do {
                found.append("  gpio       \(address) is \(try GPIOChips.resolve(address))")
            } catch {
                missing.append("\(configuration.base.source): \(path): \(address) not found on this machine: \(error)")
            }
        }
        return (found, missing)
    }

    static func summary(of configuration: AgentConfiguration) -> String {
        let base = configuration.base
        let communication = base.communication
        var lines = ["\(base.source): OK"]
        lines.append("  identity   \(base.identity.name) (\(base.identity.objectId))")
        let scheme = communication.tls == nil ? "mqtt" : "mqtts"
        let broker =
            communication.mdnsServiceName == nil
            ? "\(scheme)://\(communication.host):\(communication.port)"
            : "\(communication.brokerDescription), \(scheme)"
        lines.append("  broker     \(broker), namespace \(communication.namespace)")
        if base.ioNodes.isEmpty { lines.append("  IO nodes   none") }
        for node in base.ioNodes {
            lines.append(
                "  IO node    \(node.contextName): \(count(node.ioSources.count, "source")), \(count(node.ioActors.count, "actor"))"
            )
        }
        for router in configuration.routers {
            let rules: String
            switch router.rules {
            case .allCompatiblePairs: rules = "every compatible pair"
            case .directory(let path, let initial), .file(let path, let initial):
                rules = "\(count(initial.rules.count, "rule")) from \(path) (reloaded on change)"
            }
            lines.append("  router     \(router.name): context \(router.context.name), \(rules)")
        }
        if let devices = configuration.devices {
            lines.append(
                "  devices    \(count(devices.sensors.count, "sensor")), \(count(devices.outputs.count + devices.pwmOutputs.count, "output")), "
                    + "\(count(devices.inputs.count + devices.counters.count, "input"))\(devices.emulated ? ", emulated" : "")"
            )
        } else {
            lines.append("  devices    none")
        }
        for object in base.sharedObjects {
            var facts = [count(object.data.count, "key")]
            if let objectId = object.objectId { facts.append("objectId \(objectId)") }
            if object.isReadOnly { facts.append("read-only") }
            if let minutes = object.expiryMinutes {
                facts.append("expires after \(JSONValue.number(minutes)) min without activity")
            }
            lines.append("  shared     \(object.name): \(facts.joined(separator: ", "))")
        }
        if let bridge = configuration.bridge {
            let shown = bridge.points.filter(\.included).count
            lines.append(
                "  mqtt       \(bridge.prefix)/\(bridge.agentId)/<point>: \(count(bridge.points.count, "point")) (\(bridge.payload.rawValue)"
                    + "\(bridge.retain ? ", retained" : "")), status \(bridge.statusTopic)")
            if let homeAssistant = bridge.homeAssistant {
                lines.append(
                    "  home asst. discovery under \(homeAssistant.discoveryPrefix)/: \(shown) \(shown == 1 ? "entity" : "entities")"
                )
            }
        }
        if configuration.printsReceivedValues { lines.append("  console    prints the values its actors receive") }
        lines.append("  logging    \(base.logLevel.rawValue)")
        lines.append(
            "  metrics    " + (base.metrics.map { "http://\(hostForURL($0.host)):\($0.port)/metrics" } ?? "off"))
        return lines.joined(separator: "\n") + "\n"
    }

    /// `ha preview`: the discovery messages (topic, then the retained config as indented JSON) and the plain
    /// topics an agent with this configuration publishes, without connecting.
    public static func homeAssistantPreview(_ file: String, allowsOpenPasswordFile: Bool = false) -> Report {
        let configuration: AgentConfiguration
        do {
            configuration = try AgentConfiguration.load(file: file, allowsOpenPasswordFile: allowsOpenPasswordFile)
        } catch {
            return Report(output: "", errors: error.description + "\n", status: .configuration)
        }
        guard let bridge = configuration.bridge else {
            return Report(
                output: "",
                errors: "\(file): no \"homeAssistant\" or \"mqttTopics\" section: the agent publishes no MQTT topics\n",
                status: .configuration)
        }
        var output =
            "# availability: \(bridge.statusTopic) (retained online/offline; offline is the connection's will)\n"
        for point in bridge.points {
            let commands = Discovery.takesCommands(point.kind)
            output +=
                "# \(point.name): \(bridge.stateTopic(of: point))\(commands ? ", commands on \(bridge.commandTopic(of: point))" : "")"
            output += point.included || bridge.homeAssistant == nil ? "\n" : " (not in Home Assistant)\n"
        }
        let messages = Discovery.messages(for: bridge)
        if bridge.homeAssistant == nil { output += "# no \"homeAssistant\" section: no discovery messages\n" }
        for message in messages {
            output += "\n\(message.topic)\n\(JSONPretty.text(.object(message.config)))\n"
        }
        return Report(output: output, errors: "", status: .success)
    }

    static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }

    static func hostForURL(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}
