import CoatyMQTT
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// The agent's plain MQTT topics and Home Assistant discovery, end to end: a `coaty-edge run` child with emulated
/// devices (a BME280, a door contact, a relay with a minimum on time, a vent with hysteresis) against a real mosquitto,
/// watched and commanded by a plain MQTT client as Home Assistant or Node-RED would.
@Suite(.serialized) struct HomeAssistantBridgeTests {
    static let agent = "greenhouse_pi"
    static let prefix = "coaty-edge/\(agent)"

    /// The test configuration; `extra` adds members to the `homeAssistant` section, `devicesExtra` to the inputs.
    static func configuration(broker: Int, withDoor: Bool = true) -> String {
        let door =
            withDoor
            ? #",{"driver": "gpio-input", "ioSource": "00000000-0000-4000-8000-0000000000d1", "chip": "gpiochip0", "line": 22}"#
            : ""
        return """
            {
              "common": {
                "agentIdentity": {"name": "Greenhouse Pi"},
                "ioContextNodes": {"Greenhouse": {
                  "ioSources": [
                    {"objectId": "00000000-0000-4000-8000-0000000000a1", "name": "Air temperature", "valueType": "coaty-edge.Temperature[Celsius]"},
                    {"objectId": "00000000-0000-4000-8000-0000000000a2", "name": "Air humidity", "valueType": "coaty-edge.Humidity[Percent]"},
                    {"objectId": "00000000-0000-4000-8000-0000000000a3", "name": "Air pressure", "valueType": "coaty-edge.Pressure[Hectopascal]"},
                    {"objectId": "00000000-0000-4000-8000-0000000000d1", "name": "Door", "valueType": "coaty-edge.Switch"}],
                  "ioActors": [
                    {"objectId": "00000000-0000-4000-8000-0000000000b1", "name": "Fan relay", "valueType": "coaty-edge.Switch"},
                    {"objectId": "00000000-0000-4000-8000-0000000000b2", "name": "Vent", "valueType": "coaty-edge.Temperature[Celsius]"}]}}
              },
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker)", "keepAlive": 5},
              "sharedObjects": {"setpoints": {"data": {"fanOn": 60}}},
              "devices": {
                "emulated": true,
                "sensors": [{"driver": "bme280", "bus": "/dev/i2c-1", "address": "0x76", "pollInterval": "500ms",
                             "sources": {"temperature": {"ioSource": "00000000-0000-4000-8000-0000000000a1", "filters": [{"round": 1}]},
                                         "humidity": {"ioSource": "00000000-0000-4000-8000-0000000000a2"},
                                         "pressure": {"ioSource": "00000000-0000-4000-8000-0000000000a3"}}}],
                "inputs": [\(door.dropFirst())],
                "outputs": [
                  {"driver": "gpio-output", "ioActor": "00000000-0000-4000-8000-0000000000b1", "chip": "gpiochip0", "line": 17,
                   "initial": "off", "safeState": "off", "minOnTime": "3s"},
                  {"driver": "gpio-output", "ioActor": "00000000-0000-4000-8000-0000000000b2", "chip": "gpiochip0", "line": 18,
                   "initial": "off", "safeState": "on", "hysteresis": {"onAbove": 30, "offBelow": 25}}]
              },
              "homeAssistant": {
                "points": \(withDoor ? #"{"door": {"deviceClass": "door", "icon": "mdi:door"}}"# : "{}"),
                "numbers": {"fan_on": {"shared": "setpoints.fanOn", "name": "Fan on above", "min": 30, "max": 90, "step": 0.5, "unit": "°C"}}
              }
            }
            """
    }

    static let entities = [
        "homeassistant/sensor/\(agent)/air_temperature/config", "homeassistant/sensor/\(agent)/air_humidity/config",
        "homeassistant/sensor/\(agent)/air_pressure/config", "homeassistant/binary_sensor/\(agent)/door/config",
        "homeassistant/switch/\(agent)/fan_relay/config", "homeassistant/switch/\(agent)/vent/config",
        "homeassistant/number/\(agent)/fan_on/config",
    ]

    @Test func discoveryRetainedStatesCommandsAvailabilityAndRemoval() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let file = try scratch.write(Self.configuration(broker: broker.port), to: "agent.json").path
        let metricsPort = try freeLoopbackPort()
        var agent = try await Executable.start(["run", "--config", file, "--metrics-port", "\(metricsPort)"])
        let watcher = try await BridgeTopics(broker: broker)

