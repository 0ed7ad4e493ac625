import EdgeHardware
import Foundation
import Testing

/// A thermal zone read through the library's driver from a sysfs tree the test writes.
@Suite struct ThermalZoneClientTests {
    @Test func readsAndChecksAZone() async throws {
        let root = FileManager.default.temporaryDirectory.appending(path: "sysfs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let zone = root.appending(path: "class/thermal/thermal_zone0")
        try FileManager.default.createDirectory(at: zone, withIntermediateDirectories: true)
        try "cpu-thermal\n".write(to: zone.appending(path: "type"), atomically: true, encoding: .utf8)
        try "48312\n".write(to: zone.appending(path: "temp"), atomically: true, encoding: .utf8)

        let zones = ThermalZone.discover(sysfsRoot: root.path)
        #expect(zones.map(\.label) == ["thermal zone 0 (cpu-thermal)"])
        let sensor = try #require(zones.first)
        #expect(try await sensor.read() == [Measurement(.temperature, 48.312)])

        // The kernel's "no temperature" is refused, not passed on.
        try "-274000\n".write(to: zone.appending(path: "temp"), atomically: true, encoding: .utf8)
        await #expect(throws: SensorError.self) { try await ThermalZone(zone: 0, sysfsRoot: root.path).read() }
    }
}
