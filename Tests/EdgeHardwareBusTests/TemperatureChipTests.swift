import EdgeEmulation
import EdgeHardware
import CoatyTestSupport
import Synchronization
import Testing

@Suite struct TemperatureConversionTests {
    /// TMP102 datasheet, temperature data format tables: 12-bit and 13-bit (extended mode) values.
    @Test(arguments: [
        (0x7FF, 127.9375), (0x640, 100.0), (0x500, 80.0), (0x4B0, 75.0), (0x320, 50.0), (0x190, 25.0),
        (0x004, 0.25), (0x000, 0.0), (0xFFC, -0.25), (0xE70, -25.0), (0xC90, -55.0),
    ])
    func tmp102TwelveBit(digital: Int, celsius: Double) {
        #expect(TMP102.celsius(temperatureRegister: UInt16(digital) << 4) == celsius)
    }

    @Test(arguments: [
        (0x0960, 150.0), (0x0800, 128.0), (0x07FF, 127.9375), (0x0640, 100.0), (0x04B0, 75.0), (0x0190, 25.0),
        (0x0004, 0.25), (0x0000, 0.0), (0x1FFC, -0.25), (0x1E70, -25.0), (0x1C90, -55.0),
    ])
    func tmp102ThirteenBitExtendedMode(digital: Int, celsius: Double) {
        #expect(TMP102.celsius(temperatureRegister: UInt16(digital) << 3 | 1) == celsius)
    }

    /// MCP9808: bits 15...13 are alert flags and never part of the temperature; bit 12 is the sign.
    @Test(arguments: [
        (0x0191, 25.0625), (0xE191, 25.0625), (0x07D0, 125.0), (0x0000, 0.0), (0x1FFF, -0.0625),
        (0x1E70, -25.0), (0x1D80, -40.0), (0xBD80, -40.0), (0x1000, -256.0),
    ])
    func mcp9808AmbientTemperature(register: Int, celsius: Double) {
        #expect(MCP9808.celsius(ambientTemperatureRegister: UInt16(register)) == celsius)
    }

    /// LM75 (9-bit) datasheet table.
    @Test(arguments: [
        (0x0FA, 125.0), (0x032, 25.0), (0x001, 0.5), (0x000, 0.0), (0x1FF, -0.5), (0x1CE, -25.0), (0x192, -55.0),
    ])
    func lm75NineBit(digital: Int, celsius: Double) {
        #expect(LM75.celsius(temperatureRegister: UInt16(digital) << 7, variant: .lm75) == celsius)
    }

    /// NXP LM75A datasheet table (11-bit).
    @Test(arguments: [
        (0x3F8, 127.0), (0x3F7, 126.875), (0x3F1, 126.125), (0x3E8, 125.0), (0x0C8, 25.0), (0x001, 0.125),
        (0x000, 0.0), (0x7FF, -0.125), (0x738, -25.0), (0x649, -54.875), (0x648, -55.0),
    ])
    func lm75aElevenBit(digital: Int, celsius: Double) {
        #expect(LM75.celsius(temperatureRegister: UInt16(digital) << 5, variant: .lm75a) == celsius)
    }

    /// The unused low bits of the LM75 register do not count.
    @Test func lm75IgnoresBitsBelowItsResolution() {
        #expect(LM75.celsius(temperatureRegister: 0x197F, variant: .lm75) == 25.0)
        #expect(LM75.celsius(temperatureRegister: 0x191F, variant: .lm75a) == 25.0)
    }
}

