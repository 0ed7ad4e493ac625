import Synchronization

/// Microchip MCP9808 temperature sensor on I2C (address 0x18...0x1F).
///
/// The chip converts continuously; a read takes the latest conversion from the ambient temperature register,
/// whose top three bits are alert flags and bit 12 the sign, 0.0625 °C per step at the power-on resolution.
/// The manufacturer id (0x0054) and device id (0x04) are checked on the first read and again after any failure.
public final class MCP9808: Sensor {
    public let device: I2CDevice
    private let identified = Mutex(false)

    enum Register {
        static let ambientTemperature: UInt8 = 0x05
        static let manufacturerId: UInt8 = 0x06
        static let deviceId: UInt8 = 0x07  // device id in the high byte, revision in the low byte
    }
    static let manufacturerId: UInt16 = 0x0054
    static let deviceId: UInt8 = 0x04
    /// The datasheet's operating range, which is also its absolute maximum with power applied. The register shows
    /// -256...+255.9375 °C, but a chip beyond its absolute maximum is out of its rating and its reading is not to be
    /// trusted (nor, most likely, the circuit it should protect), so a value there is a read error.
    public static let temperatureRange = PlausibleRange(.temperature, -40...125)

    public init(bus: I2CBus, address: UInt8 = 0x18) {
        device = I2CDevice(bus: bus, address: address)
    }

    public var label: String { "MCP9808 at \(device.location)" }
    public var quantities: [Quantity] { [.temperature] }

    public func read() async throws(SensorError) -> [Measurement] {
        do {
            if !identified.withLock({ $0 }) {
                try await identify()
                identified.withLock { $0 = true }
            }
            let raw = try await device.readBigEndianWord(register: Register.ambientTemperature)
            return [try Self.temperatureRange.measurement(Self.celsius(ambientTemperatureRegister: raw))]
        } catch {
            identified.withLock { $0 = false }
            throw error
        }
    }

    private func identify() async throws(SensorError) {
        let manufacturer = try await device.readBigEndianWord(register: Register.manufacturerId)
        guard manufacturer == Self.manufacturerId else {
            throw .wrongChipId(expected: UInt32(Self.manufacturerId), found: UInt32(manufacturer))
        }
        let device = UInt8(try await self.device.readBigEndianWord(register: Register.deviceId) >> 8)
        guard device == Self.deviceId else {
            throw .wrongChipId(expected: UInt32(Self.deviceId), found: UInt32(device))
        }
    }

    /// Decodes the ambient temperature register: the alert flags (bits 15...13) dropped, bits 12...0 a
    /// 13-bit two's complement number of 1/16 °C.
    public static func celsius(ambientTemperatureRegister raw: UInt16) -> Double {
        Double(Int16(bitPattern: raw << 3) >> 3) / 16
    }
}
