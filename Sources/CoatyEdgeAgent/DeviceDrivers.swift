import EdgeHardware
import Synchronization

/// The I2C buses of the agent, opened when a sensor first needs one and again after an open failed.
final class I2CBusPool: Sendable {
    private let buses = Mutex<[String: I2CBus]>([:])

    func bus(_ path: String) throws(SensorError) -> I2CBus {
        try buses.withLock { buses throws(SensorError) in
            if let bus = buses[path] { return bus }
            let bus = try I2CBus(path: path)
            buses[path] = bus
            return bus
        }
    }
}

/// An I2C sensor whose driver is made once its bus opens, so that a missing or unreadable bus is a failing
/// sensor that recovers, not an agent that does not start.
final class I2CSensor: Sensor, Sendable {
    let label: String
    let quantities: [Quantity]
    private let busPath: String
    private let pool: I2CBusPool
    private let makeDriver: @Sendable (I2CBus) -> any Sensor
    private let driver = Mutex<(any Sensor)?>(nil)

    init(driver: SensorDriver, bus busPath: String, address: UInt8, pool: I2CBusPool) {
        label = "\(driver.rawValue.uppercased()) at 0x\(String(address, radix: 16)) on \(busPath)"
        quantities = driver.quantities
        self.busPath = busPath
        self.pool = pool
        makeDriver = { bus in
            switch driver {
            case .tmp102: TMP102(bus: bus, address: address)
            case .mcp9808: MCP9808(bus: bus, address: address)
            case .lm75: LM75(bus: bus, address: address, variant: .lm75)
            case .lm75a: LM75(bus: bus, address: address, variant: .lm75a)
            case .sht31: SHT3x(bus: bus, address: address)
            case .bme280: BME280(bus: bus, address: address)
            case .ds18b20, .thermal: preconditionFailure("\(driver) is not an I2C chip")
            }
        }
    }

    func read() async throws(SensorError) -> [Measurement] {
        let sensor = try driver.withLock { driver throws(SensorError) -> any Sensor in
            if let driver { return driver }
            let made = makeDriver(try pool.bus(busPath))
            driver = made
            return made
        }
        return try await sensor.read()
    }
}

extension SensorDevice {
    func makeSensor(buses: I2CBusPool, sysfsRoot: String) -> any Sensor {
        switch connection {
        case .i2c(let bus, let address): I2CSensor(driver: driver, bus: bus, address: address, pool: buses)
        case .oneWire(let deviceId): DS18B20(deviceId: deviceId, sysfsRoot: sysfsRoot)
        case .thermalZone(let zone): ThermalZone(zone: zone, sysfsRoot: sysfsRoot)
        }
    }
}

extension GPIOLineAddress {
    /// The device node of the line's chip.
    var chipPath: String { chip.hasPrefix("/") ? chip : "/dev/" + chip }
}
