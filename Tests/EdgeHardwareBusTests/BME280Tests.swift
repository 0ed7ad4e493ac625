import EdgeEmulation
import EdgeHardware
import CoatyTestSupport
import Testing

@Suite struct BME280CompensationTests {
    /// The BMP280 datasheet's worked example (section 3.12); the BME280 shares the temperature and pressure
    /// formulas and trimming registers.
    static let example = BME280.Calibration(
        t1: 27504, t2: 26435, t3: -1000, p1: 36477, p2: -10685, p3: 3024, p4: 2855, p5: 140, p6: -7, p7: 15500,
        p8: -14600, p9: 6000, h1: 75, h2: 362, h3: 0, h4: 313, h5: 50, h6: 30)

    @Test func datasheetExampleTemperatureAndPressure() throws {
        let temperature = BME280.compensateTemperature(adc: 519888, Self.example)
        #expect(abs(temperature.celsius - 25.08) < 0.005)
        #expect(temperature.fine == 128422)
        let pressure = try #require(
            BME280.compensatePressure(adc: 415148, fineTemperature: temperature.fine, Self.example))
        #expect(abs(pressure - 100653.27) < 0.05)
    }

    @Test func calibrationRegistersDecodeWithSharedNibbles() {
        // dig_H4 = 0x123 and dig_H5 = -0x123: 0xE4 = 0x12, 0xE5 = 0xD3 (H5 low nibble D, H4 low nibble 3), 0xE6 = 0xED.
        var low = [UInt8](repeating: 0, count: 26)
        low[0] = 0x70; low[1] = 0x6B  // dig_T1 = 27504
        low[2] = 0x43; low[3] = 0x67  // dig_T2 = 26435
        low[4] = 0x18; low[5] = 0xFC  // dig_T3 = -1000
        low[25] = 75
        let high: [UInt8] = [0x6A, 0x01, 0x00, 0x12, 0xD3, 0xED, 0xE2]
        let calibration = BME280.Calibration(low: low, high: high)
        #expect(calibration.t1 == 27504 && calibration.t2 == 26435 && calibration.t3 == -1000)
        #expect(calibration.h1 == 75 && calibration.h2 == 362 && calibration.h3 == 0)
        #expect(calibration.h4 == 0x123)
        #expect(calibration.h5 == -0x123)
        #expect(calibration.h6 == -30)
    }

    @Test func humidityIsLimitedToZeroToHundredPercent() {
        let fine = BME280.compensateTemperature(adc: 519888, Self.example).fine
        #expect(BME280.compensateHumidity(adc: 0, fineTemperature: fine, Self.example) == 0)
        #expect(BME280.compensateHumidity(adc: 0xFFFF, fineTemperature: fine, Self.example) == 100)
    }
}

