import EdgeEmulation
import EdgeHardware

#if canImport(Glibc)
    import Glibc
#endif

/// The hardware of a configuration, emulated: the I2C chips on emulated buses, the GPIO chips, and a sysfs tree
/// with the 1-Wire devices and thermal zones. The drivers run unchanged against it; a simulated environment
/// moves the physical values (temperature, humidity, pressure, input levels) so that a demo has something to
/// show.
final class DeviceEmulation: Sendable {
    private struct Chip: Sendable {
        var chip: EmulatedChip
        var phase: Double
    }

    let sysfsRoot: String
    private let chips: [Chip]
    private let oneWireFiles: [(path: String, phase: Double)]
    private let thermalFiles: [(path: String, phase: Double)]
    private let inputs: [(chip: EmulatedGPIOChip, line: Int)]

    init(_ devices: DeviceConfiguration) throws {
        let hardware = try EmulatedHardware()
        let root = EmulatedFiles.temporaryDirectory + "/coaty-edge-emulated-\(getpid())"
        sysfsRoot = root
        var chips: [Chip] = []
        var oneWire: [(String, Double)] = []
        var thermal: [(String, Double)] = []
        for (index, sensor) in devices.sensors.enumerated() {
            let phase = Double(index) * 1.7
            switch sensor.connection {
            case .i2c(let bus, let address):
                guard let number = Int(bus.split(separator: "-").last ?? ""), bus.hasPrefix("/dev/i2c-") else {
                    throw EmulationSetupError("\(sensor.path): cannot emulate the bus \(bus); name it /dev/i2c-N")
                }
                try hardware.addI2CBus(number)
                chips.append(Chip(chip: try hardware.addChip(sensor.driver.emulatedModel, bus: number, address: address), phase: phase))
            case .oneWire(let deviceId):
                let directory = "\(root)/bus/w1/devices/\(deviceId)"
                try EmulatedFiles.makeDirectories(directory)
                oneWire.append(("\(directory)/w1_slave", phase))
            case .thermalZone(let zone):
                let directory = "\(root)/class/thermal/thermal_zone\(zone)"
                try EmulatedFiles.makeDirectories(directory)
                try EmulatedFiles.replace("\(directory)/type", with: "cpu-thermal\n")
                thermal.append(("\(directory)/temp", phase))
            }
        }
        var linesByChip: [String: Int] = [:]
        for line in devices.outputs.map(\.line) + devices.inputs.map(\.line) {
            linesByChip[line.chip] = max(linesByChip[line.chip] ?? 0, line.offset + 1)
        }
        var gpioChips: [String: EmulatedGPIOChip] = [:]
        for (chip, lines) in linesByChip {
            guard let number = Int(chip.split(separator: "gpiochip").last ?? "") else {
                throw EmulationSetupError("cannot emulate the GPIO chip \(chip); name it gpiochipN")
            }
            gpioChips[chip] = try hardware.addGPIOChip(number, lines: max(lines, 32))
        }
        self.chips = chips
        oneWireFiles = oneWire
        thermalFiles = thermal
        inputs = devices.inputs.compactMap { input in gpioChips[input.line.chip].map { ($0, input.line.offset) } }
        try update(at: 0)
    }

    /// Moves the environment along, once per second, until cancelled.
    func simulate() async {
        let start = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            let elapsed = start.duration(to: .now)
            try? update(at: Double(elapsed.components.seconds))
        }
    }

    /// The environment at `t` seconds: temperatures swing slowly between about 18 and 34 °C (thermal zones
    /// between 34 and 62 °C), out of phase; inputs toggle every 20 s.
    private func update(at t: Double) throws {
        func temperature(_ phase: Double) -> Double { 26 + 8 * sin(t / 30 + phase) }
        for chip in chips {
            chip.chip.setTemperature(temperature(chip.phase))
            chip.chip.setHumidity(50 + 15 * sin(t / 45 + chip.phase))
            chip.chip.setPressure(1013 + 5 * sin(t / 120 + chip.phase))
        }
        for file in oneWireFiles {
            let millidegrees = Int((temperature(file.phase) * 1000).rounded())
            let content = "72 01 4b 46 7f ff 0e 10 57 : crc=57 YES\n72 01 4b 46 7f ff 0e 10 57 t=\(millidegrees)\n"
            try EmulatedFiles.replace(file.path, with: content)
        }
        for file in thermalFiles {
            // An SoC runs warmer, and crosses a fan's thresholds around 55 and 60 °C.
            let millidegrees = Int(((48 + 14 * sin(t / 30 + file.phase)) * 1000).rounded())
            try EmulatedFiles.replace(file.path, with: "\(millidegrees)\n")
        }
        let level = Int(t / 20) % 2 == 1
        for input in inputs {
            try input.chip.drive(line: input.line, level)
        }
    }

    func removeFiles() {
        EmulatedFiles.removeTree(sysfsRoot)
    }
}

/// The files of the emulated sysfs tree, written with POSIX calls: the agent's path needs no Foundation.
enum EmulatedFiles {
    /// `$TMPDIR`, or `/tmp`.
    static var temporaryDirectory: String {
        getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    /// Makes the directory and the ones above it that are missing.
    static func makeDirectories(_ path: String) throws(EmulationSetupError) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST { throw failure("cannot make the directory \(prefix)") }
        }
    }

    /// Writes `text` to a new file that takes the place of `path`, so that a reader sees the old or the new content
    /// whole, never an empty or cut file (a thermal zone that keeps the file open notices the rename and reads the path
    /// again).
    static func replace(_ path: String, with text: String) throws(EmulationSetupError) {
        let temporary = path + ".new"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("cannot open \(temporary)") }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let writeError = failure("cannot write \(temporary)")
        close(descriptor)
        guard written == bytes.count else { throw writeError }
        guard rename(temporary, path) == 0 else { throw failure("cannot rename \(temporary) to \(path)") }
    }

    /// Removes the directory and everything below it, as far as it can.
    static func removeTree(_ path: String) {
        if let stream = opendir(path) {
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name == "." || name == ".." { continue }
                let child = path + "/" + name
                if Int32(entry.pointee.d_type) == Int32(DT_DIR) { removeTree(child) } else { unlink(child) }
            }
            closedir(stream)
        }
        rmdir(path)
    }

    private static func failure(_ what: String) -> EmulationSetupError {
        EmulationSetupError("\(what): \(String(cString: strerror(errno)))")
    }
}

struct EmulationSetupError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension SensorDriver {
    var emulatedModel: EmulatedChip.Model {
        switch self {
        case .tmp102: .tmp102
        case .mcp9808: .mcp9808
        case .lm75: .lm75
        case .lm75a: .lm75a
        case .sht31: .sht3x
        case .bme280: .bme280
        case .ds18b20, .thermal: preconditionFailure("\(self) is not an I2C chip")
        }
    }
}
