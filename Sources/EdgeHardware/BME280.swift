#if canImport(Glibc)
    import Glibc
#endif
import Synchronization

/// Bosch BME280 temperature, humidity and pressure sensor on I2C (address 0x76 or 0x77).
///
/// Each read starts a forced-mode measurement, waits the datasheet's maximum measurement time and compensates
/// the raw values with the datasheet's double-precision formulas. The chip id (0x60) is checked and the
/// calibration read on the first read and again after any failure, so a replaced or re-powered chip is picked up.
public final class BME280: Sensor {
    public enum Oversampling: UInt8, Sendable, CaseIterable {
        case x1 = 1, x2, x4, x8, x16

        var factor: Double { Double(1 << (rawValue - 1)) }
    }

    public let device: I2CDevice
    public let temperatureOversampling: Oversampling
    public let humidityOversampling: Oversampling
    public let pressureOversampling: Oversampling
    private let calibration = Mutex<Calibration?>(nil)

    static let chipId: UInt8 = 0x60
    enum Register {
        static let calibrationLow: UInt8 = 0x88  // 26 bytes: dig_T1...dig_P9, a reserved byte, dig_H1
        static let chipId: UInt8 = 0xD0
        static let calibrationHigh: UInt8 = 0xE1  // 7 bytes: dig_H2...dig_H6
        static let controlHumidity: UInt8 = 0xF2
        static let status: UInt8 = 0xF3
        static let controlMeasurement: UInt8 = 0xF4
        static let data: UInt8 = 0xF7  // 8 bytes: pressure, temperature (20 bit each), humidity (16 bit)
    }
    /// The datasheet's operating ranges. The compensation formulas give far more from a corrupt raw value (an
    /// all-ones raw temperature reads near 190 °C with a typical calibration), and nothing limits the pressure formula.
    public static let temperatureRange = PlausibleRange(.temperature, -40...85)
    public static let humidityRange = PlausibleRange(.humidity, 0...100)
    public static let pressureRange = PlausibleRange(.pressure, 300...1100)
    static let measuringBit: UInt8 = 0x08
    static let forcedMode: UInt8 = 0x01
    /// What a skipped or not yet measured quantity reads.
    static let skippedTemperatureOrPressure: Int32 = 0x80000
    static let skippedHumidity: Int32 = 0x8000

    /// Oversampling x1 for all three quantities is the datasheet's recommendation for weather monitoring.
    public init(
        bus: I2CBus, address: UInt8 = 0x76, temperatureOversampling: Oversampling = .x1,
        humidityOversampling: Oversampling = .x1, pressureOversampling: Oversampling = .x1
    ) {
        device = I2CDevice(bus: bus, address: address)
        self.temperatureOversampling = temperatureOversampling
        self.humidityOversampling = humidityOversampling
        self.pressureOversampling = pressureOversampling
    }

    public var label: String { "BME280 at \(device.location)" }
    public var quantities: [Quantity] { [.temperature, .humidity, .pressure] }

    /// The datasheet's maximum measurement time for the oversampling settings.
    public var maximumMeasurementTime: Duration {
        let milliseconds =
            1.25 + 2.3 * temperatureOversampling.factor + 2.3 * pressureOversampling.factor + 0.575
            + 2.3 * humidityOversampling.factor + 0.575
        return .microseconds(Int64((milliseconds * 1000).rounded(.up)))
    }

    public func read() async throws(SensorError) -> [Measurement] {
        do {
            return try await measure()
        } catch {
            calibration.withLock { $0 = nil }
            throw error
        }
    }

    private func measure() async throws(SensorError) -> [Measurement] {
        let calibration = try await loadCalibration()
        try await device.writeByte(register: Register.controlHumidity, humidityOversampling.rawValue)
        try await device.writeByte(
            register: Register.controlMeasurement,
            temperatureOversampling.rawValue << 5 | pressureOversampling.rawValue << 2 | Self.forcedMode)
        try await pause(maximumMeasurementTime)
        // The maximum time has passed; a chip still measuring now is not working to its datasheet.
        guard try await device.readByte(register: Register.status) & Self.measuringBit == 0 else {
            throw .invalidReading("\(label) is still measuring after \(maximumMeasurementTime)")
        }
        let data = try await device.readBlock(register: Register.data, count: 8)
        let pressureADC = Int32(data[0]) << 12 | Int32(data[1]) << 4 | Int32(data[2]) >> 4
        let temperatureADC = Int32(data[3]) << 12 | Int32(data[4]) << 4 | Int32(data[5]) >> 4
        let humidityADC = Int32(data[6]) << 8 | Int32(data[7])
        // Each reset value alone is also a possible measurement; all three together mean none took place
        // (the chip was reset between the command and the read).
        guard
            temperatureADC != Self.skippedTemperatureOrPressure || pressureADC != Self.skippedTemperatureOrPressure
                || humidityADC != Self.skippedHumidity
        else {
            throw .invalidReading("\(label) returned its reset values instead of a measurement")
        }
        let temperature = Self.compensateTemperature(adc: temperatureADC, calibration)
        guard let pressure = Self.compensatePressure(adc: pressureADC, fineTemperature: temperature.fine, calibration)
        else {
            throw .invalidReading("\(label) calibration gives no pressure (dig_P1 = 0)")
        }
        let humidity = Self.compensateHumidity(adc: humidityADC, fineTemperature: temperature.fine, calibration)
        return [
            try Self.temperatureRange.measurement(temperature.celsius), try Self.humidityRange.measurement(humidity),
            try Self.pressureRange.measurement(pressure / 100),
        ]
    }