@Suite(.emulatedHardware, .serialized, .timeLimit(.minutes(1))) struct BME280Tests {
    /// Near the ends of the operating ranges, less than the resolution inside them (beyond them is implausible).
    @Test(arguments: [(21.5, 45.0, 1013.25), (-39.99, 0.0, 300.05), (84.99, 100.0, 1099.95), (-12.34, 87.6, 954.3)])
    func readsWhatTheChipMeasures(temperature: Double, humidity: Double, pressure: Double) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.bme280, bus: bus, address: 0x76)
        chip.setTemperature(temperature)
        chip.setHumidity(humidity)
        chip.setPressure(pressure)
        let sensor = BME280(bus: try I2CBus(path: path), address: 0x76)
        #expect(sensor.label == "BME280 at 0x76 on \(path)")
        let measurements = try await sensor.read()
        #expect(measurements.map(\.quantity) == [.temperature, .humidity, .pressure])
        // Within the chip's resolution at oversampling x1: 0.005 °C, 0.026 hPa, 0.008 %RH.
        #expect(abs(measurements[0].value - temperature) < 0.01)
        #expect(abs(measurements[1].value - humidity) < 0.02)
        #expect(abs(measurements[2].value - pressure) < 0.03)
    }

    /// Readings beyond the datasheet's operating ranges (-40...85 °C, 300...1100 hPa) are read errors.
    @Test(arguments: [
        (90.0, 45.0, 1013.25, Quantity.temperature, BME280.temperatureRange),
        (-45.0, 45.0, 1013.25, .temperature, BME280.temperatureRange),
        (21.5, 45.0, 250.0, .pressure, BME280.pressureRange),
        (21.5, 45.0, 1150.0, .pressure, BME280.pressureRange),
    ])
    func readingOutsideTheOperatingRangeIsImplausible(
        temperature: Double, humidity: Double, pressure: Double, quantity: Quantity, range: PlausibleRange
    ) async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.bme280, bus: bus, address: 0x77)
        chip.setTemperature(temperature)
        chip.setHumidity(humidity)
        chip.setPressure(pressure)
        let sensor = BME280(bus: try I2CBus(path: path), address: 0x77)
        let error = await #expect(throws: SensorError.self) { try await sensor.read() }
        guard case .implausibleReading(let measurement, let found)? = error else {
            Issue.record("expected an implausible reading, got \(String(describing: error))")
            return
        }
        #expect(measurement.quantity == quantity && found == range)
        #expect(abs(measurement.value - (quantity == .temperature ? temperature : pressure)) < 0.03)
        // The message shows the reading with at most three decimals.
        let text = error?.description ?? ""
        let shown = text.dropFirst("implausible reading ".count).prefix { $0 != " " }
        #expect(text == "implausible reading \(shown) \(quantity.unit) (range \(range))")
        #expect(abs((Double(String(shown)) ?? .nan) - measurement.value) <= 0.0005)
        #expect((shown.split(separator: ".").dropFirst().first?.count ?? 0) <= 3)
    }

    @Test func followsTheChipAcrossReads() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.bme280, bus: bus, address: 0x77)
        let sensor = BME280(
            bus: try I2CBus(path: path), address: 0x77, temperatureOversampling: .x16,
            humidityOversampling: .x2, pressureOversampling: .x16)
        chip.setTemperature(19.0)
        #expect(abs(try await sensor.read()[0].value - 19.0) < 0.01)
        chip.setTemperature(23.5)
        #expect(abs(try await sensor.read()[0].value - 23.5) < 0.01)
    }

    @Test func wrongChipIdIsReported() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.bme280, bus: bus, address: 0x76)
        chip.inject(.wrongChipId)
        let sensor = BME280(bus: try I2CBus(path: path))
        await #expect(throws: SensorError.wrongChipId(expected: 0x60, found: 0x58)) { try await sensor.read() }
    }

    @Test func absentChipIsNoDevice() async throws {
        let (_, _, path) = try Emulation.newBus()
        let sensor = BME280(bus: try I2CBus(path: path), address: 0x76)
        let error = await #expect(throws: SensorError.self) { try await sensor.read() }
        guard case .noDevice(let detail) = error else {
            Issue.record("expected noDevice, got \(String(describing: error))")
            return
        }
        #expect(detail.contains("0x76 on \(path)"))
    }

    @Test func chipThatStopsAnsweringIsNoDeviceAndRecovers() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.bme280, bus: bus, address: 0x76)
        let sensor = BME280(bus: try I2CBus(path: path))
        _ = try await sensor.read()
        chip.inject(.noAcknowledge)
        let error = await #expect(throws: SensorError.self) { try await sensor.read() }
        #expect(error.map { if case .noDevice = $0 { true } else { false } } == true)
        chip.inject(nil)
        chip.setTemperature(30)
        #expect(abs(try await sensor.read()[0].value - 30) < 0.01)
    }

    @Test func ioErrorIsReportedWithErrno() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.bme280, bus: bus, address: 0x76)
        chip.inject(.ioError)
        let sensor = BME280(bus: try I2CBus(path: path))
        let error = await #expect(throws: SensorError.self) { try await sensor.read() }
        guard case .io(let code, let detail) = error else {
            Issue.record("expected io, got \(String(describing: error))")
            return
        }
        #expect(code == 5)  // EIO
        #expect(detail.contains("0x76 on \(path)"))
    }
}
