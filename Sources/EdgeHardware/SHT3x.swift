/// Sensirion SHT30/SHT31/SHT35 temperature and humidity sensor on I2C (address 0x44 or 0x45).
///
/// Each read sends a single-shot measurement command without clock stretching, waits the datasheet's maximum
/// measurement time for the repeatability, and reads both words; the CRC-8 of each word is checked.
public struct SHT3x: Sensor {
    public enum Repeatability: Sendable {
        case high, medium, low

        var command: [UInt8] {
            switch self {
            case .high: [0x24, 0x00]
            case .medium: [0x24, 0x0B]
            case .low: [0x24, 0x16]
            }
        }

        var maximumDuration: Duration {
            switch self {
            case .high: .milliseconds(15)
            case .medium: .milliseconds(6)
            case .low: .milliseconds(4)
            }
        }
    }

    public let device: I2CDevice
    public let repeatability: Repeatability

    /// The datasheet's operating range; the conversion formula spans -45...+130 °C.
    public static let temperatureRange = PlausibleRange(.temperature, -40...125)
    public static let humidityRange = PlausibleRange(.humidity, 0...100)

    public init(bus: I2CBus, address: UInt8 = 0x44, repeatability: Repeatability = .high) {
        device = I2CDevice(bus: bus, address: address)
        self.repeatability = repeatability
    }

    public var label: String { "SHT3x at \(device.location)" }
    public var quantities: [Quantity] { [.temperature, .humidity] }

    public func read() async throws(SensorError) -> [Measurement] {
        try await device.write(repeatability.command)
        // Until the measurement is done the chip does not acknowledge a read; a millisecond beyond the
        // maximum keeps clear of that.
        try await pause(repeatability.maximumDuration + .milliseconds(1))
        let data = try await device.read(count: 6)
        let temperature = try word(data, at: 0, "temperature")
        let humidity = try word(data, at: 3, "humidity")
        return [
            try Self.temperatureRange.measurement(Self.celsius(rawTemperature: temperature)),
            try Self.humidityRange.measurement(Self.relativeHumidity(rawHumidity: humidity)),
        ]
    }

    private func word(_ data: [UInt8], at offset: Int, _ name: String) throws(SensorError) -> UInt16 {
        let expected = Self.crc8(data[offset..<offset + 2])
        guard data[offset + 2] == expected else {
            throw .checksumMismatch(
                "\(label): \(name) word 0x\(hex(data[offset]))\(hex(data[offset + 1])) came with CRC "
                    + "0x\(hex(data[offset + 2])), computed 0x\(hex(expected))")
        }
        return UInt16(data[offset]) << 8 | UInt16(data[offset + 1])
    }

    /// Sensirion's CRC-8: polynomial 0x31, initial value 0xFF, no reflection, no final XOR.
    public static func crc8(_ bytes: some Sequence<UInt8>) -> UInt8 {
        var crc: UInt8 = 0xFF
        for byte in bytes {
            crc ^= byte
            for _ in 0..<8 {
                crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x31 : crc << 1
            }
        }
        return crc
    }

    public static func celsius(rawTemperature raw: UInt16) -> Double {
        -45 + 175 * Double(raw) / 65535
    }

    public static func relativeHumidity(rawHumidity raw: UInt16) -> Double {
        100 * Double(raw) / 65535
    }
}