    private func loadCalibration() async throws(SensorError) -> Calibration {
        if let known = calibration.withLock({ $0 }) { return known }
        let id = try await device.readByte(register: Register.chipId)
        guard id == Self.chipId else { throw .wrongChipId(expected: UInt32(Self.chipId), found: UInt32(id)) }
        let loaded = Calibration(
            low: try await device.readBlock(register: Register.calibrationLow, count: 26),
            high: try await device.readBlock(register: Register.calibrationHigh, count: 7))
        calibration.withLock { $0 = loaded }
        return loaded
    }

    /// The trimming parameters the chip stores (datasheet names dig_T1...dig_H6).
    public struct Calibration: Sendable, Hashable {
        public var t1: UInt16, t2: Int16, t3: Int16
        public var p1: UInt16, p2: Int16, p3: Int16, p4: Int16, p5: Int16, p6: Int16, p7: Int16, p8: Int16, p9: Int16
        public var h1: UInt8, h2: Int16, h3: UInt8, h4: Int16, h5: Int16, h6: Int8

        public init(
            t1: UInt16, t2: Int16, t3: Int16, p1: UInt16, p2: Int16, p3: Int16, p4: Int16, p5: Int16, p6: Int16,
            p7: Int16, p8: Int16, p9: Int16, h1: UInt8, h2: Int16, h3: UInt8, h4: Int16, h5: Int16, h6: Int8
        ) {
            (self.t1, self.t2, self.t3) = (t1, t2, t3)
            (self.p1, self.p2, self.p3, self.p4, self.p5, self.p6, self.p7, self.p8, self.p9) =
                (p1, p2, p3, p4, p5, p6, p7, p8, p9)
            (self.h1, self.h2, self.h3, self.h4, self.h5, self.h6) = (h1, h2, h3, h4, h5, h6)
        }

        /// Decodes registers 0x88...0xA1 (`low`, 26 bytes) and 0xE1...0xE7 (`high`, 7 bytes).
        public init(low: [UInt8], high: [UInt8]) {
            precondition(low.count == 26 && high.count == 7, "BME280 calibration is 26 + 7 bytes")
            func unsigned(_ index: Int) -> UInt16 { UInt16(low[index]) | UInt16(low[index + 1]) << 8 }
            func signed(_ index: Int) -> Int16 { Int16(bitPattern: unsigned(index)) }
            self.init(
                t1: unsigned(0), t2: signed(2), t3: signed(4),
                p1: unsigned(6), p2: signed(8), p3: signed(10), p4: signed(12), p5: signed(14), p6: signed(16),
                p7: signed(18), p8: signed(20), p9: signed(22),
                h1: low[25], h2: Int16(bitPattern: UInt16(high[0]) | UInt16(high[1]) << 8), h3: high[2],
                // dig_H4 and dig_H5 are 12-bit signed values that share the nibbles of register 0xE5.
                h4: Int16(Int8(bitPattern: high[3])) << 4 | Int16(high[4] & 0x0F),
                h5: Int16(Int8(bitPattern: high[5])) << 4 | Int16(high[4] >> 4),
                h6: Int8(bitPattern: high[6]))
        }
    }

    /// Degrees Celsius and the fine temperature that pressure and humidity compensation take.
    public static func compensateTemperature(adc: Int32, _ c: Calibration) -> (celsius: Double, fine: Int32) {
        let x = Double(adc)
        let var1 = (x / 16384 - Double(c.t1) / 1024) * Double(c.t2)
        let offset = x / 131072 - Double(c.t1) / 8192
        let var2 = offset * offset * Double(c.t3)
        return ((var1 + var2) / 5120, Int32(var1 + var2))
    }

    /// Pascal, or nil when the calibration makes the formula divide by zero.
    public static func compensatePressure(adc: Int32, fineTemperature: Int32, _ c: Calibration) -> Double? {
        var var1 = Double(fineTemperature) / 2 - 64000
        var var2 = var1 * var1 * Double(c.p6) / 32768
        var2 += var1 * Double(c.p5) * 2
        var2 = var2 / 4 + Double(c.p4) * 65536
        var1 = (Double(c.p3) * var1 * var1 / 524288 + Double(c.p2) * var1) / 524288
        var1 = (1 + var1 / 32768) * Double(c.p1)
        guard var1 != 0 else { return nil }
        var pressure = 1048576 - Double(adc)
        pressure = (pressure - var2 / 4096) * 6250 / var1
        var1 = Double(c.p9) * pressure * pressure / 2147483648
        var2 = pressure * Double(c.p8) / 32768
        return pressure + (var1 + var2 + Double(c.p7)) / 16
    }

    /// Percent relative humidity, limited to 0...100 as the datasheet does.
    public static func compensateHumidity(adc: Int32, fineTemperature: Int32, _ c: Calibration) -> Double {
        var humidity = Double(fineTemperature) - 76800
        humidity =
            (Double(adc) - (Double(c.h4) * 64 + Double(c.h5) / 16384 * humidity))
            * (Double(c.h2) / 65536
                * (1 + Double(c.h6) / 67108864 * humidity
                    * (1 + Double(c.h3) / 67108864 * humidity)))
        humidity *= 1 - Double(c.h1) * humidity / 524288
        return min(max(humidity, 0), 100)
    }
}

/// Sleeps for a conversion. Cancellation ends the read: there is nothing to return.
func pause(_ duration: Duration) async throws(SensorError) {
    do {
        try await Task.sleep(for: duration)
    } catch {
        throw .io(errno: ECANCELED, "read cancelled")
    }
}
