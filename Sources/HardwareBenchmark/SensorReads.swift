// CPU time of sensor reads apart from the bus. Conversions are timed alone; whole reads run against emulated
// chips, and the CPU time of their bus calls (measured as bare SMBus reads through the same emulation, one
// ioctl each) is taken off. Each figure is the best of five rounds.
import EdgeEmulation
import EdgeHardware

func measure(_ iterations: Int, _ body: () async throws -> Void) async rethrows -> Double {
    var best = Double.infinity
    for _ in 0..<5 {
        let start = cpuNanoseconds()
        for _ in 0..<iterations { try await body() }
        best = min(best, (cpuNanoseconds() - start) / Double(iterations))
    }
    return best
}

func report(_ name: String, _ nanoseconds: Double) {
    let value = "\((nanoseconds * 10).rounded() / 10) ns"
    print(name + String(repeating: " ", count: max(1, 64 - name.count - value.count)) + value)
}

/// Cheap varying inputs, so that the conversions cannot be folded away.
struct XorShift {
    var state: UInt32 = 0x9E37_79B9

    mutating func next() -> UInt32 {
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        return state
    }
}

/// Off the main actor, so that awaiting a driver's read does not hop between executors.
func sensorReads() async throws {
    var random = XorShift()
    var sink = 0.0
    let calibration = BME280.Calibration(
        t1: 27504, t2: 26435, t3: -1000, p1: 36477, p2: -10685, p3: 3024, p4: 2855, p5: 140, p6: -7, p7: 15500,
        p8: -14600, p9: 6000, h1: 75, h2: 362, h3: 0, h4: 313, h5: 50, h6: 30)
    print("conversion alone (CPU time per call)")
    report(
        "BME280 compensation, T + P + H",
        await measure(1_000_000) {
            let adc = Int32(400_000 + random.next() % 200_000)
            let temperature = BME280.compensateTemperature(adc: adc, calibration)
            sink += temperature.celsius
            sink += BME280.compensatePressure(adc: adc, fineTemperature: temperature.fine, calibration) ?? 0
            sink += BME280.compensateHumidity(adc: adc >> 4, fineTemperature: temperature.fine, calibration)
        })
    report(
        "SHT3x CRC of both words + conversion",
        await measure(1_000_000) {
            let raw = UInt16(truncatingIfNeeded: random.next())
            sink += Double(SHT3x.crc8([UInt8(raw >> 8), UInt8(raw & 0xFF)]))
            sink += Double(SHT3x.crc8([UInt8(raw & 0xFF), UInt8(raw >> 8)]))
            sink += SHT3x.celsius(rawTemperature: raw) + SHT3x.relativeHumidity(rawHumidity: raw)
        })
    report(
        "TMP102 conversion",
        await measure(1_000_000) {
            sink += TMP102.celsius(temperatureRegister: UInt16(truncatingIfNeeded: random.next()))
        })

    let hardware = try EmulatedHardware()
    let path = try hardware.addI2CBus(1)
    let bus = try I2CBus(path: path)
    let chips = try [
        (EmulatedChip.Model.tmp102, UInt8(0x48)), (.mcp9808, 0x18), (.lm75a, 0x49), (.sht3x, 0x44), (.bme280, 0x76),
    ].map { try hardware.addChip($0.0, bus: 1, address: $0.1) }

    let bare = I2CDevice(bus: bus, address: 0x48)
    let callCost = try await measure(5_000) { sink += Double(try await bare.readWord(register: 0)) }
    print("\nthrough the emulated bus (process CPU time, umockdev's thread included)")
    report("one bus call: bare SMBus word read", callCost)

    let sensors: [any Sensor] = [
        TMP102(bus: bus, address: 0x48), MCP9808(bus: bus, address: 0x18),
        LM75(bus: bus, address: 0x49, variant: .lm75a), SHT3x(bus: bus, address: 0x44, repeatability: .low),
        BME280(bus: bus, address: 0x76),
    ]
    for (sensor, chip) in zip(sensors, chips) {
        let iterations = chip.model == .sht3x || chip.model == .bme280 ? 100 : 5_000
        _ = try await sensor.read()
        let callsBefore = chip.busCallCount
        let perRead = try await measure(iterations) { sink += try await sensor.read()[0].value }
        let calls = Double(chip.busCallCount - callsBefore) / Double(iterations * 5)
        let name = String(sensor.label.prefix { $0 != " " })
        report("\(name) read, \(Int(calls.rounded())) bus calls", perRead)
        report("  without the bus calls", perRead - calls * callCost)
    }
    if sink == .infinity { print(sink) }
}
