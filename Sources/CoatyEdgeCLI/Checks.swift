import CoatyEdgeAgent
import CoatyJSON
import CoatyRuntime
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
                output += "\(path): \(count(rules.rules.count, "rule")) in \(count(files, "file"))"
                    + (names.isEmpty ? "\n" : ": \(names)\n")
                warnings += lines(rules.warnings())
            } catch {
                errors += lines(error.problems)
            }
        }
        return Report(
            output: errors.isEmpty ? output : "", errors: warnings + errors, status: errors.isEmpty ? .success : .configuration)
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
        return Report(output: summary(of: configuration), errors: lines(warnings), status: .success)
    }

    static func summary(of configuration: AgentConfiguration) -> String {
        let base = configuration.base
        let communication = base.communication
        var lines = ["\(base.source): OK"]
        lines.append("  identity   \(base.identity.name) (\(base.identity.objectId))")
        let scheme = communication.tls == nil ? "mqtt" : "mqtts"
        let broker =
            communication.mdnsServiceName == nil
            ? "\(scheme)://\(communication.host):\(communication.port)" : "\(communication.brokerDescription), \(scheme)"
        lines.append("  broker     \(broker), namespace \(communication.namespace)")
        if base.ioNodes.isEmpty { lines.append("  IO nodes   none") }
        for node in base.ioNodes {
            lines.append("  IO node    \(node.contextName): \(count(node.ioSources.count, "source")), \(count(node.ioActors.count, "actor"))")
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
                "  devices    \(count(devices.sensors.count, "sensor")), \(count(devices.outputs.count, "output")), "
                    + "\(count(devices.inputs.count, "input"))\(devices.emulated ? ", emulated" : "")")
        } else {
            lines.append("  devices    none")
        }
        for object in base.sharedObjects {
            var facts = [count(object.data.count, "key")]
            if let objectId = object.objectId { facts.append("objectId \(objectId)") }
            if object.isReadOnly { facts.append("read-only") }
            if let minutes = object.expiryMinutes { facts.append("expires after \(JSONValue.number(minutes)) min without activity") }
            lines.append("  shared     \(object.name): \(facts.joined(separator: ", "))")
        }
        if configuration.printsReceivedValues { lines.append("  console    prints the values its actors receive") }
        lines.append("  logging    \(base.logLevel.rawValue)")
        lines.append("  metrics    " + (base.metrics.map { "http://\(hostForURL($0.host)):\($0.port)/metrics" } ?? "off"))
        return lines.joined(separator: "\n") + "\n"
    }

    static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }

    static func hostForURL(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}
