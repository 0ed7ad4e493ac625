import EdgeEmulation
import EdgeHardware
import FoundationEssentials

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
    private let outputs: [(name: String, chip: EmulatedGPIOChip, line: Int)]
    /// The physical level of each output line as the emulated chip sees it, one line each (`gpiochip0 17 1`), written
    /// when one changes: tests and demos in other processes watch the outputs here, from the chip's side.
    var outputLevelsFile: String { sysfsRoot + "/gpio-output-levels" }

    init(_ devices: DeviceConfiguration) throws {
        let hardware = try EmulatedHardware()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("coaty-edge-emulated-\(getpid())").path
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
                chips.append(
                    Chip(
                        chip: try hardware.addChip(sensor.driver.emulatedModel, bus: number, address: address),
                        phase: phase))
            case .oneWire(let deviceId):
                let directory = "\(root)/bus/w1/devices/\(deviceId)"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                oneWire.append(("\(directory)/w1_slave", phase))
            case .thermalZone(let zone):
                let directory = "\(root)/class/thermal/thermal_zone\(zone)"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                try Data("cpu-thermal\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/type"))
                thermal.append(("\(directory)/temp", phase))
            }
        }
        // Chips named by label get the next free numbers; their lines are named GPIO<offset>, as on a Raspberry Pi.
        let addresses = devices.outputs.map(\.line) + devices.inputs.map(\.line) + devices.counters.map(\.line)
        var linesByChip: [String: Int] = [:]
        var namedChips: Set<String> = []
        for line in addresses {
            guard let offset = line.emulatedOffset else {
                throw EmulationSetupError("cannot emulate \(line); name lines GPIO<offset> or give the offset")
            }
            linesByChip[line.chip] = max(linesByChip[line.chip] ?? 0, offset + 1)
            if line.offset == nil || !GPIOChips.isDeviceName(line.chip) { namedChips.insert(line.chip) }
        }
        var numbers: [String: Int] = [:]
        for chip in linesByChip.keys where GPIOChips.isDeviceName(chip) {
            guard let number = Int(chip.split(separator: "gpiochip").last ?? "") else {
                throw EmulationSetupError("cannot emulate the GPIO chip \(chip); name it gpiochipN or by a label")
            }
            numbers[chip] = number
        }
        var nextNumber = (numbers.values.max() ?? -1) + 1
        for chip in linesByChip.keys.sorted() where numbers[chip] == nil {
            numbers[chip] = nextNumber
            nextNumber += 1
        }
        var gpioChips: [String: EmulatedGPIOChip] = [:]
        for (chip, lines) in linesByChip {
            guard let number = numbers[chip] else { continue }
            let count = max(lines, 32)
            let emulated =
                GPIOChips.isDeviceName(chip)
                ? try hardware.addGPIOChip(number, lines: count)
                : try hardware.addGPIOChip(number, lines: count, label: chip)
            if namedChips.contains(chip) {
                for offset in 0..<count { try emulated.name(line: offset, "GPIO\(offset)") }
            }
            gpioChips[chip] = emulated
        }
        for output in devices.pwmOutputs {
            // An exported channel, stopped, as the kernel shows it after `export`.
            let chip = "\(root)/class/pwm/\(output.chip)"
            let channel = "\(chip)/pwm\(output.channel)"
            try FileManager.default.createDirectory(atPath: channel, withIntermediateDirectories: true)
            let count = devices.pwmOutputs.filter { $0.chip == output.chip }.map(\.channel).max().map { $0 + 1 } ?? 1
            try Data("\(count)\n".utf8).write(to: URL(fileURLWithPath: "\(chip)/npwm"))
            try Data().write(to: URL(fileURLWithPath: "\(chip)/export"))
            for (file, content) in [("period", "0"), ("duty_cycle", "0"), ("polarity", "normal"), ("enable", "0")] {
                try Data("\(content)\n".utf8).write(to: URL(fileURLWithPath: "\(channel)/\(file)"))
            }
        }
        self.chips = chips
        oneWireFiles = oneWire
        thermalFiles = thermal
        inputs = devices.inputs.compactMap { input in
            guard let chip = gpioChips[input.line.chip], let offset = input.line.emulatedOffset else { return nil }
            return (chip, offset)
        }
        outputs = devices.outputs.compactMap { output in
            guard let chip = gpioChips[output.line.chip], let offset = output.line.emulatedOffset else { return nil }
            return (output.line.chip, chip, offset)
        }
        try update(at: 0)
    }

    /// Writes `outputLevelsFile` whenever an output line's level changes (looked at every 50 ms), until cancelled.
    func recordOutputLevels() async {
        guard !outputs.isEmpty,
            (try? FileManager.default.createDirectory(atPath: sysfsRoot, withIntermediateDirectories: true)) != nil
        else { return }
        var written: String?
        while !Task.isCancelled {
            let text = outputs.map { output in
                let level = (try? output.chip.state(line: output.line)).map { $0.level ? "1" : "0" } ?? "?"
                return "\(output.name) \(output.line) \(level)\n"
            }.joined()
            if text != written,
                (try? Data(text.utf8).write(to: URL(fileURLWithPath: outputLevelsFile), options: .atomic)) != nil
            {
                written = text
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
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
            try Data(content.utf8).write(to: URL(fileURLWithPath: file.path), options: .atomic)
        }
        for file in thermalFiles {
            // An SoC runs warmer, and crosses a fan's thresholds around 55 and 60 °C.
            let millidegrees = Int(((48 + 14 * sin(t / 30 + file.phase)) * 1000).rounded())
            try Data("\(millidegrees)\n".utf8).write(to: URL(fileURLWithPath: file.path), options: .atomic)
        }
        let level = Int(t / 20) % 2 == 1
        for input in inputs {
            try input.chip.drive(line: input.line, level)
        }
    }

    func removeFiles() {
        try? FileManager.default.removeItem(atPath: sysfsRoot)
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

extension GPIOLineAddress {
    /// The offset of the line on its emulated chip: as configured, or N of a line named GPIO<N>.
    var emulatedOffset: Int? {
        switch line {
        case .offset(let offset): offset
        case .name(let name): name.hasPrefix("GPIO") ? Int(name.dropFirst(4)) : nil
        }
    }
}
