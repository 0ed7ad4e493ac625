import CoatyCommunication
import CoatyHomeAssistant
import CoatyIORouting
import CoatyJSON
import CoatyModel
import CoatyRuntime
import EdgeHardware
import RoutingRules

/// Everything an agent needs, read from its configuration file and checked as a whole before anything starts:
/// the Coaty configuration, the controllers it names, its devices, and the routing rules its routers load.
public struct AgentConfiguration: Sendable {
    public var base: Configuration
    public var routers: [RouterSettings]
    /// Print every value this agent's actors receive (controller type "console").
    public var printsReceivedValues: Bool
    package var devices: DeviceConfiguration?
    /// The `mqttTopics` and `homeAssistant` sections; nil when neither is there.
    package var bridge: BridgeSettings?

    /// A router controller: `{"type": "ioRouter", "ioContext": {...}, "rules": "<directory or file>", "maxNodes": 256}`.
    public struct RouterSettings: Sendable {
        public var name: String
        public var context: IoContext
        public var rules: Rules
        /// How many IO nodes (and bytes of them) the router manages.
        public var nodeLimit = IoRouter.defaultNodeLimit

        public enum Rules: Sendable {
            /// Every compatible pair, as Coaty's BasicIoRouter.
            case allCompatiblePairs
            /// JSON rule files, reloaded when they change.
            case directory(String, initial: RoutingRuleSet)
            case file(String, initial: RoutingRuleSet)
        }
    }

    public static let controllerTypes = ["ioRouter", "console"]

    /// Reads and checks a configuration file; every error names the file, the JSON path and the reason.
    /// `allowsOpenPasswordFile`: see `Configuration.load`.
    public static func load(file: String, allowsOpenPasswordFile: Bool = false) throws(ConfigurationError)
        -> AgentConfiguration
    {
        let base = try Configuration.load(file: file, allowsOpenPasswordFile: allowsOpenPasswordFile)
        return try AgentConfiguration(base: base, allowsOpenPasswordFile: allowsOpenPasswordFile)
    }

    public init(base: Configuration, allowsOpenPasswordFile: Bool = false) throws(ConfigurationError) {
        self.base = base
        let file = base.source
        var routers: [RouterSettings] = []
        var printsReceivedValues = false
        for (name, options) in base.controllerOptions.sorted(by: { $0.key < $1.key }) {
            do {
                switch try options.required("type").oneOf(Self.controllerTypes) {
                case "ioRouter":
                    routers.append(try Self.readRouter(name: name, options, configurationFile: file))
                default:
                    try options.allowOnly(["type"])
                    printsReceivedValues = true
                }
            } catch let error as ConfigurationError {
                throw error
            } catch let error as JSONShapeError {
                throw ConfigurationError(file: file, error)
            } catch {
                throw ConfigurationError(file: file, path: options.path, reason: "\(error)")
            }
        }
        self.routers = routers
        self.printsReceivedValues = printsReceivedValues

        if let devices = base.devices {
            let parsed = try DeviceConfiguration(parsing: devices, file: file)
            try parsed.checkReferences(
                ioSourceIds: Set(base.ioNodes.flatMap { $0.ioSources.map(\.objectId) }),
                ioActorIds: Set(base.ioNodes.flatMap { $0.ioActors.map(\.objectId) }), file: file)
            self.devices = parsed
        } else {
            devices = nil
        }
        bridge = try BridgeSettings.read(base, devices: devices, allowsOpenPasswordFile: allowsOpenPasswordFile)
        // Read into `devices` and `bridge`: the agent's container keeps `base` for its whole life, and the JSON of
        // the devices section alone is about 1 KB of heap per sensor.
        self.base.devices = nil
        self.base.homeAssistant = nil
        self.base.mqttTopics = nil
    }

    private static func readRouter(name: String, _ options: JSONCursor, configurationFile: String) throws
        -> RouterSettings
    {
        try options.allowOnly(["type", "ioContext", "rules", "maxNodes"])
        var nodeLimit = IoRouter.defaultNodeLimit
        if let maximum = try options.optional("maxNodes") {
            nodeLimit.maximumCount = try maximum.integer(in: 1...65536)
        }
        let contextCursor = try options.required("ioContext")
        var json = try contextCursor.object()
        if json["coreType"] == nil { json["coreType"] = .string(CoreType.ioContext.rawValue) }
        if json["objectType"] == nil { json["objectType"] = .string(CoreType.ioContext.objectType) }
        if json["objectId"] == nil { json["objectId"] = .string(CoatyUUID.random()) }
        let context = try IoContext(validating: .object(json), at: contextCursor.path)
        guard CoatyName.isValid(context.name) else {
            throw JSONShapeError(
                path: contextCursor.path.appending("name"),
                reason: "the context name must be non-empty without '+', '#' or '/'")
        }
        guard let rulesCursor = try options.optional("rules") else {
            return RouterSettings(name: name, context: context, rules: .allCompatiblePairs, nodeLimit: nodeLimit)
        }
        let path = resolve(try rulesCursor.nonEmptyString(), relativeTo: configurationFile)
        do {
            if isDirectory(path) {
                return RouterSettings(
                    name: name, context: context,
                    rules: .directory(path, initial: try RoutingRuleSet.load(directory: path)),
                    nodeLimit: nodeLimit)
            }
            return RouterSettings(
                name: name, context: context, rules: .file(path, initial: try RoutingRuleSet.load(files: [path])),
                nodeLimit: nodeLimit)
        } catch {
            throw ConfigurationError(
                file: configurationFile, path: rulesCursor.path, reason: "the rules do not load:\n" + error.description)
        }
    }
}

#if canImport(Glibc)
    import Glibc
#endif

/// A path from the configuration, relative to the configuration file's directory unless absolute.
func resolve(_ path: String, relativeTo file: String) -> String {
    guard !path.hasPrefix("/") else { return path }
    guard let slash = file.lastIndex(of: "/") else { return path }
    return String(file[...slash]) + path
}

func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
}
