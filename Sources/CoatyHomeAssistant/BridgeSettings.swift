import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatyRuntime
import EdgeHardware

/// The validated `mqttTopics` and `homeAssistant` sections: what the bridge publishes on plain MQTT topics, and
/// whether it announces the points to Home Assistant by MQTT discovery. Either section turns the bridge on;
/// `homeAssistant` alone publishes the topics with their defaults, as Home Assistant reads the values from them.
///
/// ```jsonc
/// "mqttTopics": {"prefix": "coaty-edge", "payload": "plain", "retain": true,       // <prefix>/<agent>/<point>
///                "username": "greenhouse-pi-topics", "passwordFile": "topics.password"},
/// "homeAssistant": {"discoveryPrefix": "homeassistant",
///                   "points": {"door": {"deviceClass": "door", "icon": "mdi:door"}, "cpu_temperature": {"include": false}},
///                   "numbers": {"fan_on": {"shared": "setpoints.fanOn", "name": "Fan on above", "min": 30, "max": 90,
///                                          "step": 0.5, "unit": "°C"}}}
/// ```
package struct BridgeSettings: Sendable, Hashable {
    /// The first level of every topic: `<prefix>/<agent>/<point>`, `<prefix>/<agent>/<point>/set`, `<prefix>/<agent>/status`.
    public var prefix = "coaty-edge"
    public var payload = PayloadFormat.plain
    /// Retain state messages, so that a consumer that subscribes later gets the current values at once.
    public var retain = true
    /// A login of its own for the bridge's connection; the communication section's when nil.
    public var username: String?
    public var password: String?
    /// The agent's name as a topic level and as part of Home Assistant's ids.
    public var agentId: String
    /// The agent's name as people read it (Home Assistant's device name).
    public var agentName: String
    public var points: [Point]
    /// Nil without a `homeAssistant` section: plain topics only.
    public var homeAssistant: HomeAssistantSettings?

    public enum PayloadFormat: String, Sendable, Hashable, CaseIterable {
        /// `21.5`, `ON`: the value as text (switches and inputs as `ON`/`OFF`, as Home Assistant and mqtt-io use).
        case plain
        /// `{"value": 21.5}`, `{"value": true}` (with the raw JSON value of an input's mapping under `"raw"`).
        case json
    }

    public struct HomeAssistantSettings: Sendable, Hashable {
        public var discoveryPrefix = "homeassistant"
    }

    public var statusTopic: String { "\(prefix)/\(agentId)/status" }
    public func stateTopic(of point: Point) -> String { "\(prefix)/\(agentId)/\(point.id)" }
    public func commandTopic(of point: Point) -> String { "\(prefix)/\(agentId)/\(point.id)/set" }
    public var commandFilter: String { "\(prefix)/\(agentId)/+/set" }

    static let binarySensorDeviceClasses = [
        "battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door", "garage_door", "gas", "heat",
        "light",
        "lock", "moisture", "motion", "moving", "occupancy", "opening", "plug", "power", "presence", "problem",
        "running",
        "safety", "smoke", "sound", "tamper", "update", "vibration", "window",
    ]
    static let switchDeviceClasses = ["outlet", "switch"]
    static let numberDeviceClasses = ["temperature", "humidity", "pressure", "power", "voltage", "current", "duration"]

    /// Reads both sections; nil when neither is there. Errors name the file, the JSON path and the reason.
    /// `allowsOpenPasswordFile`: see `Configuration.load`.
    package static func read(
        _ configuration: Configuration, devices: DeviceConfiguration?, allowsOpenPasswordFile: Bool = false
    ) throws(ConfigurationError) -> BridgeSettings? {
        guard configuration.mqttTopics != nil || configuration.homeAssistant != nil else { return nil }
        do {
            return try BridgeSettings(configuration, devices: devices, allowsOpenPasswordFile: allowsOpenPasswordFile)
        } catch {
            throw ConfigurationError(file: configuration.source, error)
        }
    }

    init(_ configuration: Configuration, devices: DeviceConfiguration?, allowsOpenPasswordFile: Bool)
        throws(JSONShapeError)
    {
        agentName = configuration.identity.name
        agentId = Point.slug(configuration.identity.name)
        if let topics = configuration.mqttTopics {
            try topics.allowOnly(["prefix", "payload", "retain", "username", "password", "passwordFile"])
            if let prefix = try topics.optional("prefix") {
                self.prefix = try prefix.nonEmptyString()
                guard Self.isTopicPath(self.prefix) else {
                    throw prefix.error(
                        "\"\(self.prefix)\" is not a topic prefix: levels without '+', '#' and empty levels")
                }
            }
            if let payload = try topics.optional("payload") {
                self.payload =
                    PayloadFormat(rawValue: try payload.oneOf(PayloadFormat.allCases.map(\.rawValue))) ?? .plain
            }
            retain = try topics.optional("retain")?.bool() ?? true
            username = try topics.optional("username")?.nonEmptyString()
            let password = try topics.optional("password")
            let passwordFile = try topics.optional("passwordFile")
            if password != nil && passwordFile != nil {
                throw topics.error("give either \"password\" or \"passwordFile\", not both")
            }
            if (password != nil || passwordFile != nil) && username == nil {
                throw topics.error("a password needs a \"username\"")
            }
            self.password = try password?.string()
            if let passwordFile {
                // As the communication section's passwordFile: the path as given.
                let path = try passwordFile.nonEmptyString()
                do {
                    self.password = try PasswordFile.password(in: path, allowingOpenFile: allowsOpenPasswordFile)
                } catch {
                    throw passwordFile.error(error.description)
                }
            }
        }
        guard !agentId.isEmpty else {
            throw JSONShapeError(
                path: JSONPath.root.appending("common").appending("agentIdentity").appending("name"),
                reason: "the agent's name must have a letter or digit to name its MQTT topics")
        }
        var points = Point.devicePoints(of: devices, ioNodes: configuration.ioNodes)
        let section = configuration.homeAssistant
        if let section {
            try section.allowOnly(["discoveryPrefix", "points", "numbers"])
            var settings = HomeAssistantSettings()
            if let prefix = try section.optional("discoveryPrefix") {
                settings.discoveryPrefix = try prefix.nonEmptyString()
                guard Self.isTopicPath(settings.discoveryPrefix) else {
                    throw prefix.error(
                        "\"\(settings.discoveryPrefix)\" is not a topic prefix: levels without '+', '#' and empty levels"
                    )
                }
            }
            homeAssistant = settings
            for (key, number) in try section.optional("numbers")?.members() ?? [] {
                points.append(try Self.readNumber(id: key, number))
            }
        }
        try Self.checkUniqueIds(points, section: section)
        if let options = try section?.optional("points") {
            for (id, cursor) in try options.members() {
                guard let index = points.firstIndex(where: { $0.id == id }) else {
                    let known = points.map(\.id).joined(separator: ", ")
                    throw cursor.error(
                        "no point of this agent is called \"\(id)\" (its points: \(known.isEmpty ? "none" : known))")
                }
                try Self.readPointOptions(cursor, into: &points[index])
            }
        }
        self.points = points
    }

    private static func readNumber(id: String, _ cursor: JSONCursor) throws(JSONShapeError) -> Point {
        guard Point.slug(id) == id else {
            throw cursor.error(
                "a number's key is its topic level and id: lowercase letters, digits and '_' (\"\(Point.slug(id))\")")
        }
        try cursor.allowOnly(["shared", "name", "icon", "min", "max", "step", "unit", "deviceClass", "mode", "include"])
        let sharedCursor = try cursor.required("shared")
        let shared = try sharedCursor.nonEmptyString()
        let parts = shared.split(separator: ".", maxSplits: 1).map(String.init)
        guard parts.count == 2, CoatyName.isValid(parts[0]), !parts[1].isEmpty else {
            throw sharedCursor.error("\"\(shared)\" is not \"<shared object>.<key>\"")
        }
        var setpoint = Setpoint(object: parts[0], key: parts[1])
        if let minimum = try cursor.optional("min") { setpoint.minimum = try minimum.number() }
        if let maximum = try cursor.optional("max") { setpoint.maximum = try maximum.number() }
        guard setpoint.minimum < setpoint.maximum else {
            throw cursor.error("min (\(setpoint.minimum)) must be less than max (\(setpoint.maximum))")
        }
        if let step = try cursor.optional("step") { setpoint.step = try step.number(in: 0.001...1e9) }
        setpoint.unit = try cursor.optional("unit")?.string()
        if let mode = try cursor.optional("mode") { setpoint.mode = try mode.oneOf(["auto", "box", "slider"]) }
        var point = Point(
            id: id, ioPointId: nil, name: try cursor.optional("name")?.nonEmptyString() ?? shared,
            kind: .setpoint(setpoint))
        point.icon = try cursor.optional("icon")?.nonEmptyString()
        if let deviceClass = try cursor.optional("deviceClass") {
            point.deviceClass = try deviceClass.oneOf(numberDeviceClasses)
        }
        point.included = try cursor.optional("include")?.bool() ?? true
        return point
    }

    private static func readPointOptions(_ cursor: JSONCursor, into point: inout Point) throws(JSONShapeError) {
        try cursor.allowOnly(["include", "name", "icon", "deviceClass"])
        point.included = try cursor.optional("include")?.bool() ?? true
        if let name = try cursor.optional("name") { point.name = try name.nonEmptyString() }
        point.icon = try cursor.optional("icon")?.nonEmptyString()
        if let deviceClass = try cursor.optional("deviceClass") {
            switch point.kind {
            case .input: point.deviceClass = try deviceClass.oneOf(binarySensorDeviceClasses)
            case .output: point.deviceClass = try deviceClass.oneOf(switchDeviceClasses)
            case .sensor, .setpoint:
                throw deviceClass.error("the device class of \(point.kind.description) follows from what it measures")
            }
        }
    }

    private static func checkUniqueIds(_ points: [Point], section: JSONCursor?) throws(JSONShapeError) {
        var seen: [String: Point] = [:]
        for point in points {
            if let other = seen[point.id] {
                let path =
                    section?.path.appending("points") ?? JSONPath.root.appending("common").appending("ioContextNodes")
                throw JSONShapeError(
                    path: path,
                    reason:
                        "\"\(other.name)\" and \"\(point.name)\" both have the topic level \"\(point.id)\": rename one (an IO node by its name, a number by its key)"
                )
            }
            seen[point.id] = point
        }
    }

    static func isTopicPath(_ prefix: String) -> Bool {
        !prefix.contains("+") && !prefix.contains("#") && !prefix.hasPrefix("/") && !prefix.hasSuffix("/")
            && !prefix.contains("//")
            && !prefix.contains("\0")
    }
}