        // Discovery: one retained config per point, all under one device, with the right class, unit and topics.
        var configs: [String: [String: Any]] = [:]
        for topic in Self.entities {
            let config: [String: Any] = try #require(try await watcher.json(topic))
            configs[topic] = config
        }
        let temperature = try #require(configs[Self.entities[0]])
        #expect(temperature["device_class"] as? String == "temperature")
        #expect(temperature["state_class"] as? String == "measurement")
        #expect(temperature["unit_of_measurement"] as? String == "°C")
        #expect(temperature["state_topic"] as? String == "\(Self.prefix)/air_temperature")
        #expect(temperature["availability_topic"] as? String == "\(Self.prefix)/status")
        #expect(temperature["unique_id"] as? String == "coaty-edge_\(Self.agent)_air_temperature")
        #expect((configs[Self.entities[1]]?["unit_of_measurement"] as? String) == "%")
        #expect((configs[Self.entities[1]]?["device_class"] as? String) == "humidity")
        #expect((configs[Self.entities[2]]?["unit_of_measurement"] as? String) == "hPa")
        #expect((configs[Self.entities[3]]?["device_class"] as? String) == "door")
        #expect((configs[Self.entities[3]]?["icon"] as? String) == "mdi:door")
        #expect((configs[Self.entities[4]]?["command_topic"] as? String) == "\(Self.prefix)/fan_relay/set")
        #expect((configs[Self.entities[6]]?["max"] as? Double) == 90)
        let devices = Set(configs.values.compactMap { ($0["device"] as? [String: Any]).flatMap(canonicalJSON) })
        #expect(devices.count == 1, "one device for every entity: \(devices)")
        #expect(devices.first?.contains(#""name":"Greenhouse Pi""#) == true)

        // States and availability, retained: a consumer that comes later sees every one at once.
        #expect(try await watcher.text("\(Self.prefix)/status") == "online")
        _ = try await watcher.text("\(Self.prefix)/air_temperature") {
            Double($0).map { (10...40).contains($0) } == true
        }
        _ = try await watcher.text("\(Self.prefix)/air_pressure") {
            Double($0).map { (900...1100).contains($0) } == true
        }
        #expect(try await watcher.text("\(Self.prefix)/fan_relay") == "OFF")
        #expect(try await watcher.text("\(Self.prefix)/fan_on") == "60")
        let later = try await BridgeTopics(broker: broker)
        for topic in Self.entities { _ = try await later.json(topic) }
        for point in [
            "air_temperature", "air_humidity", "air_pressure", "door", "fan_relay", "vent", "fan_on", "status",
        ] {
            _ = try await later.text("\(Self.prefix)/\(point)")
        }

        // Home Assistant's birth message (it restarted): every config again.
        let configWatcher = try await TestClient.connected(
            to: broker, subscribingTo: ["homeassistant/+/\(Self.agent)/+/config"])
        let retained = try await configWatcher.nextMessages(Self.entities.count)
        #expect(Set(retained.map(\.topic)) == Set(Self.entities))
        try watcher.client.publish("homeassistant/status", "online")
        let resent = try await configWatcher.nextMessages(Self.entities.count)
        #expect(Set(resent.map(\.topic)) == Set(Self.entities))

        // A command switches the emulated line (seen from the chip's side) and the state echoes the line; an early
        // OFF is held back by minOnTime and applied afterwards, as a routed value would be.
        let levels = "/tmp/coaty-edge-emulated-\(agent.processIdentifier)/gpio-output-levels"
        try watcher.client.publish("\(Self.prefix)/fan_relay/set", "ON")
        try await waitUntil("line 17 high") { Self.level(in: levels, line: 17) == "1" }
        #expect(try await watcher.text("\(Self.prefix)/fan_relay") { $0 == "ON" } == "ON")
        try watcher.client.publish("\(Self.prefix)/fan_relay/set", "OFF")
        _ = try await agent.line(
            containing: "held back a switch off by \"OFF\" from a command on \(Self.prefix)/fan_relay/set",
            onErrors: true)
        #expect(Self.level(in: levels, line: 17) == "1")
        try await waitUntil("line 17 low after minOnTime") { Self.level(in: levels, line: 17) == "0" }
        #expect(try await watcher.text("\(Self.prefix)/fan_relay") { $0 == "OFF" } == "OFF")

        // A hysteresis output takes numbers, not ON: as a routed value.
        try watcher.client.publish("\(Self.prefix)/vent/set", "ON")
        _ = try await agent.line(containing: "(Vent) ignored \"ON\": not a value it understands", onErrors: true)
        try watcher.client.publish("\(Self.prefix)/vent/set", "31.5")
        try await waitUntil("line 18 high") { Self.level(in: levels, line: 18) == "1" }

        // A setpoint from its number entity changes the shared object.
        try watcher.client.publish("\(Self.prefix)/fan_on/set", "62.5")
        #expect(try await watcher.text("\(Self.prefix)/fan_on") { $0 == "62.5" } == "62.5")

