import CoatyJSON

/// The validated `devices` section of the agent's configuration: which hardware backs which IoSource and
/// IoActor. Sources and actors are referred to by their Coaty objectId.
package struct DeviceConfiguration: Sendable, Hashable {
    /// Run every device against emulated chips and lines instead of the hardware.
    public var emulated: Bool
    /// Where sysfs is mounted; 1-Wire devices and thermal zones are read, and PWM channels written, below it.
    public var sysfsRoot: String
    public var sensors: [SensorDevice]
    public var outputs: [OutputDevice]
    public var inputs: [InputDevice]
    /// The `pwm-output` entries of `outputs`.
    public var pwmOutputs: [PWMOutputDevice]
    /// The `pulse-counter` entries of `inputs`.
    public var counters: [CounterDevice]

    public init(
        emulated: Bool = false, sysfsRoot: String = "/sys", sensors: [SensorDevice] = [], outputs: [OutputDevice] = [],
        inputs: [InputDevice] = [], pwmOutputs: [PWMOutputDevice] = [], counters: [CounterDevice] = []
    ) {
        self.emulated = emulated
        self.sysfsRoot = sysfsRoot
        self.sensors = sensors
        self.outputs = outputs
        self.inputs = inputs
        self.pwmOutputs = pwmOutputs
        self.counters = counters
    }
}

/// A sensor polled at an interval; each quantity it publishes goes through its own pipeline to its own IoSource.
package struct SensorDevice: Sendable, Hashable {
    public var driver: SensorDriver
    public var connection: SensorConnection
    public var pollInterval: Duration
    public var retry: Backoff
    /// In the order of `driver.quantities`.
    public var sources: [SourceBinding]
    /// Where the sensor is configured, for messages about it.
    public var path: JSONPath

    /// The pipelines a `SensorPoller` runs, fresh.
    public var pipelines: [Quantity: ValuePipeline] {
        Dictionary(uniqueKeysWithValues: sources.map { ($0.quantity, ValuePipeline($0.filters)) })
    }
}

package enum SensorDriver: String, Sendable, Hashable, CaseIterable {
    case tmp102, mcp9808, lm75, lm75a, sht31, bme280, ds18b20, thermal

    /// What the sensor measures, in the order its driver reads them.
    public var quantities: [Quantity] {
        switch self {
        case .bme280: [.temperature, .humidity, .pressure]
        case .sht31: [.temperature, .humidity]
        case .tmp102, .mcp9808, .lm75, .lm75a, .ds18b20, .thermal: [.temperature]
        }
    }

    /// The addresses the chip can be strapped to, for I2C chips; nil for the others.
    public var i2cAddresses: ClosedRange<UInt8>? {
        switch self {
        case .tmp102: 0x48...0x4B
        case .mcp9808: 0x18...0x1F
        case .lm75, .lm75a: 0x48...0x4F
        case .sht31: 0x44...0x45
        case .bme280: 0x76...0x77
        case .ds18b20, .thermal: nil
        }
    }
}

package enum SensorConnection: Sendable, Hashable {
    /// The bus device path (`/dev/i2c-1`) and the 7-bit address.
    case i2c(bus: String, address: UInt8)
    /// The kernel's device id, `28-xxxxxxxxxxxx`.
    case oneWire(deviceId: String)
    case thermalZone(Int)
}

/// One quantity of a sensor, published by one IoSource.
package struct SourceBinding: Sendable, Hashable {
    public var quantity: Quantity
    public var ioSourceId: String
    public var filters: [ValueFilter]
    public var path: JSONPath
}

/// A GPIO line as the configuration names it: the chip by its name (`gpiochip0`) or its label (`pinctrl-rp1`), and
/// the line by its offset on the chip or its name (`GPIO17`, from the device tree). `GPIOChips.resolve` finds it.
public struct GPIOLineAddress: Sendable, Hashable, CustomStringConvertible {
    public enum Line: Sendable, Hashable {
        case offset(Int)
        case name(String)
    }

    public var chip: String
    public var line: Line

    public init(chip: String, offset: Int) {
        self.chip = chip
        self.line = .offset(offset)
    }

    public init(chip: String, lineName: String) {
        self.chip = chip
        self.line = .name(lineName)
    }

    /// The offset, when the configuration gives it.
    public var offset: Int? {
        if case .offset(let offset) = line { offset } else { nil }
    }

    public var description: String {
        switch line {
        case .offset(let offset): "line \(offset) of \(chip)"
        case .name(let name): "line \(name) of \(chip)"
        }
    }
}

/// A GPIO output line driven by the values routed to an IoActor.
package struct OutputDevice: Sendable, Hashable {
    public var ioActorId: String
    public var line: GPIOLineAddress
    public var activeLow: Bool
    /// The logical state the line is requested with.
    public var initial: Bool
    public var safeState: SafeState
    public var control: OutputControl
    /// How long the line stays on, and off, at least before it switches again (`minOnTime`, `minOffTime`).
    public var limits: SwitchingLimits = SwitchingLimits()
    public var path: JSONPath

    /// The decisions for this line, starting from its initial state.
    public var logic: OutputLogic {
        OutputLogic(control: control, initial: initial, safeState: safeState)
    }
}

/// A GPIO input line published by an IoSource.
package struct InputDevice: Sendable, Hashable {
    public var ioSourceId: String
    public var line: GPIOLineAddress
    public var activeLow: Bool
    /// How long the line must be stable before a change counts; zero for none.
    public var debounce: Duration
    public var mapping: InputMapping
    public var path: JSONPath
}

/// A PWM channel driven by the values routed to an IoActor (`"driver": "pwm-output"`).
package struct PWMOutputDevice: Sendable, Hashable {
    public var ioActorId: String
    /// The chip's directory name below `class/pwm`, `pwmchip0`.
    public var chip: String
    public var channel: Int
    public var settings: PWMSettings
    public var control: PWMControl
    /// The IoSource that publishes the duty the channel runs at, if any.
    public var dutySourceId: String?
    public var path: JSONPath

    public var label: String { "PWM output \(channel) of \(chip)" }
}

/// A GPIO line whose pulses are counted from its edge events (`"driver": "pulse-counter"`).
public struct CounterDevice: Sendable, Hashable {
    public enum Edge: String, Sendable, Hashable, CaseIterable {
        case rising, falling, both
    }

    public var line: GPIOLineAddress
    public var activeLow: Bool
    public var edge: Edge
    /// Edges closer than this to the last counted one are bounces and not counted; zero counts every edge.
    public var debounce: Duration
    /// How often the values are published (when they changed).
    public var publishInterval: Duration
    /// The window the rate is averaged over.
    public var rateWindow: Duration
    /// The rate per second (1) or per minute (60), ...
    public var ratePer: Duration
    /// Pulses per unit of the scaled quantity (450 pulses per litre).
    public var pulsesPerUnit: Double?
    /// Where the total is kept across restarts; nil for a total that starts at zero with the agent.
    public var stateFile: String?
    public var totalSourceId: String?
    public var rateSourceId: String?
    public var quantitySourceId: String?
    public var path: JSONPath

    public var label: String { "pulse counter \(line)" }
    public var sourceIds: [String] { [totalSourceId, rateSourceId, quantitySourceId].compactMap { $0 } }
}
