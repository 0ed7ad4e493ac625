import CoatyJSON
import EdgeHardware

/// Home Assistant's MQTT discovery: one retained config message per entity on
/// `<discoveryPrefix>/<component>/<agent>/<point>/config`, all entities of an agent under one device.
package enum Discovery {
    /// The version the device block reports as `sw_version`.
    public static let softwareVersion = "0.1.0"

    /// The Home Assistant entity of a point and the attributes that follow from its kind alone.
    public struct Entity: Sendable, Hashable {
        /// `sensor`, `binary_sensor`, `switch`, `number`.
        public var component: String
        public var attributes: JSONObject
    }

    /// The mapping from a point's kind to its entity. A new kind of point (a PWM output as a `light` or `number`,
    /// a counter as a `sensor` with `state_class: total_increasing`) is one more case here.
    public static func entity(of kind: Point.Kind) -> Entity {
        switch kind {
        case .sensor(let quantity):
            let (deviceClass, unit): (String, String) =
                switch quantity {
                case .temperature: ("temperature", "°C")
                case .humidity: ("humidity", "%")
                case .pressure: ("pressure", "hPa")
                }
            return Entity(
                component: "sensor",
                attributes: [
                    "device_class": .string(deviceClass), "state_class": "measurement",
                    "unit_of_measurement": .string(unit),
                ])
        case .input:
            return Entity(component: "binary_sensor", attributes: ["payload_on": "ON", "payload_off": "OFF"])
        case .output:
            return Entity(
                component: "switch",
                attributes: [
                    "payload_on": "ON", "payload_off": "OFF", "state_on": "ON", "state_off": "OFF", "optimistic": false,
                ])
        case .setpoint(let setpoint):
            var attributes: JSONObject = [
                "min": .number(setpoint.minimum), "max": .number(setpoint.maximum), "step": .number(setpoint.step),
                "mode": .string(setpoint.mode),
            ]
            if let unit = setpoint.unit { attributes["unit_of_measurement"] = .string(unit) }
            return Entity(component: "number", attributes: attributes)
        }
    }

    /// Whether Home Assistant sends commands for this kind of point.
    public static func takesCommands(_ kind: Point.Kind) -> Bool {
        switch kind {
        case .output, .setpoint: true
        case .sensor, .input: false
        }
    }

    /// A discovery message: its topic and its retained payload.
    public struct Message: Sendable, Hashable {
        public var topic: String
        public var config: JSONObject
    }

    /// The topic of a point's config message.
    static func configTopic(component: String, point: String, settings: BridgeSettings, discoveryPrefix: String)
        -> String
    {
        "\(discoveryPrefix)/\(component)/\(settings.agentId)/\(point)/config"
    }

    /// The config messages of every included point, in the order of the points.
    public static func messages(for settings: BridgeSettings) -> [Message] {
        guard let homeAssistant = settings.homeAssistant else { return [] }
        let device: JSONObject = [
            "identifiers": .array([.string("coaty-edge_\(settings.agentId)")]),
            "name": .string(settings.agentName),
            "manufacturer": "coaty-edge",
            "model": "coaty-edge agent",
            "sw_version": .string(softwareVersion),
        ]
        return settings.points.filter(\.included).map { point in
            let entity = entity(of: point.kind)
            var config = entity.attributes
            config["name"] = .string(point.name)
            config["unique_id"] = .string("coaty-edge_\(settings.agentId)_\(point.id)")
            config["object_id"] = .string("\(settings.agentId)_\(point.id)")
            config["state_topic"] = .string(settings.stateTopic(of: point))
            if settings.payload == .json {
                config["value_template"] = .string(valueTemplate(for: point.kind))
            }
            if takesCommands(point.kind) {
                config["command_topic"] = .string(settings.commandTopic(of: point))
            }
            config["availability_topic"] = .string(settings.statusTopic)
            config["payload_available"] = "online"
            config["payload_not_available"] = "offline"
            if let deviceClass = point.deviceClass { config["device_class"] = .string(deviceClass) }
            if let icon = point.icon { config["icon"] = .string(icon) }
            config["device"] = .object(device)
            return Message(
                topic: configTopic(
                    component: entity.component, point: point.id, settings: settings,
                    discoveryPrefix: homeAssistant.discoveryPrefix),
                config: config)
        }
    }

    /// Reads the JSON payload back into what the entity expects.
    private static func valueTemplate(for kind: Point.Kind) -> String {
        switch kind {
        case .sensor, .setpoint: "{{ value_json.value }}"
        case .input, .output: "{{ 'ON' if value_json.value else 'OFF' }}"
        }
    }
}