        // Bad commands are counted and logged, never a crash.
        try watcher.client.publish("\(Self.prefix)/nothing/set", "ON")
        _ = try await agent.line(containing: "rejected a command for \"nothing\"", onErrors: true)
        try watcher.client.publish("\(Self.prefix)/fan_relay/set", [0xff, 0xfe])
        _ = try await agent.line(containing: "rejected a command for fan_relay of 2 bytes", onErrors: true)
        try watcher.client.publish("\(Self.prefix)/fan_on/set", "500")
        _ = try await agent.line(containing: "rejected \"500\" for fan_on", onErrors: true)
        let samples = try await scrape(port: metricsPort)
        #expect(samples[#"coaty_edge_mqtt_commands_rejected_total{reason="unknown point"}"#] == 1)
        #expect(samples[#"coaty_edge_mqtt_commands_rejected_total{reason="malformed"}"#] == 2)

        // A frozen agent (as after a power loss, its socket stays open): the broker publishes the will after 1.5
        // keep-alive periods (7.5 s); thawed, the agent reconnects and is online again.
        kill(agent.processIdentifier, SIGSTOP)
        let frozen = ContinuousClock.now
        #expect(try await watcher.text("\(Self.prefix)/status", within: .seconds(30)) { $0 == "offline" } == "offline")
        let detection = frozen.duration(to: .now)
        // 1.5 keep-alive periods after the last packet: the bridge publishes a reading every 0.5 s, so about 7.5 s
        // after the freeze; not at once (the socket is open), and with room for a loaded machine.
        #expect(detection >= .seconds(2) && detection < .seconds(15), "offline after \(detection)")
        kill(agent.processIdentifier, SIGCONT)
        #expect(try await watcher.text("\(Self.prefix)/status") { $0 == "online" } == "online")

        // SIGKILL: the kernel closes the socket and the broker publishes the will at once; a restart is online again.
        _ = try await agent.stop(with: SIGKILL)
        #expect(try await watcher.text("\(Self.prefix)/status", within: .seconds(30)) { $0 == "offline" } == "offline")
        agent = try await Executable.start(["run", "--config", file])
        #expect(try await watcher.text("\(Self.prefix)/status") { $0 == "online" } == "online")

