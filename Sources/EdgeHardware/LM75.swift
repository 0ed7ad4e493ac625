/// LM75-compatible temperature sensors on I2C (address 0x48...0x4F): the original 9-bit LM75 (0.5 °C steps)
/// and the 11-bit LM75A (0.125 °C steps). They convert continuously and have no id register to check.
public struct LM75: Sensor {
    public enum Variant: Sendable {
        /// 9-bit, 0.5 °C steps (LM75, LM75B of some makers, DS75 at power-on).
        case lm75
        /// 11-bit, 0.125 °C steps (NXP LM75A).
        case lm75a

        var name: String {
            switch self {
            case .lm75: "LM75"
            case .lm75a: "LM75A"
            }
        }
    }

    public let device: I2CDevice
    public let variant: Variant

    static let temperatureRegister: UInt8 = 0x00
    /// The datasheets' operating range (LM75 and LM75A alike); the registers show up to +127.5 or +127.875 °C.
    public static let temperatureRange = PlausibleRange(.temperature, -55...125)

    public init(bus: I2CBus, address: UInt8 = 0x48, variant: Variant) {
        device = I2CDevice(bus: bus, address: address)
        self.variant = variant
    }

    public var label: String { "\(variant.name) at \(device.location)" }
    public var quantities: [Quantity] { [.temperature] }

    public func read() async throws(SensorError) -> [Measurement] {
        let raw = try await device.readBigEndianWord(register: Self.temperatureRegister)
        return [try Self.temperatureRange.measurement(Self.celsius(temperatureRegister: raw, variant: variant))]
    }

    /// Decodes the temperature register: left-aligned two's complement, 9 or 11 bits.
    public static func celsius(temperatureRegister raw: UInt16, variant: Variant) -> Double {
        let signed = Int16(bitPattern: raw)
        switch variant {
        case .lm75: return Double(signed >> 7) * 0.5
        case .lm75a: return Double(signed >> 5) * 0.125
        }
    }
}
