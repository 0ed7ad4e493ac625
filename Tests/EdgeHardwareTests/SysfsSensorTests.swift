#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import CoatyJSON
import Testing

@testable import EdgeHardware

@Suite struct DS18B20Tests {
    let id = "28-0316a2795cff"

    func slaveFile(crc: String = "57 YES", t: String) -> String {
        "72 01 4b 46 7f ff 0e 10 57 : crc=\(crc)\n72 01 4b 46 7f ff 0e 10 57 t=\(t)\n"
    }

    func read(_ contents: String) async throws -> Result<[Measurement], SensorError> {
        let tree = try SysfsTree()
        try tree.write("bus/w1/devices/\(id)/w1_slave", contents)
        let sensor = DS18B20(deviceId: id, sysfsRoot: tree.root)
        do {
            return .success(try await sensor.read())
        } catch {
            return .failure(error)
        }
    }

    func path(_ tree: SysfsTree) -> String { tree.root + "/bus/w1/devices/\(id)/w1_slave" }

    @Test func readsMillidegrees() async throws {
        #expect(try await read(slaveFile(t: "23125")) == .success([Measurement(.temperature, 23.125)]))
    }

    @Test func readsNegativeTemperatures() async throws {
        #expect(try await read(slaveFile(t: "-10125")) == .success([Measurement(.temperature, -10.125)]))
    }

    @Test func readsTheRangeLimits() async throws {
        #expect(try await read(slaveFile(t: "-55000")) == .success([Measurement(.temperature, -55)]))
        #expect(try await read(slaveFile(t: "125000")) == .success([Measurement(.temperature, 125)]))
    }

