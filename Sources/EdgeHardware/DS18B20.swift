import Dispatch

/// A DS18B20 thermometer on the 1-Wire bus, read through the kernel's w1_therm driver at
/// `<sysfsRoot>/bus/w1/devices/28-xxxxxxxxxxxx/w1_slave`.
///
/// The driver starts a conversion on every read of `w1_slave`, so one read takes up to 750 ms; it runs on the one
/// dispatch queue of all 1-Wire reads, never on a cooperative thread. One queue is one thread at most, however many
/// devices there are, and costs no time: the kernel runs one transaction at a time on a 1-Wire bus anyway.
public struct DS18B20: Sensor {
    /// The kernel's name for the device: the family code 28, a dash and the 48-bit serial number in hex.
    public let deviceId: String
    public let sysfsRoot: String
    private static let queue = DispatchQueue(label: "1-Wire reads")

    /// The range the datasheet specifies; anything outside is a bus error, not a temperature.
    public static let temperatureRange = PlausibleRange(.temperature, -55...125)

    public init(deviceId: String, sysfsRoot: String = "/sys") {
        self.deviceId = deviceId
        self.sysfsRoot = sysfsRoot
    }

    public var label: String { "DS18B20 \(deviceId)" }

    public var quantities: [Quantity] { [.temperature] }

    public func read() async throws(SensorError) -> [Measurement] {
        let path = Self.devicesDirectory(sysfsRoot) + "/" + deviceId + "/w1_slave"
        let text = try await SysfsFile.contents(of: path, on: Self.queue)
        return [try Self.temperatureRange.measurement(try Self.temperature(fromSlaveFile: text, path: path))]
    }

    /// The ids of the DS18B20 devices the kernel has found, sorted; empty when there is no 1-Wire bus.
    public static func discover(sysfsRoot: String = "/sys") -> [String] {
        (SysfsFile.entries(of: devicesDirectory(sysfsRoot)) ?? []).filter(isDeviceId).sorted()
    }

    /// Whether `id` names a DS18B20 the way the kernel does: `28-` and twelve lowercase hex digits.
    public static func isDeviceId(_ id: String) -> Bool {
        let utf8 = Array(id.utf8)
        return utf8.count == 15 && id.hasPrefix("28-")
            && utf8[3...].allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }

    private static func devicesDirectory(_ sysfsRoot: String) -> String {
        sysfsRoot + "/bus/w1/devices"
    }

    /// Parses the two lines w1_therm writes:
    /// ```
    /// 72 01 4b 46 7f ff 0e 10 57 : crc=57 YES
    /// 72 01 4b 46 7f ff 0e 10 57 t=23125
    /// ```
    static func temperature(fromSlaveFile text: String, path: String) throws(SensorError) -> Double {
        let lines = text.split(separator: "\n")
        guard lines.count == 2, let crcMarker = lines[0].firstRange(of: " crc="),
            let temperatureMarker = lines[1].firstRange(of: " t=")
        else { throw SensorError.invalidReading("\(path) holds \(SysfsFile.quoted(text))") }

        switch lines[0][crcMarker.upperBound...].split(separator: " ").last {
        case "YES": break
        case "NO": throw SensorError.checksumMismatch("\(path) reports \(SysfsFile.quoted(lines[0]))")
        default: throw SensorError.invalidReading("\(path) holds \(SysfsFile.quoted(text))")
        }

        let scratchpad = lines[0][..<crcMarker.lowerBound].split(separator: " ").filter { $0 != ":" }
        // A data line held low reads as nine zero bytes, whose CRC is zero too, so the check passes.
        if !scratchpad.isEmpty && scratchpad.allSatisfy({ $0 == "00" }) {
            throw SensorError.invalidReading("\(path) holds an all-zero scratchpad; is the data line shorted?")
        }

        guard let millidegrees = Int(lines[1][temperatureMarker.upperBound...]) else {
            throw SensorError.invalidReading("\(path) holds \(SysfsFile.quoted(text))")
        }
        // The scratchpad holds 85 °C after power-on until the first conversion completes; a device that
        // lost power mid-read shows it too. A real 85.000 °C reads the same and is taken for it: the next read,
        // after the backoff, gets the measurement.
        guard millidegrees != 85_000 else {
            throw SensorError.invalidReading("\(path) holds the power-on value 85 °C, not a measurement")
        }
        return Double(millidegrees) / 1000
    }
}
