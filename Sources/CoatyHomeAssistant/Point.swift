import CoatyCommunication
import CoatyJSON
import EdgeHardware

/// One thing of the agent that the bridge makes visible: a sensor's quantity, a GPIO input, a GPIO output, or a
/// shared-object key as a setpoint. Its `id` is its topic level (`<prefix>/<agent>/<id>`) and part of its Home
/// Assistant ids, derived from the name of its IoSource or IoActor (`"SoC temperature"` -> `soc_temperature`).
package struct Point: Sendable, Hashable {
    public var id: String
    /// The objectId of the IoSource or IoActor whose values it carries; nil for a setpoint.
    public var ioPointId: String?
    public var name: String
    public var kind: Kind
    /// Announced to Home Assistant (`"include": false` keeps it on the plain topics only).
    public var included = true
    public var icon: String?
    /// Home Assistant's device class where the configuration chooses it (inputs, outputs, numbers).
    public var deviceClass: String?

    /// What a point is; a new kind of device point (a PWM output, a counter) is a new case here and in
    /// `Entity.component(of:)`.
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        case sensor(Quantity)
        /// A GPIO input with the values it publishes for active and inactive.
        case input(InputMapping)
        /// A GPIO output; `switching` outputs follow commands, hysteresis ones follow numbers (a command `ON` is
        /// refused as a routed one is).
        case output(OutputControl)
        case setpoint(Setpoint)

        public var description: String {
            switch self {
            case .sensor(let quantity): "a \(quantity.rawValue) sensor"
            case .input: "a GPIO input"
            case .output: "a GPIO output"
            case .setpoint: "a setpoint"
            }
        }
    }

    /// The points of the devices, in configuration order: sensors' quantities, inputs, outputs.
    static func devicePoints(of devices: DeviceConfiguration?, ioNodes: [IoNodeDefinition]) -> [Point] {
        guard let devices else { return [] }
        var names: [String: String] = [:]
        for node in ioNodes {
            for source in node.ioSources { names[source.objectId] = source.name }
            for actor in node.ioActors { names[actor.objectId] = actor.name }
        }
        func point(_ ioPointId: String, _ kind: Kind) -> Point {
            let name = names[ioPointId] ?? ioPointId
            return Point(id: slug(name), ioPointId: ioPointId, name: name, kind: kind)
        }
        return devices.sensors.flatMap { $0.sources.map { point($0.ioSourceId, .sensor($0.quantity)) } }
            + devices.inputs.map { point($0.ioSourceId, .input($0.mapping)) }
            + devices.outputs.map { point($0.ioActorId, .output($0.control)) }
    }

    /// Lowercase ASCII letters and digits, other characters as single `_`, none at the ends.
    public static func slug(_ name: String) -> String {
        var slug = ""
        for scalar in name.lowercased().unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                slug.unicodeScalars.append(scalar)
            } else if !slug.isEmpty, !slug.hasSuffix("_") {
                slug += "_"
            }
        }
        while slug.hasSuffix("_") { slug.removeLast() }
        return slug
    }

    /// The state text of a value on the plain topics: numbers as JSON text, on/off points as `ON`/`OFF`; nil for a
    /// value the point cannot show (an input value that is neither of its mapping's).
    public func plainState(of value: JSONValue) -> String? {
        switch kind {
        case .sensor, .setpoint:
            guard case .number = value else { return nil }
            return String(decoding: value.serializedBytes(), as: UTF8.self)
        case .input(let mapping):
            if value == mapping.active { return "ON" }
            if value == mapping.inactive { return "OFF" }
            return nil
        case .output:
            guard case .bool(let on) = value else { return nil }
            return on ? "ON" : "OFF"
        }
    }

    /// The state payload in the configured format.
    public func statePayload(of value: JSONValue, format: BridgeSettings.PayloadFormat) -> [UInt8]? {
        guard let plain = plainState(of: value) else { return nil }
        switch format {
        case .plain:
            return Array(plain.utf8)
        case .json:
            var object: JSONObject = [:]
            switch kind {
            case .sensor, .setpoint: object["value"] = value
            case .output: object["value"] = .bool(plain == "ON")
            case .input:
                object["value"] = .bool(plain == "ON")
                object["raw"] = value
            }
            return JSONValue.object(object).serializedBytes()
        }
    }
}

/// A shared object's key shown as a Home Assistant `number`: changing it sets the key for every agent.
package struct Setpoint: Sendable, Hashable {
    public var object: String
    public var key: String
    public var minimum: Double = 0
    public var maximum: Double = 100
    public var step: Double = 1
    public var unit: String?
    public var mode = "auto"
}
