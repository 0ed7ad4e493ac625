/// A kernel thermal zone, `<sysfsRoot>/class/thermal/thermal_zoneN`: on a Raspberry Pi, zone 0 is the SoC
/// (`cpu-thermal`).
public struct ThermalZone: ImmediateSensor {
    public let zone: Int
    /// What the kernel calls the zone (its `type` attribute), or nil when it does not say.
    public let type: String?
    public let sysfsRoot: String
    /// Its `temp`, open from the first read on.
    private let temperature: SysfsAttribute

    /// SoC and board zones: below -40 °C no board runs, and SoCs shut themselves down well before 150 °C. The
    /// kernel's "no temperature" value (-274000) and garbage such as INT64_MAX fall outside.
    public static let temperatureRange = PlausibleRange(.temperature, -40...150)

    /// Reads the zone's `type` for its label; the temperature is read by `read()`.
    public init(zone: Int, sysfsRoot: String = "/sys") {
        self.zone = zone
        self.sysfsRoot = sysfsRoot
        let type = (try? SysfsFile.contents(of: Self.directory(zone, sysfsRoot) + "/type")).map(SysfsFile.trimmed)
        self.type = type?.isEmpty == false ? type : nil
        self.temperature = SysfsAttribute(path: Self.directory(zone, sysfsRoot) + "/temp")
    }

    public var label: String {
        "thermal zone \(zone)" + (type.map { " (\($0))" } ?? "")
    }

    public var quantities: [Quantity] { [.temperature] }

    /// Reads on the calling thread: the kernel answers a thermal zone's `temp` from the driver's last conversion or
    /// a register read, in microseconds, so a hop to another thread would cost more than the read.
    public func readImmediately(into measurements: inout [Measurement]) throws(SensorError) {
        measurements.append(try Self.temperatureRange.measurement(Double(try temperature.integer()) / 1000))
    }

    /// The zones the kernel exposes, in zone order; empty when there are none.
    public static func discover(sysfsRoot: String = "/sys") -> [ThermalZone] {
        let prefix = "thermal_zone"
        return (SysfsFile.entries(of: sysfsRoot + "/class/thermal") ?? [])
            .compactMap { $0.hasPrefix(prefix) ? Int($0.dropFirst(prefix.count)) : nil }
            .filter { $0 >= 0 }
            .sorted()
            .map { ThermalZone(zone: $0, sysfsRoot: sysfsRoot) }
    }

    private static func directory(_ zone: Int, _ sysfsRoot: String) -> String {
        sysfsRoot + "/class/thermal/thermal_zone\(zone)"
    }
}
