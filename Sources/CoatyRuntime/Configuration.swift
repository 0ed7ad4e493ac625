import CoatyBrokerDiscovery
import CoatyCommunication
import CoatyFiles
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatySharedObjects

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An agent's configuration, read from one JSON file:
///
/// ```json
/// {
///   "common": {"agentIdentity": {"name": "Greenhouse"}, "ioContextNodes": {"<context>": {"ioSources": [], "ioActors": [], "characteristics": {}}}},
///   "communication": {"brokerUrl": "mqtt://127.0.0.1:1883", "namespace": "-", "username": "...", "passwordFile": "...",
///                     "tls": {"caFile": "..."}, "keepAlive": 60, "reconnect": {"minDelay": 0.1, "maxDelay": 0.3},
///                     "maxInboundPayload": 262144, "offlineQueue": {"maxMessages": 10000, "maxBytes": 4194304, "drop": "oldest"},
///                     "zeroLoss": {"maxValues": 10000, "maxBytes": 1048576, "drop": "oldest"}},
///   "controllers": {"<name>": {...}},
///   "sharedObjects": {"<name>": {"data": {...}, "expiry": 30, "readOnly": false, "maxValueBytes": 16384}},
///   "devices": {...},
///   "mqttTopics": {...}, "homeAssistant": {...},
///   "logging": {"level": "info"},
///   "metrics": {"port": 9464, "host": "127.0.0.1"}
/// }
/// ```
public struct Configuration: Sendable {
    /// The file it was read from, for error messages (or a label for configurations built in code).
    public var source: String
    public var identity: Identity
    public var ioNodes: [IoNodeDefinition]
    public var communication: CommunicationOptions
    /// Options per controller name, each with its JSON path for the controller's own error messages.
    public var controllerOptions: [String: JSONCursor]
    /// The shared objects this agent hosts from its start.
    public var sharedObjects: [SharedObjectDefinition]
    /// The `devices` section, read by the hardware layer.
    package var devices: JSONCursor?
    /// The `homeAssistant` and `mqttTopics` sections, read by the Home Assistant and plain MQTT bridge.
    package var homeAssistant: JSONCursor?
    package var mqttTopics: JSONCursor?
    public var logLevel: LogLevelName
    /// Where to serve the metrics in Prometheus's text format; nil serves none.
    package var metrics: MetricsEndpoint?