@Suite(.emulatedHardware, .serialized, .timeLimit(.minutes(1))) struct TemperatureChipTests {
    @Test(arguments: [-55.0, -0.25, 25.0, 127.9375])
    func tmp102NormalRange(celsius: Double) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.tmp102, bus: bus, address: 0x48)
        chip.setTemperature(celsius)
        let sensor = TMP102(bus: try I2CBus(path: path))
        #expect(sensor.label == "TMP102 at 0x48 on \(path)")
        #expect(try await sensor.read() == [Measurement(.temperature, celsius)])
    }

    @Test func tmp102NormalRangeClipsAt128() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.tmp102, bus: bus, address: 0x49)
        chip.setTemperature(150)
        let sensor = TMP102(bus: try I2CBus(path: path), address: 0x49)
        #expect(try await sensor.read() == [Measurement(.temperature, 127.9375)])
    }

    @Test func tmp102ExtendedRangeSwitchesTheChipAndReaches150() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.tmp102, bus: bus, address: 0x4A)
        chip.setTemperature(150)
        let sensor = TMP102(bus: try I2CBus(path: path), address: 0x4A, range: .extended)
        // The first read finds the chip in normal mode, decodes that, and switches it.
        #expect(try await sensor.read() == [Measurement(.temperature, 127.9375)])
        #expect(try await sensor.read() == [Measurement(.temperature, 150)])
        chip.setTemperature(-55)
        #expect(try await sensor.read() == [Measurement(.temperature, -55)])
    }

    @Test(arguments: [-40.0, -0.0625, 0.0, 25.0625, 125.0])
    func mcp9808(celsius: Double) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        // The power-on alert limits are 0 °C, so above 0 the chip sets its T_CRIT and T_UPPER flags.
        let chip = try hardware.addChip(.mcp9808, bus: bus, address: 0x18)
        chip.setTemperature(celsius)
        let sensor = MCP9808(bus: try I2CBus(path: path))
        #expect(try await sensor.read() == [Measurement(.temperature, celsius)])
    }

    @Test func mcp9808WrongDeviceIdIsReported() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.mcp9808, bus: bus, address: 0x1F)
        chip.inject(.wrongChipId)
        let sensor = MCP9808(bus: try I2CBus(path: path), address: 0x1F)
        await #expect(throws: SensorError.wrongChipId(expected: 0x04, found: 0x02)) { try await sensor.read() }
        chip.inject(nil)
        chip.setTemperature(-12.5)
        #expect(try await sensor.read() == [Measurement(.temperature, -12.5)])
    }

    @Test func mcp9808OtherPartAtTheAddressIsWrongManufacturer() async throws {
        // An LM75A has a 2-bit pointer: register 6, where an MCP9808 keeps its manufacturer id, is its T_HYST
        // (75 °C at power-on).
        let (hardware, bus, path) = try Emulation.newBus()
        _ = try hardware.addChip(.lm75a, bus: bus, address: 0x48)
        let sensor = MCP9808(bus: try I2CBus(path: path), address: 0x48)
        await #expect(throws: SensorError.wrongChipId(expected: 0x54, found: 0x4B00)) { try await sensor.read() }
    }

    @Test(arguments: [(-55.0, -55.0), (-0.5, -0.5), (25.5, 25.5), (25.3, 25.5), (125.0, 125.0)])
    func lm75(celsius: Double, expected: Double) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.lm75, bus: bus, address: 0x4F)
        chip.setTemperature(celsius)
        let sensor = LM75(bus: try I2CBus(path: path), address: 0x4F, variant: .lm75)
        #expect(sensor.label == "LM75 at 0x4f on \(path)")
        #expect(try await sensor.read() == [Measurement(.temperature, expected)])
    }

    @Test(arguments: [-55.0, -54.875, -0.125, 25.0, 125.0])
    func lm75a(celsius: Double) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.lm75a, bus: bus, address: 0x48)
        chip.setTemperature(celsius)
        let sensor = LM75(bus: try I2CBus(path: path), variant: .lm75a)
        #expect(try await sensor.read() == [Measurement(.temperature, celsius)])
    }

    /// Values the registers can show but the chips cannot measure (each datasheet's operating range) are read
    /// errors, not temperatures.
    @Test(arguments: [
        (EmulatedChip.Model.tmp102, -100.0, "implausible reading -100 °C (range -55...150)"),
        (.mcp9808, 200.0, "implausible reading 200 °C (range -40...125)"),
        (.mcp9808, -41.0, "implausible reading -41 °C (range -40...125)"),
        (.lm75, 127.0, "implausible reading 127 °C (range -55...125)"),
        (.lm75a, 126.875, "implausible reading 126.875 °C (range -55...125)"),
        (.lm75a, -60.0, "implausible reading -60 °C (range -55...125)"),
        (.sht3x, -45.0, "implausible reading -45 °C (range -40...125)"),
        (.sht3x, 130.0, "implausible reading 130 °C (range -40...125)"),
    ])
    func temperatureOutsideTheDatasheetRangeIsAnImplausibleReading(
        model: EmulatedChip.Model, celsius: Double, reason: String
    ) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(model, bus: bus, address: 0x44)
        chip.setTemperature(celsius)
        let sensor = try makeSensor(model, path: path, address: 0x44)
        let error = await #expect(throws: SensorError.self) { try await sensor.read() }
        #expect(error?.description == reason)
        guard case .implausibleReading(let measurement, _)? = error else { return }
        #expect(measurement == Measurement(.temperature, celsius))
        // A plausible temperature reads again.
        chip.setTemperature(21.5)
        let reading = try await sensor.read()
        #expect(reading.first?.quantity == .temperature && abs((reading.first?.value ?? .nan) - 21.5) < 0.01)
    }

    /// A chip that stops acknowledging and then answers as another part is reported with the new reason; the
    /// device status and the log take their reason from these events.
    @Test(arguments: [
        (EmulatedChip.Model.mcp9808, SensorError.wrongChipId(expected: 0x04, found: 0x02)),
        (.bme280, .wrongChipId(expected: 0x60, found: 0x58)),
    ])
    func aNewFailureReasonReplacesTheOldOne(model: EmulatedChip.Model, wrongId: SensorError) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(model, bus: bus, address: 0x76)
        let sensor = FaultScript(
            try makeSensor(model, path: path, address: 0x76), chip: chip,
            faults: [.noAcknowledge, .noAcknowledge, .wrongChipId, .wrongChipId, nil])
        let poller = SensorPoller(
            sensor: sensor, interval: .milliseconds(1),
            backoff: Backoff(minimum: .milliseconds(1), maximum: .milliseconds(1)),
            pipelines: [.temperature: ValuePipeline([.round(Rounding(digits: 1))])])
        let events = await Task {
            var events: [SensorEvent] = []
            for await event in poller { events.append(event) }
            return events
        }.value
        guard events.count == 4, case .failed(.noDevice(let detail)) = events[0] else {
            Issue.record("expected a NACK, the wrong id, the recovery and a value; got \(events)")
            return
        }
        #expect(detail.contains("0x76 on \(path)"))
        #expect(events[1...] == [.failed(wrongId), .recovered(failedAttempts: 4), .value(.temperature, 21.5)])
    }

    @Test(arguments: EmulatedChip.Model.allCases)
    func absentChipIsNoDevice(model: EmulatedChip.Model) async throws {
        let (_, _, path) = try Emulation.newBus()
        let sensor = try makeSensor(model, path: path, address: 0x44)
        let error = await #expect(throws: SensorError.self) { try await sensor.read() }
        #expect(
            error.map { if case .noDevice(let detail) = $0 { detail.contains("0x44 on \(path)") } else { false } }
                == true)
    }

    @Test(arguments: EmulatedChip.Model.allCases)
    func ioErrorIsReported(model: EmulatedChip.Model) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(model, bus: bus, address: 0x45)
        chip.inject(.ioError)
        let sensor = try makeSensor(model, path: path, address: 0x45)
        let error = await #expect(throws: SensorError.self) { try await sensor.read() }
        #expect(error.map { if case .io(5, _) = $0 { true } else { false } } == true)
    }

    @Test(arguments: EmulatedChip.Model.allCases)
    func chipThatStopsAcknowledgingIsNoDevice(model: EmulatedChip.Model) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(model, bus: bus, address: 0x45)
        let sensor = try makeSensor(model, path: path, address: 0x45)
        _ = try await sensor.read()
        chip.inject(.noAcknowledge)
        let error = await #expect(throws: SensorError.self) { try await sensor.read() }
        #expect(error.map { if case .noDevice = $0 { true } else { false } } == true)
    }

    @Test func chipsShareABus() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let sharedBus = try I2CBus(path: path)
        let chips = try [0x48, 0x49, 0x4A, 0x4B].map { try hardware.addChip(.tmp102, bus: bus, address: UInt8($0)) }
        for (index, chip) in chips.enumerated() { chip.setTemperature(Double(index) * 10) }
        let readings = try await withThrowingTaskGroup(of: (Int, Double).self) { group in
            for index in chips.indices {
                group.addTask {
                    let sensor = TMP102(bus: sharedBus, address: chips[index].address)
                    var last = 0.0
                    for _ in 0..<50 { last = try await sensor.read()[0].value }
                    return (index, last)
                }
            }
            return try await group.reduce(into: [Int: Double]()) { $0[$1.0] = $1.1 }
        }
        #expect(readings == [0: 0, 1: 10, 2: 20, 3: 30])
    }
}

