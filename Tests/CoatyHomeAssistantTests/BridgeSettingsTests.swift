import CoatyHomeAssistant
import CoatyJSON
import CoatyRuntime
import EdgeHardware
import Testing

/// The `mqttTopics` and `homeAssistant` sections as the agent reads them, and the discovery configs and state
/// payloads that follow, without a broker.
struct BridgeSettingsTests {
    static func settings(_ sections: String, sources: String = "") throws -> BridgeSettings? {
        let text = """
            {
              "common": {"agentIdentity": {"name": "Kitchen Pi #2"}, "ioContextNodes": {"Kitchen": {
                "ioSources": [
                  {"objectId": "s1", "name": "Oven temperature", "valueType": "coaty-edge.Temperature[Celsius]"},
                  {"objectId": "s2", "name": "Window", "valueType": "coaty-edge.Switch"}\(sources)],
                "ioActors": [{"objectId": "a1", "name": "Hood fan", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:1883"},
              "devices": {
                "sensors": [{"driver": "tmp102", "bus": "/dev/i2c-1", "address": "0x48", "sources": {"temperature": {"ioSource": "s1"}}}],
                "inputs": [{"driver": "gpio-input", "ioSource": "s2", "chip": "gpiochip0", "line": 4, "values": {"active": "open", "inactive": "closed"}}],
                "outputs": [{"driver": "gpio-output", "ioActor": "a1", "chip": "gpiochip0", "line": 5, "hysteresis": {"onAbove": 60, "offBelow": 50}}]
              }\(sections)
            }
            """
        let base = try Configuration.parse(Array(text.utf8), source: "kitchen.json")
        let devices = try DeviceConfiguration(parsing: try #require(base.devices), file: "kitchen.json")
        return try BridgeSettings.read(base, devices: devices)
    }

    @Test func withoutEitherSectionThereIsNoBridge() throws {
        #expect(try Self.settings("") == nil)
    }

    @Test func pointsAreNamedFromTheirIoNodes() throws {
        let settings = try #require(try Self.settings(#", "homeAssistant": {}"#))
        #expect(settings.agentId == "kitchen_pi_2")
        #expect(settings.points.map(\.id) == ["oven_temperature", "window", "hood_fan"])
        #expect(settings.stateTopic(of: settings.points[0]) == "coaty-edge/kitchen_pi_2/oven_temperature")
        #expect(settings.statusTopic == "coaty-edge/kitchen_pi_2/status")
        #expect(Point.slug("  Air temperature (BME280) ") == "air_temperature_bme280")
        #expect(Point.slug("Ölpumpe") == "lpumpe")
    }

    @Test func discoveryConfigsFollowTheKindOfPoint() throws {
        let settings = try #require(
            try Self.settings(
                #"""
                , "mqttTopics": {"prefix": "home/edge", "payload": "json"},
                  "homeAssistant": {"discoveryPrefix": "ha", "points": {"window": {"deviceClass": "window", "name": "Kitchen window"}}}
                """#))
        let messages = Discovery.messages(for: settings)
        #expect(
            messages.map(\.topic) == [
                "ha/sensor/kitchen_pi_2/oven_temperature/config", "ha/binary_sensor/kitchen_pi_2/window/config",
                "ha/switch/kitchen_pi_2/hood_fan/config",
            ])
        let sensor = messages[0].config
        #expect(sensor["device_class"] == "temperature")
        #expect(sensor["unit_of_measurement"] == "°C")
        #expect(sensor["value_template"] == "{{ value_json.value }}")
        #expect(sensor["state_topic"] == "home/edge/kitchen_pi_2/oven_temperature")
        #expect(sensor["command_topic"] == nil)
        #expect(messages[1].config["device_class"] == "window")
        #expect(messages[1].config["name"] == "Kitchen window")
        #expect(messages[2].config["command_topic"] == "home/edge/kitchen_pi_2/hood_fan/set")
        #expect(Set(messages.map { $0.config["device"] }).count == 1)
    }

    @Test func statePayloadsInBothFormats() throws {
        let settings = try #require(try Self.settings(#", "mqttTopics": {}"#))
        let (sensor, window, fan) = (settings.points[0], settings.points[1], settings.points[2])
        #expect(sensor.statePayload(of: 21.5, format: .plain) == Array("21.5".utf8))
        #expect(window.statePayload(of: "open", format: .plain) == Array("ON".utf8))
        #expect(window.statePayload(of: "closed", format: .plain) == Array("OFF".utf8))
        #expect(window.statePayload(of: "ajar", format: .plain) == nil)
        #expect(fan.statePayload(of: true, format: .plain) == Array("ON".utf8))
        #expect(window.statePayload(of: "open", format: .json) == Array(#"{"value":true,"raw":"open"}"#.utf8))
        #expect(sensor.statePayload(of: 21.5, format: .json) == Array(#"{"value":21.5}"#.utf8))
        #expect(Discovery.messages(for: settings).isEmpty, "no discovery without a homeAssistant section")
    }

    @Test func errorsNameTheFileTheJSONPathAndTheReason() throws {
        func error(_ sections: String, sources: String = "") -> String? {
            do {
                _ = try Self.settings(sections, sources: sources)
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(
            error(#", "homeAssistant": {"points": {"oven_temperature": {"deviceClass": "humidity"}}}"#)
                == "kitchen.json: $.homeAssistant.points.oven_temperature.deviceClass: the device class of a temperature sensor follows from what it measures"
        )
        #expect(
            error(#", "homeAssistant": {"points": {"window": {"deviceClass": "portal"}}}"#)?
                .hasPrefix("kitchen.json: $.homeAssistant.points.window.deviceClass: ") == true)
        #expect(
            error(#", "homeAssistant": {"points": {"oven": {}}}"#)
                == #"kitchen.json: $.homeAssistant.points.oven: no point of this agent is called "oven" (its points: oven_temperature, window, hood_fan)"#
        )
        #expect(
            error(#", "mqttTopics": {"prefix": "a/+/b"}"#)?.hasPrefix("kitchen.json: $.mqttTopics.prefix: ") == true)
        #expect(
            error(#", "mqttTopics": {"password": "x"}"#)
                == #"kitchen.json: $.mqttTopics: a password needs a "username""#)
        #expect(
            error(#", "homeAssistant": {"numbers": {"fan_on": {"shared": "setpoints"}}}"#)
                == #"kitchen.json: $.homeAssistant.numbers.fan_on.shared: "setpoints" is not "<shared object>.<key>""#)
        #expect(
            error(#", "homeAssistant": {"numbers": {"Fan": {"shared": "s.k"}}}"#)?
                .hasPrefix("kitchen.json: $.homeAssistant.numbers.Fan: ") == true)
        #expect(
            error(#", "homeAssistant": {"numbers": {"fan": {"shared": "s.k", "min": 5, "max": 1}}}"#)
                == "kitchen.json: $.homeAssistant.numbers.fan: min (5.0) must be less than max (1.0)")
        // Two IO nodes whose names differ only in punctuation would share a topic.
        #expect(
            error(#", "homeAssistant": {"numbers": {"window": {"shared": "s.k"}}}"#)?.contains(
                #"both have the topic level "window""#) == true)
    }
}