    public enum LogLevelName: String, Sendable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical
    }

    /// A local HTTP endpoint for `GET /metrics`.
    package struct MetricsEndpoint: Sendable, Hashable {
        /// An IPv4 or IPv6 address to listen on; the loopback address unless the metrics should leave the machine.
        public var host: String
        public var port: Int

        public init(host: String = "127.0.0.1", port: Int) {
            self.host = host
            self.port = port
        }
    }

    static let topLevelMembers: Set<String> = [
        "$schema", "common", "communication", "controllers", "sharedObjects", "devices", "logging", "metrics",
        "homeAssistant", "mqttTopics",
    ]

    /// Larger configuration files are refused rather than read; real ones are a few kilobytes.
    public static let maximumFileSize = 1 << 20
    /// Larger password files are refused rather than read.
    package static let maximumPasswordFileSize = 64 << 10

    /// Reads and validates a configuration file. Its `passwordFile` must be readable by its owner only unless
    /// `allowsOpenPasswordFile` (see `PasswordFilePermissions`).
    public static func load(file path: String, allowsOpenPasswordFile: Bool = false) throws(ConfigurationError)
        -> Configuration
    {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.contents(of: path, limit: maximumFileSize)
        } catch {
            throw ConfigurationError(file: path, path: nil, reason: error.reason)
        }
        return try parse(bytes, source: path, allowsOpenPasswordFile: allowsOpenPasswordFile)
    }

    /// Parses strictly, as people write files: a key given twice or a string that is not UTF-8 is an error.
    public static func parse(
        _ bytes: [UInt8], source: String, allowsOpenPasswordFile: Bool = false
    ) throws(ConfigurationError) -> Configuration {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes, mode: .strict)
        } catch {
            throw ConfigurationError(file: source, error)
        }
        do {
            return try Configuration(
                document: JSONCursor(document), source: source, allowsOpenPasswordFile: allowsOpenPasswordFile)
        } catch {
            throw ConfigurationError(file: source, path: error.path, reason: error.reason)
        }
    }

    public init(
        identity: Identity = Identity(), ioNodes: [IoNodeDefinition] = [],
        communication: CommunicationOptions = CommunicationOptions(),
        controllerOptions: [String: JSONObject] = [:], source: String = "configuration"
    ) {
        sharedObjects = []
        self.source = source
        self.identity = identity
        self.ioNodes = ioNodes
        self.communication = communication
        self.controllerOptions = controllerOptions.mapValues { JSONCursor(.object($0)) }
        devices = nil
        homeAssistant = nil
        mqttTopics = nil
        logLevel = .info
        metrics = nil
    }

    init(document: JSONCursor, source: String, allowsOpenPasswordFile: Bool) throws(JSONShapeError) {
        self.source = source
        try document.allowOnly(Self.topLevelMembers)

        let common = try document.optional("common")
        try common?.allowOnly(["agentIdentity", "ioContextNodes"])
        if let configured = try common?.optional("agentIdentity") {
            identity = try Identity(configured: try configured.object(), at: configured.path)
        } else {
            identity = Identity()
        }
        ioNodes = try common?.optional("ioContextNodes").map(Self.readIoNodes) ?? []

        guard let communication = try document.optional("communication") else {
            throw document.error("missing required member \"communication\"")
        }
        self.communication = try Self.readCommunication(communication, allowsOpenPasswordFile: allowsOpenPasswordFile)

        var controllerOptions: [String: JSONCursor] = [:]
        for (name, options) in try document.optional("controllers")?.members() ?? [] {
            _ = try options.object()
            controllerOptions[name] = options
        }
        self.controllerOptions = controllerOptions
        let sharedSection = try document.optional("sharedObjects")
        sharedObjects = try sharedSection.map(Self.readSharedObjects) ?? []
        // Every advertisement of a hosted object carries its whole data and the last change: one that does not fit
        // into the inbound limit would be dropped by every agent with the same limit.
        for definition in sharedObjects {
            let largest = definition.limits.maximumDataBytes + definition.limits.maximumValueBytes + 4096
            guard let sharedSection, largest > self.communication.maximumInboundPayload else { continue }
            throw JSONShapeError(
                path: sharedSection.path.appending(definition.name),
                reason:
                    "its advertisements reach \(largest) bytes (maxDataBytes, maxValueBytes and 4096 for the rest), more than "
                    + "communication.maxInboundPayload (\(self.communication.maximumInboundPayload)); lower maxDataBytes or raise the limit"
            )
        }
        devices = try document.optional("devices")
        homeAssistant = try document.optional("homeAssistant")
        mqttTopics = try document.optional("mqttTopics")

        let logging = try document.optional("logging")
        try logging?.allowOnly(["level"])
        if let level = try logging?.optional("level") {
            logLevel = LogLevelName(rawValue: try level.oneOf(LogLevelName.allCases.map(\.rawValue))) ?? .info
        } else {
            logLevel = .info
        }
        metrics = try document.optional("metrics").map(Self.readMetrics)
    }

    static func readSharedObjects(_ section: JSONCursor) throws(JSONShapeError) -> [SharedObjectDefinition] {
        var objectIds: Set<String> = []
        return try section.members().map { name, object throws(JSONShapeError) in
            guard CoatyName.isValid(name) else {
                throw object.error("a shared object name must be non-empty without '+', '#' or '/'")
            }
            try object.allowOnly(["objectId", "data", "expiry", "readOnly", "maxValueBytes", "maxDataBytes"])
            var definition = SharedObjectDefinition(name: name)
            if let objectId = try object.optional("objectId") {
                let id = try objectId.nonEmptyString()
                guard objectIds.insert(id).inserted else {
                    throw objectId.error("\(id) is already the objectId of another shared object")
                }
                definition.objectId = id
            }
            definition.data = try object.optional("data")?.object() ?? [:]
            definition.expiryMinutes = try object.optional("expiry")?.number(in: 0.001...5_256_000)
            definition.isReadOnly = try object.optional("readOnly")?.bool() ?? false
            if let maximum = try object.optional("maxValueBytes") {
                definition.limits.maximumValueBytes = try maximum.integer(in: 16...1_048_576)
            }
            if let maximum = try object.optional("maxDataBytes") {
                definition.limits.maximumDataBytes = try maximum.integer(in: 16...16_777_216)
            }
            let dataBytes = JSONValue.object(definition.data).serializedBytes().count
            guard dataBytes <= definition.limits.maximumDataBytes else {
                throw object.error(
                    "its data has \(dataBytes) bytes, more than maxDataBytes (\(definition.limits.maximumDataBytes))")
            }
            return definition
        }
    }

    static func readMetrics(_ section: JSONCursor) throws(JSONShapeError) -> MetricsEndpoint {
        try section.allowOnly(["port", "host"])
        let port = try section.required("port").integer(in: 1...65535)
        guard let hostCursor = try section.optional("host") else { return MetricsEndpoint(port: port) }
        let host = try hostCursor.string()
        guard isIPAddress(host) else {
            throw hostCursor.error("\"\(host)\" is not an IPv4 or IPv6 address (such as 127.0.0.1 or ::1)")
        }
        return MetricsEndpoint(host: host, port: port)
    }

    /// Whether `text` is a numeric IPv4 or IPv6 address, as `inet_pton` reads them.
    static func isIPAddress(_ text: String) -> Bool {
        var buffer = in6_addr()
        return inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1
    }

    static func readIoNodes(_ nodes: JSONCursor) throws(JSONShapeError) -> [IoNodeDefinition] {
        var definitions: [IoNodeDefinition] = []
        var pointIds: [String: JSONPath] = [:]
        for (contextName, node) in try nodes.members() {
            guard CoatyName.isValid(contextName) else {
                throw node.error("IO context name must be non-empty without '+', '#' or '/'")
            }
            try node.allowOnly(["ioSources", "ioActors", "characteristics"])
            let sources = try (node.optional("ioSources")?.elements() ?? []).map { point throws(JSONShapeError) in
                try IoSource(readIoPoint(point, coreType: .ioSource, seen: &pointIds))
            }
            let actors = try (node.optional("ioActors")?.elements() ?? []).map { point throws(JSONShapeError) in
                try IoActor(readIoPoint(point, coreType: .ioActor, seen: &pointIds))
            }
            let characteristics = try node.optional("characteristics")?.object()
            definitions.append(
                IoNodeDefinition(
                    contextName: contextName, ioSources: sources, ioActors: actors, characteristics: characteristics))
        }
        return definitions
    }

    /// An IO point as written in the configuration; `coreType` and `objectType` may be left out.
    private static func readIoPoint(
        _ point: JSONCursor, coreType: CoreType, seen: inout [String: JSONPath]
    ) throws(JSONShapeError) -> CoatyObject {
        var json = try point.object()
        if json["coreType"] == nil { json["coreType"] = .string(coreType.rawValue) }
        if json["objectType"] == nil { json["objectType"] = .string(coreType.objectType) }
        let object = try CoatyObject(validating: .object(json), at: point.path)
        guard object.coreType == coreType else {
            throw JSONShapeError(
                path: point.path.appending("coreType"), reason: "must be \"\(coreType.rawValue)\" here")
        }
        if let first = seen[object.objectId] {
            throw JSONShapeError(
                path: point.path.appending("objectId"), reason: "\(object.objectId) is already used at \(first)")
        }
        seen[object.objectId] = point.path
        return object
    }

    static func readCommunication(
        _ section: JSONCursor, allowsOpenPasswordFile: Bool
    ) throws(JSONShapeError) -> CommunicationOptions {
        try section.allowOnly([
            "brokerUrl", "namespace", "shouldEnableCrossNamespacing", "username", "password", "passwordFile", "tls",
            "keepAlive", "reconnect", "maxInboundPayload", "offlineQueue", "zeroLoss",
        ])
        let urlCursor = try section.required("brokerUrl")
        let urlText = try urlCursor.string()
        let address: BrokerAddress
        do {
            address = try BrokerAddress(parsing: urlText)
        } catch {
            throw urlCursor.error(error.reason)
        }
        var options = CommunicationOptions()
        var usesTLS = false
        switch address {
        case .url(let url):
            (options.host, options.port, usesTLS) = (url.host, url.port, url.usesTLS)
        case .mdns(let serviceName):
            options.mdnsServiceName = serviceName
        }
        if let namespace = try section.optional("namespace") {
            let name = try namespace.string()
            guard CoatyName.isValid(name) else {
                throw namespace.error("namespace must be non-empty without '+', '#' or '/'")
            }
            options.namespace = name
        }
        options.shouldEnableCrossNamespacing = try section.optional("shouldEnableCrossNamespacing")?.bool() ?? false
        options.username = try section.optional("username")?.string()
        let password = try section.optional("password")
        let passwordFile = try section.optional("passwordFile")
        if password != nil && passwordFile != nil {
            throw section.error("give either \"password\" or \"passwordFile\", not both")
        }
        options.password = try password?.string()
        if let passwordFile {
            let path = try passwordFile.nonEmptyString()
            do {
                options.password = try PasswordFile.password(in: path, allowingOpenFile: allowsOpenPasswordFile)
            } catch {
                throw passwordFile.error(error.description)
            }
        }
        if let tls = try section.optional("tls") {
            try tls.allowOnly(["caFile", "certFile", "keyFile", "allowsHostnameMismatch"])
            let certFile = try tls.optional("certFile").map(readTLSFile)
            let keyFile = try tls.optional("keyFile").map(readTLSFile)
            guard (certFile == nil) == (keyFile == nil) else {
                throw tls.error("\"certFile\" and \"keyFile\" go together")
            }
            options.tls = MQTTTLSOptions(
                caFile: try readTLSFile(tls.required("caFile")), certFile: certFile, keyFile: keyFile,
                allowsHostnameMismatch: try tls.optional("allowsHostnameMismatch")?.bool() ?? false)
        } else if usesTLS {
            throw section.error("an mqtts:// broker needs \"tls\" with at least \"caFile\"")
        }
        if let keepAlive = try section.optional("keepAlive") {
            options.keepAlive = .seconds(try keepAlive.integer(in: 5...65535))
        }
        if let maximum = try section.optional("maxInboundPayload") {
            // Bytes; from a size that still holds an identity or IO node advertisement to MQTT's largest payload.
            options.maximumInboundPayload = try maximum.integer(in: 1024...MQTTConnectOptions.maximumPayload)
        }
        options.reconnect = .fastResume
        if let queue = try section.optional("offlineQueue") {
            options.offlineQueue = try readOfflineQueue(queue)
        }
        if let zeroLoss = try section.optional("zeroLoss") {
            options.zeroLoss = try readZeroLoss(zeroLoss)
        }
        if let reconnect = try section.optional("reconnect") {
            try reconnect.allowOnly(["minDelay", "maxDelay", "maxAttempts"])
            let defaults = MQTTReconnectPolicy.fastResume
            var minimum = defaults.minimumDelay
            if let seconds = try reconnect.optional("minDelay")?.number(in: 0.1...3600) {
                minimum = .milliseconds(Int64(seconds * 1000))
            }
            var maximum = max(defaults.maximumDelay, minimum)
            if let seconds = try reconnect.optional("maxDelay")?.number(in: 0.1...86400) {
                maximum = .milliseconds(Int64(seconds * 1000))
            }
            guard maximum >= minimum else { throw reconnect.error("\"maxDelay\" must not be less than \"minDelay\"") }
            options.reconnect = MQTTReconnectPolicy(
                minimumDelay: minimum, maximumDelay: maximum,
                maximumAttempts: try reconnect.optional("maxAttempts")?.integer(in: 1...Int.max))
        }
        return options
    }

    /// The path of a TLS file. libmosquitto and OpenSSL open these files themselves, and would block on a FIFO, so
    /// what is there must be a regular file; a missing or unreadable one is reported by the connection.
    private static func readTLSFile(_ cursor: JSONCursor) throws(JSONShapeError) -> String {
        let path = try cursor.nonEmptyString()
        do {
            try BoundedFile.checkRegular(path)
        } catch {
            if case .notRegular = error.code { throw cursor.error(error.description) }
        }
        return path
    }
}