/// Gives the chip the next fault of the script (nil: none) before each read, and cancels the reading task once the
/// script is used up, which ends a poller's sequence.
final class FaultScript: Sensor {
    let sensor: any Sensor
    let chip: EmulatedChip
    private let faults: Mutex<[EmulatedChip.Fault?]>

    init(_ sensor: any Sensor, chip: EmulatedChip, faults: [EmulatedChip.Fault?]) {
        self.sensor = sensor
        self.chip = chip
        self.faults = Mutex(faults)
    }

    var label: String { sensor.label }
    var quantities: [Quantity] { sensor.quantities }

    func read() async throws(SensorError) -> [Measurement] {
        let next: EmulatedChip.Fault?? = faults.withLock { $0.isEmpty ? .none : .some($0.removeFirst()) }
        guard let fault = next else {
            withUnsafeCurrentTask { $0?.cancel() }
            throw .noDevice("script used up")
        }
        chip.inject(fault)
        return try await sensor.read()
    }
}

func makeSensor(_ model: EmulatedChip.Model, path: String, address: UInt8) throws -> any Sensor {
    let bus = try I2CBus(path: path)
    return switch model {
    case .tmp102: TMP102(bus: bus, address: address)
    case .mcp9808: MCP9808(bus: bus, address: address)
    case .lm75: LM75(bus: bus, address: address, variant: .lm75)
    case .lm75a: LM75(bus: bus, address: address, variant: .lm75a)
    case .sht3x: SHT3x(bus: bus, address: address)
    case .bme280: BME280(bus: bus, address: address)
    }
}
