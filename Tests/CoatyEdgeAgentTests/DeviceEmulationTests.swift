import CoatyTestSupport
import EdgeHardware
import Foundation
import Testing

@testable import CoatyEdgeAgent

/// `"emulated": true` for the Raspberry Pi example: the devices it names (a BME280 on /dev/i2c-1, a DS18B20, the SoC
/// thermal zone, GPIO lines on gpiochip0) are emulated, and the real drivers read them, as `coaty-edge run` and the
/// demo do without hardware.
@Suite(.serialized, .emulatedHardware) struct DeviceEmulationTests {
    @Test func thePiExamplesDevicesAreEmulatedAndReadByTheRealDrivers() async throws {
        let example = AgentConfigurationTests.repository.appendingPathComponent("deploy/example-pi.json").path
        var devices = try #require(try AgentConfiguration.load(file: example).devices)
        devices.emulated = true
        let emulation = try DeviceEmulation(devices)
        defer { emulation.removeFiles() }

        let buses = I2CBusPool()
        var readings: [String: [Quantity: Double]] = [:]
        for device in devices.sensors {
            let sensor = device.makeSensor(buses: buses, sysfsRoot: emulation.sysfsRoot)
            let measurements = try await sensor.read()
            readings[sensor.label] = Dictionary(measurements.map { ($0.quantity, $0.value) }, uniquingKeysWith: { $1 })
        }
        // The simulated environment at its start: air 18...34 °C, 35...65 %RH, 1008...1018 hPa; an SoC 34...62 °C.
        let bme280 = try #require(readings["BME280 at 0x76 on /dev/i2c-1"], "\(readings)")
        #expect((18...34).contains(bme280[.temperature] ?? .nan))
        #expect((35...65).contains(bme280[.humidity] ?? .nan))
        #expect((1008...1018).contains(bme280[.pressure] ?? .nan))
        let soil = try #require(readings["DS18B20 28-0316a2795cff"]?[.temperature], "\(readings)")
        #expect((18...34).contains(soil))
        let soc = try #require(readings["thermal zone 0 (cpu-thermal)"]?[.temperature], "\(readings)")
        #expect((34...62).contains(soc))

        // The lines the example uses exist on the emulated chip and can be requested as it configures them.
        for output in devices.outputs {
            let line = try GPIOOutput(
                chip: output.line.chipPath, line: try #require(output.line.offset), activeLow: output.activeLow,
                initiallyActive: true)
            #expect(try line.isActive())
        }
        for input in devices.inputs {
            let line = try GPIOInput(
                chip: input.line.chipPath, line: try #require(input.line.offset), activeLow: input.activeLow)
            #expect(try line.read() == false)  // the simulated door toggles every 20 s, starting closed
        }
    }
}
