import CoatyJSON
import Foundation
import Testing

@testable import EdgeHardware

/// Parses `devices` (JSON text) as the value of a configuration's `devices` member.
private func parseDevices(_ devices: String) throws -> DeviceConfiguration {
    let document = try JSONValue(parsing: #"{"devices": "# + devices + "}")
    return try DeviceConfiguration(parsing: JSONCursor(document).required("devices"), file: "agent.json")
}

/// The error parsing `devices` gives, as "path: reason".
private func parseError(_ devices: String) -> String? {
    do {
        _ = try parseDevices(devices)
        return nil
    } catch let error as ConfigurationError {
        #expect(error.file == "agent.json")
        return "\(error.path.map(\.description) ?? "-"): \(error.reason)"
    } catch {
        return "unexpected \(error)"
    }
}

private func path(_ text: String) -> JSONPath {
    var components: [JSONPath.Component] = []
    for part in text.dropFirst(2).split(separator: ".") {
        var name = Substring(part)
        var indices: [Int] = []
        while let open = name.lastIndex(of: "["),
            let index = Int(name[name.index(after: open)..<name.index(before: name.endIndex)])
        {
            indices.insert(index, at: 0)
            name = name[..<open]
        }
        components.append(.key(String(name)))
        components += indices.map { .index($0) }
    }
    return JSONPath(components)
}

private let bme =
    #"{"driver": "bme280", "bus": "/dev/i2c-1", "address": "0x76", "sources": {"temperature": {"ioSource": "t"}}}"#

@Suite struct DeviceConfigurationTests {
    @Test func theExampleForARaspberryPiParsesToTheExpectedModel() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("deploy/example-pi.json")
        let document = try JSONValue(parsing: Array(try Data(contentsOf: url)))
        let root = JSONCursor(document)
        let devices = try DeviceConfiguration(parsing: root.required("devices"), file: url.path)

        let minute = Duration.seconds(60)
        let sensors = [
            SensorDevice(
                driver: .bme280, connection: .i2c(bus: "/dev/i2c-1", address: 0x76), pollInterval: .seconds(10),
                retry: Backoff(minimum: .seconds(1), maximum: minute * 5),
                sources: [
                    SourceBinding(
                        quantity: .temperature, ioSourceId: "e8571520-aa53-4415-8ba3-86373140d929",
                        filters: [
                            .calibrate(LinearCalibration(offset: -0.8)), .round(Rounding(digits: 1)),
                            .deadband(Deadband(threshold: 0.1)), .heartbeat(Heartbeat(period: minute * 5)),
                        ], path: path("$.devices.sensors[0].sources.temperature")),
                    SourceBinding(
                        quantity: .humidity, ioSourceId: "d850c98a-9b69-468b-9957-4e00d8b88b96",
                        filters: [
                            .clamp(Clamp(lower: 0, upper: 100, outside: .clamp)), .round(Rounding(digits: 0)),
                            .deadband(Deadband(threshold: 1)), .heartbeat(Heartbeat(period: minute * 5)),
                        ], path: path("$.devices.sensors[0].sources.humidity")),
                    SourceBinding(
                        quantity: .pressure, ioSourceId: "3693365f-410d-4240-a243-4ba8d18c144c",
                        filters: [
                            .movingAverage(MovingAverage(window: 6)), .round(Rounding(digits: 1)),
                            .deadband(Deadband(threshold: 0.2)), .heartbeat(Heartbeat(period: minute * 5)),
                        ], path: path("$.devices.sensors[0].sources.pressure")),
                ], path: path("$.devices.sensors[0]")),
            SensorDevice(
                driver: .ds18b20, connection: .oneWire(deviceId: "28-0316a2795cff"), pollInterval: .seconds(30),
                retry: Backoff(minimum: .seconds(1), maximum: minute * 5),
                sources: [
                    SourceBinding(
                        quantity: .temperature, ioSourceId: "21725e34-9d01-41c1-8a0d-0d787de8b2e5",
                        filters: [
                            .calibrate(
                                try #require(LinearCalibration(measured: 0.3, actual: 0, measured: 99.6, actual: 100))),
                            .round(Rounding(digits: 1)), .deadband(Deadband(threshold: 0.1)),
                            .heartbeat(Heartbeat(period: minute * 10)),
                        ], path: path("$.devices.sensors[1].sources.temperature"))
                ], path: path("$.devices.sensors[1]")),
            SensorDevice(
                driver: .thermal, connection: .thermalZone(0), pollInterval: .seconds(5),
                retry: Backoff(minimum: .seconds(1), maximum: minute * 5),
                sources: [
                    SourceBinding(
                        quantity: .temperature, ioSourceId: "6e78ddac-328b-4f77-8749-b9ec5c7e4685",
                        filters: [
                            .movingAverage(MovingAverage(window: 3)), .round(Rounding(digits: 1)),
                            .deadband(Deadband(threshold: 0.5)), .heartbeat(Heartbeat(period: minute)),
                        ], path: path("$.devices.sensors[2].sources.temperature"))
                ], path: path("$.devices.sensors[2]")),
        ]
        let outputs = [
            OutputDevice(
                ioActorId: "2f25c76f-f3f7-4d42-8ea6-94fe99ad2fb1", line: GPIOLineAddress(chip: "gpiochip0", offset: 17),
                activeLow: true, initial: false, safeState: .on,
                control: .hysteresis(try #require(Hysteresis(onAbove: 60, offBelow: 55))),
                path: path("$.devices.outputs[0]")),
            OutputDevice(
                ioActorId: "a4fe0e77-b304-46f5-abb2-10b15643cc41", line: GPIOLineAddress(chip: "gpiochip0", offset: 27),
                activeLow: false, initial: false, safeState: .off, control: .switching,
                path: path("$.devices.outputs[1]")),
        ]
        let inputs = [
            InputDevice(
                ioSourceId: "bcebfb0f-81c5-48e5-ada0-1be41bc62e93",
                line: GPIOLineAddress(chip: "gpiochip0", offset: 22),
                activeLow: false, debounce: .milliseconds(20), mapping: .boolean, path: path("$.devices.inputs[0]"))
        ]
        #expect(devices.emulated == false)
        #expect(devices.sysfsRoot == "/sys")
        #expect(devices.sensors == sensors)
        #expect(devices.outputs == outputs)
        #expect(devices.inputs == inputs)

        // Every reference names an IoSource or IoActor of the example's IO context nodes.
        var sourceIds: Set<String> = []
        var actorIds: Set<String> = []
        for (_, node) in try root.required("common").required("ioContextNodes").members() {
            for source in try node.required("ioSources").elements() {
                sourceIds.insert(try source.required("objectId").string())
            }
            for actor in try node.required("ioActors").elements() {
                actorIds.insert(try actor.required("objectId").string())
            }
        }
        try devices.checkReferences(ioSourceIds: sourceIds, ioActorIds: actorIds, file: url.path)
        #expect(sourceIds.count == 6 && actorIds.count == 2)
    }

    @Test func anEmptySectionHasNoDevices() throws {
        #expect(try parseDevices("{}") == DeviceConfiguration())
        #expect(
            try parseDevices(#"{"emulated": true, "sysfsRoot": "/tmp/sys"}"#)
                == DeviceConfiguration(emulated: true, sysfsRoot: "/tmp/sys"))
    }

    @Test func defaults() throws {
        let configuration = try parseDevices(
            #"""
            {"sensors": [\#(bme)],
             "outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 5}],
             "inputs": [{"driver": "gpio-input", "ioSource": "i", "chip": "/dev/gpiochip1", "line": 5}]}
            """#)
        let sensor = try #require(configuration.sensors.first)
        #expect(sensor.pollInterval == .seconds(10))
        #expect(sensor.retry == Backoff(minimum: .seconds(1), maximum: .seconds(300)))
        #expect(sensor.sources.map(\.filters) == [[]])
        let output = try #require(configuration.outputs.first)
        #expect(output.line == GPIOLineAddress(chip: "gpiochip0", offset: 5))
        #expect(!output.activeLow && !output.initial && output.safeState == .off && output.control == .switching)
        let input = try #require(configuration.inputs.first)
        #expect(input.line == GPIOLineAddress(chip: "gpiochip1", offset: 5))
        #expect(!input.activeLow && input.debounce == .zero && input.mapping == .boolean)
    }

    @Test func addressesAndBusesInEitherForm() throws {
        let configuration = try parseDevices(
            #"""
            {"sensors": [
              {"driver": "tmp102", "bus": 1, "address": 72, "sources": {"temperature": {"ioSource": "a"}}},
              {"driver": "mcp9808", "bus": "/dev/i2c-1", "address": "0x1f", "sources": {"temperature": {"ioSource": "b"}}},
              {"driver": "lm75a", "bus": "/dev/i2c-1", "address": "0x4F", "sources": {"temperature": {"ioSource": "c"}}},
              {"driver": "sht31", "bus": 3, "address": "0x44", "sources": {"humidity": {"ioSource": "d"}}},
              {"driver": "lm75", "bus": 3, "address": 72, "sources": {"temperature": {"ioSource": "e"}}}
            ]}
            """#)
        #expect(
            configuration.sensors.map(\.connection) == [
                .i2c(bus: "/dev/i2c-1", address: 0x48), .i2c(bus: "/dev/i2c-1", address: 0x1F),
                .i2c(bus: "/dev/i2c-1", address: 0x4F), .i2c(bus: "/dev/i2c-3", address: 0x44),
                .i2c(bus: "/dev/i2c-3", address: 0x48),
            ])
        #expect(configuration.sensors[3].sources.map(\.quantity) == [.humidity])
    }

    @Test func sourcesFollowTheDriversQuantityOrder() throws {
        let configuration = try parseDevices(
            #"""
            {"sensors": [{"driver": "bme280", "bus": 1, "address": 119, "sources": {
              "pressure": {"ioSource": "p"}, "temperature": {"ioSource": "t"}, "humidity": {"ioSource": "h"}}}]}
            """#)
        let sensor = try #require(configuration.sensors.first)
        #expect(sensor.sources.map(\.quantity) == [.temperature, .humidity, .pressure])
        #expect(sensor.sources.map(\.ioSourceId) == ["t", "h", "p"])
        #expect(sensor.pipelines.keys.sorted { $0.rawValue < $1.rawValue } == [.humidity, .pressure, .temperature])
    }

    @Test func everyFilterForm() throws {
        let configuration = try parseDevices(
            #"""
            {"sensors": [{"driver": "thermal", "zone": 1, "sources": {"temperature": {"ioSource": "t", "filters": [
              {"offset": -1.5}, {"linear": {"slope": 2}}, {"linear": {"slope": 0.5, "offset": 3}},
              {"calibrate": [{"measured": 1, "actual": 3}, {"actual": 7, "measured": 3}]},
              {"clamp": {"min": -40}}, {"clamp": {"max": 85, "outside": "drop"}}, {"clamp": {"min": 0, "max": 0}},
              {"deadband": 0.25}, {"movingAverage": 1000}, {"round": 0}, {"round": 15},
              {"heartbeat": "1.5s"}, {"heartbeat": "250ms"}, {"heartbeat": "2h"}
            ]}}}]}
            """#)
        let filters = try #require(configuration.sensors.first?.sources.first?.filters)
        #expect(
            filters == [
                .calibrate(LinearCalibration(offset: -1.5)), .calibrate(LinearCalibration(slope: 2, offset: 0)),
                .calibrate(LinearCalibration(slope: 0.5, offset: 3)),
                .calibrate(LinearCalibration(slope: 2, offset: 1)),
                .clamp(Clamp(lower: -40, outside: .clamp)), .clamp(Clamp(upper: 85, outside: .drop)),
                .clamp(Clamp(lower: 0, upper: 0, outside: .clamp)),
                .deadband(Deadband(threshold: 0.25)), .movingAverage(MovingAverage(window: 1000)),
                .round(Rounding(digits: 0)), .round(Rounding(digits: 15)),
                .heartbeat(Heartbeat(period: .milliseconds(1500))), .heartbeat(Heartbeat(period: .milliseconds(250))),
                .heartbeat(Heartbeat(period: .seconds(7200))),
            ])
    }

    @Test func gpioOptions() throws {
        let configuration = try parseDevices(
            #"""
            {"outputs": [{"driver": "gpio-output", "ioActor": "heater", "chip": "gpiochip4", "line": 5, "activeLow": true,
                          "initial": "on", "safeState": "keep", "hysteresis": {"onBelow": 18, "offAbove": 21},
                          "minOnTime": "5min", "minOffTime": "30s"}],
             "inputs": [{"driver": "gpio-input", "ioSource": "door", "chip": "gpiochip4", "line": 6, "activeLow": true,
                         "debounce": "0.05s", "values": {"active": "open", "inactive": {"state": "closed"}}}]}
            """#)
        #expect(
            configuration.outputs == [
                OutputDevice(
                    ioActorId: "heater", line: GPIOLineAddress(chip: "gpiochip4", offset: 5), activeLow: true,
                    initial: true,
                    safeState: .keep, control: .hysteresis(try #require(Hysteresis(onBelow: 18, offAbove: 21))),
                    limits: SwitchingLimits(minimumOn: .seconds(300), minimumOff: .seconds(30)),
                    path: path("$.devices.outputs[0]"))
            ])
        #expect(
            configuration.outputs[0].logic
                == OutputLogic(
                    control: .hysteresis(try #require(Hysteresis(onBelow: 18, offAbove: 21))), initial: true,
                    safeState: .keep))
        #expect(
            configuration.inputs == [
                InputDevice(
                    ioSourceId: "door", line: GPIOLineAddress(chip: "gpiochip4", offset: 6), activeLow: true,
                    debounce: .milliseconds(50), mapping: InputMapping(active: "open", inactive: ["state": "closed"]),
                    path: path("$.devices.inputs[0]"))
            ])
    }

    @Test func hysteresisThresholdsFromSharedObjects() throws {
        let configuration = try parseDevices(
            #"""
            {"outputs": [{"driver": "gpio-output", "ioActor": "fan", "chip": "gpiochip0", "line": 17,
                          "hysteresis": {"onAbove": {"shared": "setpoints.fan.on", "default": 60}, "offBelow": 55}}]}
            """#)
        #expect(
            configuration.outputs[0].control
                == .sharedHysteresis(
                    SharedHysteresis(
                        on: .shared(object: "setpoints", key: "fan.on", fallback: 60), off: .fixed(55), onWhenHigh: true
                    )))
        #expect(configuration.outputs[0].logic.hysteresis == Hysteresis(onAbove: 60, offBelow: 55))
    }

    @Test func theSameAddressOnAnotherBusAndTheSameLineNumberOnAnotherChipAreFine() throws {
        let configuration = try parseDevices(
            #"""
            {"sensors": [\#(bme), {"driver": "bme280", "bus": 0, "address": "0x76", "sources": {"temperature": {"ioSource": "u"}}}],
             "outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": "gpiochip0", "line": 17}],
             "inputs": [{"driver": "gpio-input", "ioSource": "i", "chip": "gpiochip1", "line": 17}]}
            """#)
        #expect(configuration.sensors.count == 2 && configuration.outputs.count == 1 && configuration.inputs.count == 1)
    }

    @Test func errorsNameTheFile() {
        #expect(
            throws: ConfigurationError(
                file: "agent.json", path: path("$.devices.sensors[0].driver"),
                reason:
                    #""bme281" is not one of "tmp102", "mcp9808", "lm75", "lm75a", "sht31", "bme280", "ds18b20", "thermal""#
            )
        ) {
            try parseDevices(#"{"sensors": [{"driver": "bme281"}]}"#)
        }
        let error = ConfigurationError(
            file: "/etc/coaty-edge/agent.json", path: path("$.devices.sensors[0].address"), reason: "bad")
        #expect(error.description == "/etc/coaty-edge/agent.json: $.devices.sensors[0].address: bad")
    }

    @Test(arguments: [
        // Unknown drivers, also in the wrong list.
        (
            #"{"sensors": [{"driver": "bme281"}]}"#,
            #"$.devices.sensors[0].driver: "bme281" is not one of "tmp102", "mcp9808", "lm75", "lm75a", "sht31", "bme280", "ds18b20", "thermal""#
        ),
        (
            #"{"sensors": [{"driver": "gpio-output"}]}"#,
            #"$.devices.sensors[0].driver: "gpio-output" is not one of "tmp102", "mcp9808", "lm75", "lm75a", "sht31", "bme280", "ds18b20", "thermal""#
        ),
        (
            #"{"outputs": [{"driver": "gpio-input"}]}"#,
            #"$.devices.outputs[0].driver: "gpio-input" is not one of "gpio-output", "pwm-output""#
        ),
        (
            #"{"inputs": [{"driver": "bme280"}]}"#,
            #"$.devices.inputs[0].driver: "bme280" is not one of "gpio-input", "pulse-counter""#
        ),
        // Addresses the chip cannot have, and addresses that are not addresses.
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": "0x40"}]}"#,
            "$.devices.sensors[0].address: 0x40 is not an address of the bme280 (0x76 or 0x77)"
        ),
        (
            #"{"sensors": [{"driver": "tmp102", "bus": 1, "address": "0x4C"}]}"#,
            "$.devices.sensors[0].address: 0x4C is not an address of the tmp102 (0x48...0x4B)"
        ),
        (
            #"{"sensors": [{"driver": "mcp9808", "bus": 1, "address": 72}]}"#,
            "$.devices.sensors[0].address: 0x48 is not an address of the mcp9808 (0x18...0x1F)"
        ),
        (
            #"{"sensors": [{"driver": "lm75", "bus": 1, "address": 8}]}"#,
            "$.devices.sensors[0].address: 0x08 is not an address of the lm75 (0x48...0x4F)"
        ),
        (
            #"{"sensors": [{"driver": "sht31", "bus": 1, "address": "0x46"}]}"#,
            "$.devices.sensors[0].address: 0x46 is not an address of the sht31 (0x44 or 0x45)"
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": 300}]}"#,
            "$.devices.sensors[0].address: 300 is out of range 0...127"
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": 118.5}]}"#,
            "$.devices.sensors[0].address: must be a whole number"
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": "0x80"}]}"#,
            "$.devices.sensors[0].address: 0x80 is out of the 7-bit range 0x00...0x7F"
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": "0x4G"}]}"#,
            #"$.devices.sensors[0].address: "0x4G" is not an I2C address like "0x48""#
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": "76"}]}"#,
            #"$.devices.sensors[0].address: "76" is not an I2C address like "0x48""#
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": "0x"}]}"#,
            #"$.devices.sensors[0].address: "0x" is not an I2C address like "0x48""#
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": true}]}"#,
            #"$.devices.sensors[0].address: expected an I2C address, a number or a string like "0x48", found boolean"#
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": "i2c-1", "address": "0x76"}]}"#,
            #"$.devices.sensors[0].bus: "i2c-1" is not a device path like "/dev/i2c-1""#
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": null, "address": "0x76"}]}"#,
            #"$.devices.sensors[0].bus: expected a bus number or a device path like "/dev/i2c-1", found null"#
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": -1, "address": "0x76"}]}"#,
            "$.devices.sensors[0].bus: -1 is out of range 0...1023"
        ),
        // The same device twice.
        (
            #"{"sensors": [\#(bme), {"driver": "bme280", "bus": 1, "address": 118}]}"#,
            "$.devices.sensors[1].address: address 0x76 on /dev/i2c-1 is already used by $.devices.sensors[0]"
        ),
        (
            #"{"sensors": [\#(bme), {"driver": "tmp102", "bus": "/dev/i2c-2", "address": "0x48", "sources": {"temperature": {"ioSource": "x"}}}, {"driver": "lm75", "bus": 2, "address": "0x48"}]}"#,
            "$.devices.sensors[2].address: address 0x48 on /dev/i2c-2 is already used by $.devices.sensors[1]"
        ),
        (
            #"{"sensors": [{"driver": "ds18b20", "oneWireId": "28-0316a2795cff", "sources": {"temperature": {"ioSource": "a"}}}, {"driver": "ds18b20", "oneWireId": "28-0316a2795cff"}]}"#,
            "$.devices.sensors[1].oneWireId: 1-Wire device 28-0316a2795cff is already used by $.devices.sensors[0]"
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "sources": {"temperature": {"ioSource": "a"}}}, {"driver": "thermal", "zone": 0}]}"#,
            "$.devices.sensors[1].zone: thermal zone 0 is already used by $.devices.sensors[0]"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": "gpiochip0", "line": 17}], "inputs": [{"driver": "gpio-input", "ioSource": "i", "chip": 0, "line": 17}]}"#,
            "$.devices.inputs[0].line: line 17 of gpiochip0 is already used by $.devices.outputs[0]"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": "/dev/gpiochip0", "line": 17}, {"driver": "gpio-output", "ioActor": "b", "chip": "gpiochip0", "line": 17}]}"#,
            "$.devices.outputs[1].line: line 17 of gpiochip0 is already used by $.devices.outputs[0]"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 17}, {"driver": "gpio-output", "ioActor": "a"}]}"#,
            #"$.devices.outputs[1].ioActor: IoActor "a" is already used by $.devices.outputs[0]"#
        ),
        (
            #"{"sensors": [\#(bme)], "inputs": [{"driver": "gpio-input", "ioSource": "t"}]}"#,
            #"$.devices.inputs[0].ioSource: IoSource "t" is already used by $.devices.sensors[0].sources.temperature"#
        ),
        (
            #"{"sensors": [{"driver": "sht31", "bus": 1, "address": "0x44", "sources": {"temperature": {"ioSource": "s"}, "humidity": {"ioSource": "s"}}}]}"#,
            #"$.devices.sensors[0].sources.humidity.ioSource: IoSource "s" is already used by $.devices.sensors[0].sources.temperature"#
        ),
        // Missing members.
        (#"{"sensors": [{"bus": 1}]}"#, #"$.devices.sensors[0]: missing required member "driver""#),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1}]}"#,
            #"$.devices.sensors[0]: missing required member "address""#
        ),
        (
            #"{"sensors": [{"driver": "bme280", "address": "0x76"}]}"#,
            #"$.devices.sensors[0]: missing required member "bus""#
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": "0x76"}]}"#,
            #"$.devices.sensors[0]: missing required member "sources""#
        ),
        (#"{"sensors": [{"driver": "ds18b20"}]}"#, #"$.devices.sensors[0]: missing required member "oneWireId""#),
        (#"{"sensors": [{"driver": "thermal"}]}"#, #"$.devices.sensors[0]: missing required member "zone""#),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "sources": {"temperature": {}}}]}"#,
            #"$.devices.sensors[0].sources.temperature: missing required member "ioSource""#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "chip": 0, "line": 1}]}"#,
            #"$.devices.outputs[0]: missing required member "ioActor""#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "line": 1}]}"#,
            #"$.devices.outputs[0]: missing required member "chip""#
        ),
        (
            #"{"inputs": [{"driver": "gpio-input", "ioSource": "i", "chip": 0}]}"#,
            #"$.devices.inputs[0]: missing required member "line""#
        ),
        (
            #"{"inputs": [{"driver": "gpio-input", "ioSource": "i", "chip": 0, "line": 1, "values": {"active": 1}}]}"#,
            #"$.devices.inputs[0].values: missing required member "inactive""#
        ),
        // Unknown members: typos, and members that belong to another kind of device.
        (
            #"{"sensor": []}"#,
            #"$.devices.sensor: unknown member "sensor" (known: "emulated", "inputs", "outputs", "sensors", "sysfsRoot")"#
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "adress": "0x76"}]}"#,
            #"$.devices.sensors[0].adress: unknown member "adress" (known: "address", "bus", "driver", "pollInterval", "retry", "sources")"#
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "address": "0x76"}]}"#,
            #"$.devices.sensors[0].address: unknown member "address" (known: "driver", "pollInterval", "retry", "sources", "zone")"#
        ),
        (
            #"{"sensors": [{"driver": "ds18b20", "oneWireId": "28-0316a2795cff", "sources": {"humidity": {"ioSource": "h"}}}]}"#,
            #"$.devices.sensors[0].sources.humidity: unknown member "humidity" (known: "temperature")"#
        ),
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": "0x76", "sources": {"humidty": {"ioSource": "h"}}}]}"#,
            #"$.devices.sensors[0].sources.humidty: unknown member "humidty" (known: "humidity", "pressure", "temperature")"#
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "sources": {"temperature": {"ioSource": "t", "filter": []}}}]}"#,
            #"$.devices.sensors[0].sources.temperature.filter: unknown member "filter" (known: "filters", "ioSource")"#
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "retry": {"min": "1s", "maximum": "1min"}}]}"#,
            #"$.devices.sensors[0].retry.maximum: unknown member "maximum" (known: "max", "min")"#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "safe": "on"}]}"#,
            #"$.devices.outputs[0].safe: unknown member "safe" (known: "activeLow", "chip", "driver", "hysteresis", "initial", "ioActor", "line", "minOffTime", "minOnTime", "pulse", "safeState")"#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "minOnTime": 30}]}"#,
            #"$.devices.outputs[0].minOnTime: expected a duration like "500ms", "10s", "5min" or "1h", found number"#
        ),
        (
            #"{"inputs": [{"driver": "gpio-input", "ioSource": "i", "chip": 0, "line": 1, "debounceMs": 20}]}"#,
            #"$.devices.inputs[0].debounceMs: unknown member "debounceMs" (known: "activeLow", "chip", "debounce", "driver", "ioSource", "line", "values")"#
        ),
        // Wrong types.
        (#"[]"#, "$.devices: expected an object, found array"),
        (#"{"sensors": {}}"#, "$.devices.sensors: expected an array, found object"),
        (#"{"sensors": [7]}"#, "$.devices.sensors[0]: expected an object, found number"),
        (#"{"emulated": "yes"}"#, "$.devices.emulated: expected a boolean, found string"),
        (#"{"sysfsRoot": "sys"}"#, "$.devices.sysfsRoot: must be an absolute path"),
        (#"{"sensors": [{"driver": 5}]}"#, "$.devices.sensors[0].driver: expected a string, found number"),
        (
            #"{"sensors": [{"driver": "thermal", "zone": "0"}]}"#,
            "$.devices.sensors[0].zone: expected an integer, found string"
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "sources": []}]}"#,
            "$.devices.sensors[0].sources: expected an object, found array"
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "sources": {"temperature": {"ioSource": ""}}}]}"#,
            "$.devices.sensors[0].sources.temperature.ioSource: must not be an empty string"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": "17"}]}"#,
            #"$.devices.outputs[0].line: "17" is no line name: write an offset as a number, 17, or a name like "GPIO17""#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1024}]}"#,
            "$.devices.outputs[0].line: 1024 is out of range 0...1023"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": true, "line": 1}]}"#,
            #"$.devices.outputs[0].chip: expected a chip name like "gpiochip0", a chip label like "pinctrl-rp1" or a chip number, found boolean"#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": "", "line": 1}]}"#,
            #"$.devices.outputs[0].chip: expected a chip name like "gpiochip0", a chip label like "pinctrl-rp1" or a chip number, found an empty string"#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "activeLow": 1}]}"#,
            "$.devices.outputs[0].activeLow: expected a boolean, found number"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "initial": true}]}"#,
            "$.devices.outputs[0].initial: expected a string, found boolean"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "safeState": "off-ish"}]}"#,
            #"$.devices.outputs[0].safeState: "off-ish" is not one of "on", "off", "keep""#
        ),
        // Sources.
        (
            #"{"sensors": [{"driver": "bme280", "bus": 1, "address": "0x76", "sources": {}}]}"#,
            #"$.devices.sensors[0].sources: must bind at least one of "temperature", "humidity", "pressure" to an IoSource"#
        ),
        (
            #"{"sensors": [{"driver": "ds18b20", "oneWireId": "28-0316A2795CFF"}]}"#,
            #"$.devices.sensors[0].oneWireId: "28-0316A2795CFF" is not a DS18B20 id like "28-0316a2795cff""#
        ),
        // Durations.
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "pollInterval": 10}]}"#,
            #"$.devices.sensors[0].pollInterval: expected a duration like "500ms", "10s", "5min" or "1h", found number"#
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "10"}]}"#,
            #"$.devices.sensors[0].pollInterval: "10" is not a duration like "500ms", "10s", "5min" or "1h""#
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "1.s"}]}"#,
            #"$.devices.sensors[0].pollInterval: "1.s" is not a duration like "500ms", "10s", "5min" or "1h""#
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "-5s"}]}"#,
            #"$.devices.sensors[0].pollInterval: "-5s" is not a duration like "500ms", "10s", "5min" or "1h""#
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "10 s"}]}"#,
            #"$.devices.sensors[0].pollInterval: "10 s" is not a duration like "500ms", "10s", "5min" or "1h""#
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "99999999999999h"}]}"#,
            #"$.devices.sensors[0].pollInterval: "99999999999999h" is too long"#
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "50ms"}]}"#,
            "$.devices.sensors[0].pollInterval: must be at least 100ms for a thermal"
        ),
        (
            #"{"sensors": [{"driver": "ds18b20", "oneWireId": "28-0316a2795cff", "pollInterval": "500ms"}]}"#,
            "$.devices.sensors[0].pollInterval: must be at least 1s for a ds18b20"
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "retry": {"min": "0s"}}]}"#,
            "$.devices.sensors[0].retry.min: must be longer than zero"
        ),
        (
            #"{"sensors": [{"driver": "thermal", "zone": 0, "retry": {"min": "10s", "max": "5s"}}]}"#,
            "$.devices.sensors[0].retry.max: must not be shorter than min, 10s"
        ),
        (
            #"{"inputs": [{"driver": "gpio-input", "ioSource": "i", "chip": 0, "line": 1, "debounce": 20}]}"#,
            #"$.devices.inputs[0].debounce: expected a duration like "500ms", "10s", "5min" or "1h", found number"#
        ),
        // Hysteresis.
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {"onAbove": 60, "offBelow": 65}}]}"#,
            "$.devices.outputs[0].hysteresis.offBelow: must be below onAbove, 60, to leave a band between them"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {"onBelow": 21, "offAbove": 21}}]}"#,
            "$.devices.outputs[0].hysteresis.offAbove: must be above onBelow, 21, to leave a band between them"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {"onAbove": 60, "offAbove": 65}}]}"#,
            #"$.devices.outputs[0].hysteresis: mixes two kinds of thresholds: use "onAbove" with "offBelow" (on when hot, like a fan) or "onBelow" with "offAbove" (on when cold, like a heater)"#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {}}]}"#,
            #"$.devices.outputs[0].hysteresis: needs "onAbove" with "offBelow" (on when hot, like a fan) or "onBelow" with "offAbove" (on when cold, like a heater)"#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {"onAbove": 60}}]}"#,
            #"$.devices.outputs[0].hysteresis: missing required member "offBelow""#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {"onAbove": "60", "offBelow": 55}}]}"#,
            "$.devices.outputs[0].hysteresis.onAbove: expected a number, found string"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {"onAbove": {"shared": "fanOn"}, "offBelow": 55}}]}"#,
            #"$.devices.outputs[0].hysteresis.onAbove.shared: "fanOn" is not <shared object>.<key>, such as "setpoints.fanOn""#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {"onAbove": {"shared": "set/points.fanOn"}, "offBelow": 55}}]}"#,
            #"$.devices.outputs[0].hysteresis.onAbove.shared: "set/points" is not a shared object name: no '+', '#' or '/'"#
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {"onAbove": {"shared": "s.on", "default": 50}, "offBelow": 55}}]}"#,
            "$.devices.outputs[0].hysteresis.offBelow: must be below onAbove, 50, to leave a band between them"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {"onAbove": {"shared": "s.on", "fallback": 60}, "offBelow": 55}}]}"#,
            #"$.devices.outputs[0].hysteresis.onAbove.fallback: unknown member "fallback" (known: "default", "shared")"#
        ),
        // Input values.
        (
            #"{"inputs": [{"driver": "gpio-input", "ioSource": "i", "chip": 0, "line": 1, "values": {"active": "x", "inactive": "x"}}]}"#,
            #"$.devices.inputs[0].values: "active" and "inactive" must differ, or the input tells nothing"#
        ),
    ])
    func invalidConfigurationsSayWhereAndWhy(devices: String, expected: String) {
        #expect(parseError(devices) == expected)
    }

    @Test(arguments: [
        (
            #"[{"round": 1, "deadband": 1}]"#,
            #"[0]: a filter is an object with one member, the filter's name ("offset", "linear", "calibrate", "clamp", "deadband", "movingAverage", "round", "heartbeat")"#
        ),
        (
            #"[{}]"#,
            #"[0]: a filter is an object with one member, the filter's name ("offset", "linear", "calibrate", "clamp", "deadband", "movingAverage", "round", "heartbeat")"#
        ),
        (#"["round"]"#, "[0]: expected an object, found string"),
        (#"{"round": 1}"#, "expected an array, found object"),
        (
            #"[{"rounding": 1}]"#,
            #"[0].rounding: unknown filter "rounding" (known: "offset", "linear", "calibrate", "clamp", "deadband", "movingAverage", "round", "heartbeat")"#
        ),
        (#"[{"offset": "1"}]"#, "[0].offset: expected a number, found string"),
        (#"[{"linear": {"offset": 1}}]"#, #"[0].linear: missing required member "slope""#),
        (
            #"[{"linear": {"slope": 1, "intercept": 1}}]"#,
            #"[0].linear.intercept: unknown member "intercept" (known: "offset", "slope")"#
        ),
        (
            #"[{"calibrate": [{"measured": 1, "actual": 2}]}]"#,
            #"[0].calibrate: needs two reference points, {"measured": ..., "actual": ...}, found 1"#
        ),
        (
            #"[{"calibrate": [{"measured": 20, "actual": 19}, {"measured": 20, "actual": 21}]}]"#,
            "[0].calibrate[1].measured: must differ from the first point's measured value"
        ),
        (
            #"[{"calibrate": [{"measured": 20, "actual": 19}, {"measured": 30}]}]"#,
            #"[0].calibrate[1]: missing required member "actual""#
        ),
        (#"[{"clamp": {}}]"#, #"[0].clamp: needs "min", "max" or both"#),
        (#"[{"clamp": {"min": 10, "max": 5}}]"#, "[0].clamp.max: must not be below min, 10"),
        (
            #"[{"clamp": {"min": 0, "outside": "ignore"}}]"#,
            #"[0].clamp.outside: "ignore" is not one of "clamp", "drop""#
        ),
        (#"[{"deadband": 0}]"#, "[0].deadband: must be above zero"),
        (#"[{"deadband": -1}]"#, "[0].deadband: must be above zero"),
        (#"[{"movingAverage": 0}]"#, "[0].movingAverage: 0 is out of range 1...1000"),
        (#"[{"movingAverage": 2.5}]"#, "[0].movingAverage: must be a whole number"),
        (#"[{"round": 16}]"#, "[0].round: 16 is out of range 0...15"),
        (#"[{"heartbeat": "0s"}]"#, "[0].heartbeat: must be longer than zero"),
        (
            #"[{"heartbeat": 60}]"#,
            #"[0].heartbeat: expected a duration like "500ms", "10s", "5min" or "1h", found number"#
        ),
    ])
    func invalidFiltersSayWhereAndWhy(filters: String, expected: String) {
        let devices =
            #"{"sensors": [{"driver": "thermal", "zone": 0, "sources": {"temperature": {"ioSource": "t", "filters": \#(filters)}}}]}"#
        let prefix = "$.devices.sensors[0].sources.temperature.filters"
        #expect(parseError(devices) == prefix + (expected.hasPrefix("[") ? "" : ": ") + expected)
    }

    @Test func referencesMustNameIoSourcesAndIoActors() throws {
        let configuration = try parseDevices(
            #"""
            {"sensors": [\#(bme)],
             "outputs": [{"driver": "gpio-output", "ioActor": "fan", "chip": 0, "line": 17}],
             "inputs": [{"driver": "gpio-input", "ioSource": "door", "chip": 0, "line": 22}]}
            """#)
        try configuration.checkReferences(ioSourceIds: ["t", "door"], ioActorIds: ["fan"], file: "agent.json")
        #expect(
            throws: ConfigurationError(
                file: "agent.json", path: path("$.devices.sensors[0].sources.temperature.ioSource"),
                reason: #"no IoSource with objectId "t" in common.ioContextNodes"#)
        ) {
            try configuration.checkReferences(ioSourceIds: ["door"], ioActorIds: ["fan"], file: "agent.json")
        }
        #expect(
            throws: ConfigurationError(
                file: "agent.json", path: path("$.devices.inputs[0].ioSource"),
                reason: #""door" is an IoActor, not an IoSource"#)
        ) {
            try configuration.checkReferences(ioSourceIds: ["t"], ioActorIds: ["fan", "door"], file: "agent.json")
        }
        #expect(
            throws: ConfigurationError(
                file: "agent.json", path: path("$.devices.outputs[0].ioActor"),
                reason: #""fan" is an IoSource, not an IoActor"#)
        ) {
            try configuration.checkReferences(ioSourceIds: ["t", "door", "fan"], ioActorIds: [], file: "agent.json")
        }
    }
}

@Suite struct ConfigurationDurationTests {
    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)), ("10s", .seconds(10)), ("1.5s", .milliseconds(1500)),
        ("0.1s", .milliseconds(100)), ("5min", .seconds(300)), ("1h", .seconds(3600)), ("0.25h", .seconds(900)),
        ("0ms", .zero), ("007s", .seconds(7)), ("0.000000001s", .nanoseconds(1)),
    ])
    func parses(text: String, expected: Duration) throws {
        #expect(try Duration(parsing: JSONCursor(.string(text))) == expected)
    }

    @Test(arguments: ["", "s", "ms", ".5s", "5", "5m", "5sec", "5 s", "1e3ms", "+5s", "5.5.5s", "5S", "١s"])
    func rejects(text: String) {
        #expect(throws: JSONShapeError.self) { try Duration(parsing: JSONCursor(.string(text))) }
    }

    @Test(arguments: [
        (Duration.milliseconds(100), "100ms"), (.seconds(1), "1s"), (.seconds(90), "90s"), (.seconds(300), "5min"),
        (.seconds(7200), "2h"), (.milliseconds(1500), "1500ms"), (.nanoseconds(5), "5ns"),
    ])
    func formats(duration: Duration, expected: String) {
        #expect(duration.configurationText == expected)
    }
}

@Suite struct PWMAndCounterConfigurationTests {
    @Test func aPWMOutputWithAllItsOptions() throws {
        let devices = try parseDevices(
            #"""
            {"outputs": [{"driver": "pwm-output", "ioActor": "fan", "chip": "pwmchip0", "channel": 1, "frequency": 25000,
              "minDuty": 20, "maxDuty": 90, "stopBelow": 10, "kickStart": {"time": "500ms"}, "inverted": true,
              "safeDuty": 100, "slewRate": 5, "dutySource": "duty",
              "curve": {"points": {"shared": "fan.curve", "default": [[40, 0], [70, 100]]}, "hysteresis": 2}}]}
            """#)
        #expect(devices.outputs.isEmpty)
        let pwm = try #require(devices.pwmOutputs.first)
        #expect(pwm.chip == "pwmchip0" && pwm.channel == 1 && pwm.dutySourceId == "duty")
        #expect(
            pwm.settings
                == PWMSettings(
                    frequency: 25000, inverted: true, range: DutyRange(minimum: 20, maximum: 90, stopBelow: 10),
                    kickStart: KickStart(duty: 100, duration: .milliseconds(500)), slewRate: 5, safeDuty: 100,
                    initialDuty: 0))
        #expect(
            pwm.control
                == .curve(
                    CurveSettings(
                        points: .shared(
                            object: "fan", key: "curve", fallback: try FanCurve(json: [[40, 0], [70, 100]])), band: 2)))
        let keep = try parseDevices(
            #"{"outputs": [{"driver": "pwm-output", "ioActor": "a", "chip": 0, "channel": 0, "safeDuty": "keep"}]}"#)
        #expect(keep.pwmOutputs.first?.settings.safeDuty == nil)
        #expect(keep.pwmOutputs.first?.control == .direct)
    }

    @Test func aCounterAndAPulseOutput() throws {
        let devices = try parseDevices(
            #"""
            {"inputs": [{"driver": "pulse-counter", "chip": "pinctrl-rp1", "line": "GPIO17", "debounce": "2ms",
                         "total": {"ioSource": "t"}, "rate": {"ioSource": "r", "window": "5min", "per": "minute"},
                         "quantity": {"ioSource": "q", "pulsesPerUnit": 450}, "stateFile": "/var/lib/coaty-edge/water.count"}],
             "outputs": [{"driver": "gpio-output", "ioActor": "door", "chip": 0, "line": 4,
                          "pulse": {"duration": "3s", "maximum": "10s", "retrigger": "extend"}}]}
            """#)
        let counter = try #require(devices.counters.first)
        #expect(counter.line == GPIOLineAddress(chip: "pinctrl-rp1", lineName: "GPIO17"))
        #expect(
            counter.debounce == .milliseconds(2) && counter.rateWindow == .seconds(300)
                && counter.ratePer == .seconds(60))
        #expect(counter.sourceIds == ["t", "r", "q"] && counter.pulsesPerUnit == 450)
        #expect(counter.stateFile == "/var/lib/coaty-edge/water.count")
        #expect(
            devices.outputs.first?.control
                == .pulse(PulseSettings(duration: .seconds(3), maximum: .seconds(10), retrigger: .extend)))
    }

    @Test(arguments: [
        (
            #"{"outputs": [{"driver": "pwm-output", "ioActor": "a", "chip": 0, "channel": 0, "minDuty": 120}]}"#,
            "$.devices.outputs[0].minDuty: must be a percentage, 0...100"
        ),
        (
            #"{"outputs": [{"driver": "pwm-output", "ioActor": "a", "chip": 0, "channel": 0, "minDuty": 50, "maxDuty": 40}]}"#,
            "$.devices.outputs[0].maxDuty: must not be below minDuty, 50"
        ),
        (
            #"{"outputs": [{"driver": "pwm-output", "ioActor": "a", "chip": "gpiochip0", "channel": 0}]}"#,
            #"$.devices.outputs[0].chip: "gpiochip0" is not a PWM chip like "pwmchip0" (a directory of /sys/class/pwm)"#
        ),
        (
            #"{"outputs": [{"driver": "pwm-output", "ioActor": "a", "chip": 0, "channel": 0, "curve": {"points": [[40, 0], [30, 50]]}}]}"#,
            "$.devices.outputs[0].curve.points[1]: input 30 must be above the previous point's, 40"
        ),
        (
            #"{"outputs": [{"driver": "pwm-output", "ioActor": "a", "chip": 0, "channel": 0}, {"driver": "pwm-output", "ioActor": "b", "chip": 0, "channel": 0}]}"#,
            "$.devices.outputs[1].channel: PWM channel 0 of pwmchip0 is already used by $.devices.outputs[0]"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "hysteresis": {"onAbove": 60, "offBelow": 55}, "pulse": "1s"}]}"#,
            "$.devices.outputs[0].pulse: a pulse output cannot have a hysteresis too"
        ),
        (
            #"{"outputs": [{"driver": "gpio-output", "ioActor": "a", "chip": 0, "line": 1, "pulse": {"duration": "5s", "maximum": "1s"}}]}"#,
            "$.devices.outputs[0].pulse.maximum: must not be shorter than the duration, 5s"
        ),
        (
            #"{"inputs": [{"driver": "pulse-counter", "chip": 0, "line": 1}]}"#,
            #"$.devices.inputs[0]: must publish at least one of "total", "rate" and "quantity" to an IoSource"#
        ),
        (
            #"{"inputs": [{"driver": "pulse-counter", "chip": 0, "line": 1, "total": {"ioSource": "t"}, "stateFile": "water.count"}]}"#,
            "$.devices.inputs[0].stateFile: must be an absolute path"
        ),
        (
            #"{"inputs": [{"driver": "pulse-counter", "chip": 0, "line": 1, "quantity": {"ioSource": "q", "pulsesPerUnit": 0}}]}"#,
            "$.devices.inputs[0].quantity.pulsesPerUnit: must be above zero"
        ),
    ])
    func invalidEntriesNameThePathAndTheReason(devices: String, expected: String) {
        #expect(parseError(devices) == expected)
    }
}
