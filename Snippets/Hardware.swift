// Sensors on their own: the drivers of EdgeHardware read a chip or a thermal zone without an agent around them.
import EdgeHardware

// snippet.thermal
let soc = ThermalZone(zone: 0)
for measurement in try await soc.read() {
    print("\(soc.label): \(measurement.value) \(measurement.quantity.unit)")
}
// snippet.end

// snippet.i2c
let bus = try I2CBus(path: "/dev/i2c-1")
let chip = TMP102(bus: bus, address: 0x48)
for measurement in try await chip.read() {
    print("\(chip.label): \(measurement.value) \(measurement.quantity.unit)")
}
// snippet.end