    @Test func failedCRCIsAChecksumMismatch() async throws {
        let tree = try SysfsTree()
        try tree.write("bus/w1/devices/\(id)/w1_slave", slaveFile(crc: "57 NO", t: "23125"))
        await #expect(
            throws: SensorError.checksumMismatch(
                "\(path(tree)) reports \"72 01 4b 46 7f ff 0e 10 57 : crc=57 NO\"")
        ) {
            try await DS18B20(deviceId: id, sysfsRoot: tree.root).read()
        }
    }

    @Test func powerOnValueIsNotAReading() async throws {
        let tree = try SysfsTree()
        try tree.write("bus/w1/devices/\(id)/w1_slave", slaveFile(crc: "2d YES", t: "85000"))
        await #expect(
            throws: SensorError.invalidReading(
                "\(path(tree)) holds the power-on value 85 °C, not a measurement")
        ) {
            try await DS18B20(deviceId: id, sysfsRoot: tree.root).read()
        }
    }

    @Test(arguments: [
        ("127937", "implausible reading 127.937 °C (range -55...125)"),
        ("-55001", "implausible reading -55.001 °C (range -55...125)"),
    ])
    func valueOutsideTheDatasheetRangeIsAnImplausibleReading(millidegrees: String, reason: String) async throws {
        let result = try await read(slaveFile(t: millidegrees))
        #expect(
            result
                == .failure(
                    .implausibleReading(
                        Measurement(.temperature, Double(millidegrees)! / 1000), range: DS18B20.temperatureRange)))
        if case .failure(let error) = result { #expect(error.description == reason) }
    }

    @Test func allZeroScratchpadIsNotAReading() async throws {
        let tree = try SysfsTree()
        try tree.write(
            "bus/w1/devices/\(id)/w1_slave",
            "00 00 00 00 00 00 00 00 00 : crc=00 YES\n00 00 00 00 00 00 00 00 00 t=0\n")
        await #expect(
            throws: SensorError.invalidReading(
                "\(path(tree)) holds an all-zero scratchpad; is the data line shorted?")
        ) {
            try await DS18B20(deviceId: id, sysfsRoot: tree.root).read()
        }
    }

    @Test(arguments: [
        "",
        "garbage",
        "72 01 4b 46 7f ff 0e 10 57 : crc=57 YES\n",
        "72 01 4b 46 7f ff 0e 10 57 : crc=57 MAYBE\n72 01 4b 46 7f ff 0e 10 57 t=23125\n",
        "72 01 4b 46 7f ff 0e 10 57 : crc=57 YES\n72 01 4b 46 7f ff 0e 10 57 t=23.1\n",
        "72 01 4b 46 7f ff 0e 10 57 : crc=57 YES\n72 01 4b 46 7f ff 0e 10 57 t=\n",
        "72 01 4b 46 7f ff 0e 10 57 : crc=57 YES\n72 01 4b 46 7f ff 0e 10 57\n",
        "\u{0}\u{1}\u{FF}\n\"quoted\"\n",
    ])
    func garbageIsAnInvalidReadingThatNamesTheContent(contents: String) async throws {
        let tree = try SysfsTree()
        try tree.write("bus/w1/devices/\(id)/w1_slave", contents)
        let escaped = JSONValue.string(contents).serialized()
        await #expect(throws: SensorError.invalidReading("\(path(tree)) holds \(escaped)")) {
            try await DS18B20(deviceId: id, sysfsRoot: tree.root).read()
        }
    }

    @Test func longGarbageIsCutShortInTheMessage() async throws {
        let tree = try SysfsTree()
        try tree.write("bus/w1/devices/\(id)/w1_slave", String(repeating: "x", count: 500))
        await #expect(
            throws: SensorError.invalidReading(
                "\(path(tree)) holds \"\(String(repeating: "x", count: 120))\"...")
        ) {
            try await DS18B20(deviceId: id, sysfsRoot: tree.root).read()
        }
    }

    @Test func missingDeviceIsNoDevice() async throws {
        let tree = try SysfsTree()
        try tree.makeDirectory("bus/w1/devices")
        await #expect(throws: SensorError.noDevice(path(tree))) {
            try await DS18B20(deviceId: id, sysfsRoot: tree.root).read()
        }
    }

    @Test func deviceThatDisappearsIsNoDeviceAndComesBack() async throws {
        let tree = try SysfsTree()
        let sensor = DS18B20(deviceId: id, sysfsRoot: tree.root)
        try tree.write("bus/w1/devices/\(id)/w1_slave", slaveFile(t: "21000"))
        #expect(try await sensor.read() == [Measurement(.temperature, 21)])
        try tree.remove("bus/w1/devices/\(id)")
        await #expect(throws: SensorError.noDevice(path(tree))) { try await sensor.read() }
        try tree.write("bus/w1/devices/\(id)/w1_slave", slaveFile(t: "21500"))
        #expect(try await sensor.read() == [Measurement(.temperature, 21.5)])
    }

    @Test func unreadableFileIsAnIOError() async throws {
        let tree = try SysfsTree()
        try tree.makeDirectory("bus/w1/devices/\(id)/w1_slave")
        await #expect(throws: SensorError.io(errno: EISDIR, path(tree))) {
            try await DS18B20(deviceId: id, sysfsRoot: tree.root).read()
        }
    }

    @Test func discoversOnlyDS18B20DevicesInOrder() throws {
        let tree = try SysfsTree()
        for name in ["28-0316a2795cff", "w1_bus_master1", "10-000802b4a5c1", "28-01144c7c2eaa", "28-XYZ"] {
            try tree.makeDirectory("bus/w1/devices/\(name)")
        }
        #expect(DS18B20.discover(sysfsRoot: tree.root) == ["28-01144c7c2eaa", "28-0316a2795cff"])
    }

    @Test func discoversNothingWithoutABus() throws {
        let tree = try SysfsTree()
        #expect(DS18B20.discover(sysfsRoot: tree.root) == [])
    }

    @Test(arguments: [
        ("28-0316a2795cff", true), ("28-0316A2795CFF", false), ("28-0316a2795cf", false),
        ("10-0316a2795cff", false), ("28_0316a2795cff", false), ("28-0316a2795cffa", false), ("", false),
    ])
    func deviceIds(id: String, valid: Bool) {
        #expect(DS18B20.isDeviceId(id) == valid)
    }

    @Test func labelNamesTheDevice() {
        #expect(DS18B20(deviceId: id).label == "DS18B20 28-0316a2795cff")
        #expect(DS18B20(deviceId: id).quantities == [.temperature])
    }
}

@Suite struct ThermalZoneTests {
    @Test func readsMillidegreesAndLabelsWithTheType() async throws {
        let tree = try SysfsTree()
        try tree.write("class/thermal/thermal_zone0/temp", "48312\n")
        try tree.write("class/thermal/thermal_zone0/type", "cpu-thermal\n")
        let zone = ThermalZone(zone: 0, sysfsRoot: tree.root)
        #expect(zone.label == "thermal zone 0 (cpu-thermal)")
        #expect(zone.type == "cpu-thermal")
        #expect(try await zone.read() == [Measurement(.temperature, 48.312)])
    }

    @Test func readsNegativeTemperatures() async throws {
        let tree = try SysfsTree()
        try tree.write("class/thermal/thermal_zone2/temp", "-10125\n")
        #expect(try await ThermalZone(zone: 2, sysfsRoot: tree.root).read() == [Measurement(.temperature, -10.125)])
    }

    @Test func zoneWithoutTypeIsLabelledByNumber() throws {
        let tree = try SysfsTree()
        try tree.write("class/thermal/thermal_zone3/temp", "40000\n")
        let zone = ThermalZone(zone: 3, sysfsRoot: tree.root)
        #expect(zone.type == nil)
        #expect(zone.label == "thermal zone 3")
    }

