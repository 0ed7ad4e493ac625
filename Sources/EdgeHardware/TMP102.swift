/// Texas Instruments TMP102 temperature sensor on I2C (address 0x48...0x4B).
///
/// The chip converts continuously (4 Hz by default); a read takes the latest conversion. In normal mode the
/// temperature is 12-bit (-55...+128 °C), in extended mode 13-bit (up to +150 °C), 0.0625 °C per step either
/// way. Bit 0 of the temperature register tells which format it holds, so a read decodes it correctly even
/// while the chip switches; a read that finds the other mode than `range` asks for `range` for the next ones.
public struct TMP102: Sensor {
    public enum Range: Sendable {
        /// 12-bit, -55...+128 °C.
        case normal
        /// 13-bit, -55...+150 °C.
        case extended
    }

    public let device: I2CDevice
    public let range: Range

    enum Register {
        static let temperature: UInt8 = 0x00
        static let configuration: UInt8 = 0x01
    }
    /// EM, bit 4 of the configuration register's second byte.
    static let extendedModeBit: UInt16 = 0x0010

    /// The datasheet's operating range. Normal mode cannot show more than 127.9375 °C; extended mode reaches 150 °C.
    public static let temperatureRange = PlausibleRange(.temperature, -55...150)

    public init(bus: I2CBus, address: UInt8 = 0x48, range: Range = .normal) {
        device = I2CDevice(bus: bus, address: address)
        self.range = range
    }

    public var label: String { "TMP102 at \(device.location)" }
    public var quantities: [Quantity] { [.temperature] }

    public func read() async throws(SensorError) -> [Measurement] {
        let raw = try await device.readBigEndianWord(register: Register.temperature)
        if (raw & 1 == 1) != (range == .extended) {
            let configuration = try await device.readBigEndianWord(register: Register.configuration)
            let wanted =
                range == .extended ? configuration | Self.extendedModeBit : configuration & ~Self.extendedModeBit
            try await device.writeBigEndianWord(register: Register.configuration, wanted)
        }
        return [try Self.temperatureRange.measurement(Self.celsius(temperatureRegister: raw))]
    }

    /// Decodes the temperature register: left-aligned two's complement, 12-bit, or 13-bit when bit 0 is set.
    public static func celsius(temperatureRegister raw: UInt16) -> Double {
        let signed = Int16(bitPattern: raw)
        let steps = raw & 1 == 1 ? signed >> 3 : signed >> 4
        return Double(steps) * 0.0625
    }
}