extension Configuration {
    /// `{"maxMessages": 10000, "maxBytes": 4194304, "drop": "oldest"}`, each optional.
    /// `true`, `false`, or the buffer's bounds: `{"maxValues": 10000, "maxBytes": 1048576, "drop": "oldest"}`.
    static func readZeroLoss(_ section: JSONCursor) throws(JSONShapeError) -> ZeroLossOptions? {
        if case .bool(let isOn) = section.value { return isOn ? ZeroLossOptions() : nil }
        try section.allowOnly(["maxValues", "maxBytes", "drop"])
        var options = ZeroLossOptions()
        if let values = try section.optional("maxValues") {
            options.maximumValues = try values.integer(in: 1...10_000_000)
        }
        if let bytes = try section.optional("maxBytes") {
            options.maximumBytes = try bytes.integer(in: 1024...(1 << 34))
        }
        if let drop = try section.optional("drop") {
            let text = try drop.string()
            guard let policy = OfflineQueueLimits.DropPolicy(rawValue: text) else {
                throw drop.error("\"\(text)\" is neither \"oldest\" nor \"newest\"")
            }
            options.dropPolicy = policy
        }
        return options
    }

    static func readOfflineQueue(_ section: JSONCursor) throws(JSONShapeError) -> OfflineQueueLimits {
        try section.allowOnly(["maxMessages", "maxBytes", "drop"])
        var limits = OfflineQueueLimits()
        if let messages = try section.optional("maxMessages") {
            limits.maximumMessages = try messages.integer(in: 1...10_000_000)
        }
        if let bytes = try section.optional("maxBytes") {
            // At least one publication of the largest size an agent takes in.
            limits.maximumBytes = try bytes.integer(in: 1024...(1 << 34))
        }
        if let drop = try section.optional("drop") {
            let text = try drop.string()
            guard let policy = OfflineQueueLimits.DropPolicy(rawValue: text) else {
                throw drop.error("\"\(text)\" is neither \"oldest\" nor \"newest\"")
            }
            limits.dropPolicy = policy
        }
        return limits
    }
}
