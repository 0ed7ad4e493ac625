import EdgeEmulation
import EdgeHardware
import CoatyTestSupport
import Testing

@Suite struct SHT3xConversionTests {
    /// The datasheet's CRC example: 0xBEEF has CRC 0x92.
    @Test func crcDatasheetExample() {
        #expect(SHT3x.crc8([0xBE, 0xEF]) == 0x92)
        #expect(SHT3x.crc8([0x00, 0x00]) == 0x81)
    }

    /// T = -45 + 175 · S / (2^16 - 1), RH = 100 · S / (2^16 - 1): the ends of the range and the middle.
    @Test func conversionFormulas() {
        #expect(SHT3x.celsius(rawTemperature: 0x0000) == -45)
        #expect(SHT3x.celsius(rawTemperature: 0xFFFF) == 130)
        #expect(abs(SHT3x.celsius(rawTemperature: 0x6666) - 25.0) < 0.001)
        #expect(abs(SHT3x.celsius(rawTemperature: 0x4000) - -1.25) < 0.001)
        #expect(SHT3x.relativeHumidity(rawHumidity: 0x0000) == 0)
        #expect(SHT3x.relativeHumidity(rawHumidity: 0xFFFF) == 100)
        #expect(abs(SHT3x.relativeHumidity(rawHumidity: 0x8000) - 50.0) < 0.001)
    }
}

@Suite(.emulatedHardware, .serialized, .timeLimit(.minutes(1))) struct SHT3xTests {
    @Test(arguments: [SHT3x.Repeatability.high, .medium, .low])
    func readsTemperatureAndHumidity(repeatability: SHT3x.Repeatability) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.sht3x, bus: bus, address: 0x44)
        chip.setTemperature(-12.3)
        chip.setHumidity(87.65)
        let sensor = SHT3x(bus: try I2CBus(path: path), repeatability: repeatability)
        #expect(sensor.label == "SHT3x at 0x44 on \(path)")
        let measurements = try await sensor.read()
        #expect(measurements.map(\.quantity) == [.temperature, .humidity])
        // One step is 175/65535 °C and 100/65535 %RH.
        #expect(abs(measurements[0].value - -12.3) < 0.002)
        #expect(abs(measurements[1].value - 87.65) < 0.001)
    }

    /// The humidity's whole scale is plausible; the temperature's ends (-45 and +130 °C) are beyond the operating
    /// range (TemperatureChipTests checks those).
    @Test func humidityRangeEnds() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.sht3x, bus: bus, address: 0x45)
        let sensor = SHT3x(bus: try I2CBus(path: path), address: 0x45, repeatability: .low)
        chip.setTemperature(-39.99)
        chip.setHumidity(0)
        var measurements = try await sensor.read()
        #expect(abs(measurements[0].value - -39.99) < 0.003 && measurements[1] == Measurement(.humidity, 0))
        chip.setTemperature(124.99)
        chip.setHumidity(100)
        measurements = try await sensor.read()
        #expect(abs(measurements[0].value - 124.99) < 0.003 && measurements[1] == Measurement(.humidity, 100))
    }

    @Test func corruptedChecksumIsReportedNotReturned() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.sht3x, bus: bus, address: 0x44)
        chip.inject(.corruptChecksum)
        let sensor = SHT3x(bus: try I2CBus(path: path), repeatability: .low)
        let error = await #expect(throws: SensorError.self) { try await sensor.read() }
        guard case .checksumMismatch(let detail) = error else {
            Issue.record("expected checksumMismatch, got \(String(describing: error))")
            return
        }
        #expect(detail.contains("temperature word"))
    }

    @Test func readingBeforeTheMeasurementIsDoneIsNotAcknowledged() async throws {
        // What the driver's wait avoids: the chip does not answer a read while it measures. Slowed down, so that a
        // loaded machine cannot take longer than the measurement between the write and the read.
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.sht3x, bus: bus, address: 0x44)
        chip.inject(.slowMeasurement)
        let device = I2CDevice(bus: try I2CBus(path: path), address: 0x44)
        try await device.write([0x24, 0x00])
        await #expect(throws: SensorError.self) { try await device.read(count: 6) }
        // The driver waits the datasheet's time, then reports the chip that has not finished.
        await #expect(throws: SensorError.self) {
            try await SHT3x(bus: try I2CBus(path: path), repeatability: .high).read()
        }
    }
}