    @Test func missingZoneIsNoDevice() async throws {
        let tree = try SysfsTree()
        let path = tree.root + "/class/thermal/thermal_zone0/temp"
        await #expect(throws: SensorError.noDevice(path)) {
            try await ThermalZone(zone: 0, sysfsRoot: tree.root).read()
        }
    }

    @Test(arguments: ["", "\n", "warm\n", "48.3\n", "48312 48313\n"])
    func garbageIsAnInvalidReading(contents: String) async throws {
        let tree = try SysfsTree()
        try tree.write("class/thermal/thermal_zone0/temp", contents)
        let path = tree.root + "/class/thermal/thermal_zone0/temp"
        await #expect(throws: SensorError.invalidReading("\(path) holds \(JSONValue.string(contents).serialized())")) {
            try await ThermalZone(zone: 0, sysfsRoot: tree.root).read()
        }
    }

    /// A zone whose driver has no value holds a placeholder; published as is it would be 9.2e15 °C.
    @Test(arguments: [
        ("9223372036854775807", "implausible reading 9223372036854776 °C (range -40...150)"),
        ("-274000", "implausible reading -274 °C (range -40...150)"),
        ("150001", "implausible reading 150.001 °C (range -40...150)"),
        ("-40001", "implausible reading -40.001 °C (range -40...150)"),
    ])
    func valueOutsideTheRangeIsAnImplausibleReading(millidegrees: String, reason: String) async throws {
        let tree = try SysfsTree()
        try tree.write("class/thermal/thermal_zone0/temp", millidegrees + "\n")
        let error = await #expect(throws: SensorError.self) {
            try await ThermalZone(zone: 0, sysfsRoot: tree.root).read()
        }
        #expect(error?.description == reason)
        #expect(
            error
                == .implausibleReading(
                    Measurement(.temperature, Double(millidegrees)! / 1000), range: ThermalZone.temperatureRange))
    }

    @Test func readsTheRangeLimits() async throws {
        let tree = try SysfsTree()
        let zone = ThermalZone(zone: 0, sysfsRoot: tree.root)
        try tree.write("class/thermal/thermal_zone0/temp", "-40000\n")
        #expect(try await zone.read() == [Measurement(.temperature, -40)])
        try tree.write("class/thermal/thermal_zone0/temp", "150000\n")
        #expect(try await zone.read() == [Measurement(.temperature, 150)])
    }

    /// An implausible reading is a read error like any other: reported once, retried with backoff, and the zone
    /// recovers when it reads a temperature again.
    @Test func implausibleReadingIsAFailureThatRecovers() async throws {
        let tree = try SysfsTree()
        try tree.write("class/thermal/thermal_zone0/temp", "9223372036854775807\n")
        let clock = VirtualClock()
        let poller = SensorPoller(
            sensor: ThermalZone(zone: 0, sysfsRoot: tree.root), interval: .seconds(5),
            backoff: Backoff(minimum: .seconds(1), maximum: .seconds(60)), pipelines: [.temperature: ValuePipeline()],
            clock: clock)
        var events = poller.makeAsyncIterator()
        let implausible = SensorError.implausibleReading(
            Measurement(.temperature, Double(Int64.max) / 1000), range: ThermalZone.temperatureRange)
        #expect(await events.next() == .failed(implausible))
        #expect(poller.status == .failing(since: VirtualClock.at(0), error: implausible, attempts: 1))
        try tree.write("class/thermal/thermal_zone0/temp", "45500\n")
        #expect(await events.next() == .recovered(failedAttempts: 1))
        #expect(await events.next() == .value(.temperature, 45.5))
        #expect(clock.now == VirtualClock.at(1))
    }

    @Test func discoversZonesInNumericOrder() throws {
        let tree = try SysfsTree()
        try tree.write("class/thermal/thermal_zone10/type", "gpu-thermal\n")
        try tree.write("class/thermal/thermal_zone0/type", "cpu-thermal\n")
        try tree.makeDirectory("class/thermal/thermal_zone1")
        try tree.makeDirectory("class/thermal/cooling_device0")
        try tree.makeDirectory("class/thermal/thermal_zonex")
        let zones = ThermalZone.discover(sysfsRoot: tree.root)
        #expect(zones.map(\.zone) == [0, 1, 10])
        #expect(
            zones.map(\.label) == ["thermal zone 0 (cpu-thermal)", "thermal zone 1", "thermal zone 10 (gpu-thermal)"])
    }

    @Test func discoversNothingWithoutThermalClass() throws {
        let tree = try SysfsTree()
        #expect(ThermalZone.discover(sysfsRoot: tree.root).isEmpty)
    }
}