        // A clean stop: the outputs' safe states, then offline, at once.
        try watcher.client.publish("\(Self.prefix)/fan_relay/set", "ON")
        #expect(try await watcher.text("\(Self.prefix)/fan_relay") { $0 == "ON" } == "ON")
        let stopping = ContinuousClock.now
        let stopped = try await agent.stop(with: SIGTERM)
        #expect(stopped.status == 0)
        #expect(try await watcher.text("\(Self.prefix)/status") { $0 == "offline" } == "offline")
        #expect(stopping.duration(to: .now) < .seconds(5))
        #expect(try await watcher.text("\(Self.prefix)/vent") { $0 == "ON" } == "ON", "the vent's safe state is on")
        #expect(
            try await watcher.text("\(Self.prefix)/fan_relay") { $0 == "OFF" } == "OFF", "the relay's safe state is off"
        )

        // A point removed from the configuration: its retained config (and state) are cleared.
        try scratch.write(Self.configuration(broker: broker.port, withDoor: false), to: "agent.json")
        agent = try await Executable.start(["run", "--config", file])
        _ = try await watcher.bytes("homeassistant/binary_sensor/\(Self.agent)/door/config") { $0.isEmpty }
        _ = try await watcher.bytes("\(Self.prefix)/door") { $0.isEmpty }
        let fresh = try await BridgeTopics(broker: broker)
        _ = try await fresh.text("\(Self.prefix)/status") { $0 == "online" }
        #expect(await fresh.latest["homeassistant/binary_sensor/\(Self.agent)/door/config"] == nil)
        _ = try await agent.stop()
    }

    @Test func configCheckAndPreviewShowTheSection() async throws {
        let scratch = try ScratchDirectory("coaty-cli")
        let file = try scratch.write(Self.configuration(broker: 1883), to: "agent.json").path
        let check = try await Executable.run(["config", "check", file])
        #expect(check.status == 0, "\(check.errors)")
        #expect(
            check.outputLines.contains(
                "  mqtt       coaty-edge/\(Self.agent)/<point>: 7 points (plain, retained), status coaty-edge/\(Self.agent)/status"
            ))
        #expect(check.outputLines.contains("  home asst. discovery under homeassistant/: 7 entities"))

        let preview = try await Executable.run(["ha", "preview", "--config", file])
        #expect(preview.status == 0, "\(preview.errors)")
        for topic in Self.entities { #expect(preview.outputLines.contains(topic)) }
        #expect(preview.output.contains(#""device_class": "temperature""#))
        #expect(
            preview.output.contains("# Fan relay: \(Self.prefix)/fan_relay, commands on \(Self.prefix)/fan_relay/set"))

        // The example of deploy/, with its password file and rules found from the scratch directory.
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let password = try scratch.write("secret\n", to: "topics.password").path
        #expect(chmod(password, 0o600) == 0)
        let example = try String(
            contentsOf: repository.appendingPathComponent("deploy/example-home-assistant.json"), encoding: .utf8
        )
        .replacingOccurrences(of: "/etc/coaty-edge/topics.password", with: password)
        .replacingOccurrences(of: #""rules": "rules""#, with: #""rules": "\#(repository.path)/rules/greenhouse""#)
        let examplePreview = try await Executable.run([
            "ha", "preview", "--config", try scratch.write(example, to: "example.json").path,
        ])
        #expect(examplePreview.status == 0, "\(examplePreview.errors)")
        #expect(
            examplePreview.outputLines.contains(
                "# SoC temperature: coaty-edge/greenhouse_pi/soc_temperature (not in Home Assistant)"))
        #expect(examplePreview.outputLines.contains("homeassistant/number/greenhouse_pi/fan_off/config"))
        #expect(examplePreview.outputLines.filter { $0.hasSuffix("/config") }.count == 9)

        // The complete example of README.md's Home Assistant section is valid and announces its six entities.
        let readme = try String(contentsOf: repository.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "A complete agent with a BME280").dropFirst().first)
        let readmeExample = try #require(
            section.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        let readmePreview = try await Executable.run([
            "ha", "preview", "--config", try scratch.write(readmeExample, to: "readme.json").path,
        ])
        #expect(readmePreview.status == 0, "\(readmePreview.errors)")
        #expect(readmePreview.outputLines.filter { $0.hasSuffix("/config") }.count == 6)

        let bad = try scratch.write(
            Self.configuration(broker: 1883).replacingOccurrences(
                of: #""deviceClass": "door""#, with: #""deviceClass": "doors""#), to: "bad.json"
        ).path
        let refused = try await Executable.run(["config", "check", bad])
        #expect(refused.status == 78)
        #expect(refused.errors.hasPrefix("\(bad): $.homeAssistant.points.door.deviceClass: "))
        let unknown = try scratch.write(
            Self.configuration(broker: 1883).replacingOccurrences(
                of: #""points": {"door""#, with: #""points": {"doro""#), to: "unknown.json"
        ).path
        let named = try await Executable.run(["ha", "preview", "--config", unknown])
        #expect(named.status == 78)
        #expect(named.errors.contains(#"$.homeAssistant.points.doro: no point of this agent is called "doro""#))
    }

    /// The level of an output line in the emulation's record, "1", "0", or nil before it is written.
    static func level(in file: String, line: Int) -> String? {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        for entry in text.split(separator: "\n") {
            let fields = entry.split(separator: " ").map(String.init)
            if fields.count == 3, fields[1] == String(line) { return fields[2] }
        }
        return nil
    }
}

/// The messages under `homeassistant/#` and `coaty-edge/#` as they come, with the latest payload of each topic.
actor BridgeTopics {
    let client: TestClient
    private(set) var latest: [String: [UInt8]] = [:]

    init(broker: TestBroker) async throws {
        client = try await TestClient.connected(to: broker, subscribingTo: ["homeassistant/#", "coaty-edge/#"])
    }

    /// The payload of `topic` once one satisfies `condition`: the latest one if it does, else the next that does.
    func bytes(
        _ topic: String, within limit: Duration = .seconds(30),
        until condition: @Sendable ([UInt8]) -> Bool = { !$0.isEmpty }
    ) async throws -> [UInt8] {
        if let payload = latest[topic], condition(payload) { return payload }
        let deadline = ContinuousClock.now + limit
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw SocketError("timed out waiting for \(topic)") }
            let message = try await client.nextMessage(timeout: remaining)
            latest[message.topic] = message.payload
            if message.topic == topic, condition(message.payload) { return message.payload }
        }
    }

    func text(
        _ topic: String, within limit: Duration = .seconds(30),
        until condition: @Sendable (String) -> Bool = { !$0.isEmpty }
    ) async throws -> String {
        String(
            decoding: try await bytes(topic, within: limit) { condition(String(decoding: $0, as: UTF8.self)) },
            as: UTF8.self)
    }

    nonisolated func json(_ topic: String) async throws -> [String: Any]? {
        let payload = try await bytes(topic)
        return (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any]
    }
}
