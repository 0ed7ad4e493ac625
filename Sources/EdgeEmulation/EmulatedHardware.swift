import CEdgeEmulation
import Synchronization

/// Emulated I2C buses with sensor chips and emulated GPIO chips for this process.
///
/// The emulation lives behind device nodes of the process's one umockdev testbed: the real libi2c and libgpiod
/// calls of the drivers reach it through their ioctls, as they would reach the kernel. That takes the umockdev
/// preload (`umockdev-wrapper`, or `UMockdevPreload.reexecuteIfMissing()` first thing in `main`). The testbed
/// redirects every `/sys` path of the process into an empty tree of its own, and `/dev` and `/proc` paths that
/// it has; everything else, sockets included, is untouched.
///
/// Buses, chips and GPIO chips stay until the process ends; add each once. The preload keeps track of at most
/// 50 open device files per process and aborts the process beyond that; while the testbed exists every open
/// `/dev` path counts, emulated or not.
public struct EmulatedHardware: Sendable {
    /// Starts the emulation, or joins it if this process already started it.
    public init() throws(EmulationError) {
        guard UMockdevPreload.isActive else { throw .preloadMissing }
        try call { coaty_emu_start($0, $1) }
    }

    /// Adds the bus `/dev/i2c-<number>` and returns its path. Adding a bus twice is harmless.
    @discardableResult
    public func addI2CBus(_ number: Int) throws(EmulationError) -> String {
        try call { coaty_emu_add_i2c_bus(Int32(clamping: number), $0, $1) }
        return "/dev/i2c-\(number)"
    }

    /// Places a chip on an added bus. It starts with its power-on register values, measuring 21.5 °C,
    /// 45 %RH and 1013.25 hPa.
    public func addChip(_ model: EmulatedChip.Model, bus: Int, address: UInt8) throws(EmulationError) -> EmulatedChip {
        try call { coaty_emu_add_i2c_chip(Int32(clamping: bus), Int32(address), model.cValue, $0, $1) }
        return EmulatedChip(model: model, bus: bus, address: address)
    }

    /// Adds `/dev/gpiochip<number>` with `lines` lines, all inputs at level low.
    public func addGPIOChip(_ number: Int, lines: Int, label: String = "coaty-emulated") throws(EmulationError)
        -> EmulatedGPIOChip
    {
        try call { coaty_emu_add_gpio_chip(Int32(clamping: number), Int32(clamping: lines), label, $0, $1) }
        return EmulatedGPIOChip(number: number)
    }
}

/// One emulated chip on an emulated bus.
public struct EmulatedChip: Sendable, Hashable {
    public enum Model: Sendable, Hashable, CaseIterable {
        case tmp102, mcp9808, lm75, lm75a, sht3x, bme280

        var cValue: coaty_emu_chip_model {
            switch self {
            case .tmp102: COATY_EMU_TMP102
            case .mcp9808: COATY_EMU_MCP9808
            case .lm75: COATY_EMU_LM75
            case .lm75a: COATY_EMU_LM75A
            case .sht3x: COATY_EMU_SHT3X
            case .bme280: COATY_EMU_BME280
            }
        }
    }

    /// A failure the chip shows until it is cleared.
    public enum Fault: Sendable, Hashable {
        /// The chip stops acknowledging its address (EREMOTEIO, as a Raspberry Pi reports it).
        case noAcknowledge
        /// Every transfer fails with EIO.
        case ioError
        /// The identification registers read as another part's: BME280 0x58 (a BMP280), MCP9808 device id 0x02.
        case wrongChipId
        /// The chip sends wrong checksums (SHT3x).
        case corruptChecksum
        /// Measurements on command take a thousand times as long (SHT3x): reads stay unacknowledged for seconds,
        /// so a test sees the chip busy however slowly it runs.
        case slowMeasurement
        /// The chip holds the bus (its clock line low): a transfer to it hangs, blocking the thread that makes it, until
        /// the fault changes; then it fails with ETIMEDOUT, as the adapter's timeout would end it. Other buses go on.
        case holdsBus
    }

    public let model: Model
    public let bus: Int
    public let address: UInt8

    /// The temperature the chip measures from now on, in °C.
    public func setTemperature(_ celsius: Double) {
        set(COATY_EMU_TEMPERATURE, celsius)
    }

    /// The relative humidity the chip measures from now on, in %.
    public func setHumidity(_ percent: Double) {
        set(COATY_EMU_HUMIDITY, percent)
    }

    /// The pressure the chip measures from now on, in hPa.
    public func setPressure(_ hectopascal: Double) {
        set(COATY_EMU_PRESSURE, hectopascal)
    }

    /// Makes the chip fail from now on; nil heals it.
    public func inject(_ fault: Fault?) {
        let value: coaty_emu_fault =
            switch fault {
            case nil: COATY_EMU_FAULT_NONE
            case .noAcknowledge: COATY_EMU_FAULT_NO_ACKNOWLEDGE
            case .ioError: COATY_EMU_FAULT_IO_ERROR
            case .wrongChipId: COATY_EMU_FAULT_WRONG_CHIP_ID
            case .corruptChecksum: COATY_EMU_FAULT_CORRUPT_CHECKSUM
            case .slowMeasurement: COATY_EMU_FAULT_SLOW_MEASUREMENT
            case .holdsBus: COATY_EMU_FAULT_HOLDS_BUS
            }
        // A chip handed out by `addChip` always exists: the call cannot fail.
        _ = coaty_emu_set_chip_fault(Int32(bus), Int32(address), value, nil, 0)
    }

    /// The bus calls (SMBus calls and I2C_RDWR transfers, one ioctl each) that addressed the chip so far.
    public var busCallCount: UInt64 {
        var count: UInt64 = 0
        _ = coaty_emu_chip_bus_calls(Int32(bus), Int32(address), &count, nil, 0)
        return count
    }

    private func set(_ quantity: coaty_emu_quantity, _ value: Double) {
        _ = coaty_emu_set_chip_value(Int32(bus), Int32(address), quantity, value, nil, 0)
    }
}

/// One emulated GPIO chip.
public struct EmulatedGPIOChip: Sendable, Hashable {
    public let number: Int

    public var path: String { "/dev/gpiochip\(number)" }

    /// Drives an input line through physical levels one after the other with no time between them (several
    /// levels make a bounce); an edge-event requester gets one event per change.
    public func drive(line: Int, _ levels: Bool...) throws(EmulationError) {
        try levels.withUnsafeBufferPointer { (buffer) throws(EmulationError) in
            try call {
                coaty_emu_gpio_drive(Int32(number), Int32(clamping: line), buffer.baseAddress, buffer.count, $0, $1)
            }
        }
    }

    /// Names a line, as a device tree's `gpio-line-names` do (`GPIO17`); unnamed lines are `line<offset>`.
    public func name(line: Int, _ name: String) throws(EmulationError) {
        try call { coaty_emu_gpio_name_line(Int32(number), Int32(clamping: line), name, $0, $1) }
    }

    /// The events the kernel's GPIO (v1) event FIFO holds per line request.
    public static let kernelEventFIFODepth = 16

    /// Drives an input line through `count` pulses at `rate` Hz, on a thread of the emulation, each edge on time.
    /// The line's event FIFO holds `fifoDepth` events, by default as many as the kernel's: edges that find it full are
    /// dropped and counted. (In a test process, the emulation's one thread that stands in for the kernel serves every
    /// emulated device: a deeper FIFO keeps its delays, under other tests' traffic, from counting against the reader.)
    public func startPulses(line: Int, rate: Double, count: UInt64, fifoDepth: Int = kernelEventFIFODepth)
        throws(EmulationError)
        -> EmulatedPulseTrain
    {
        var train: OpaquePointer?
        try call {
            coaty_emu_gpio_pulse_train_start(
                Int32(number), Int32(clamping: line), rate, count, max(0, fifoDepth), &train, $0, $1)
        }
        guard let train else { throw .failed("the pulse train did not start") }
        return EmulatedPulseTrain(handle: train)
    }

    /// What a line looks like from the chip's side.
    public func state(line: Int) throws(EmulationError) -> EmulatedLineState {
        var state = coaty_emu_gpio_line_state()
        try call { coaty_emu_gpio_line_state_get(Int32(number), Int32(clamping: line), &state, $0, $1) }
        let consumer = withUnsafeBytes(of: state.consumer) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return EmulatedLineState(
            isRequested: state.requested, isOutput: state.output, isActiveLow: state.active_low,
            bias: EmulatedLineState.Bias(rawValue: Int(state.bias)) ?? .asIs, level: state.level, consumer: consumer)
    }

    /// Makes every call on the line's request fail with `errno` from now on (0 heals it). A reader waiting for
    /// edge events wakes up to the failure.
    public func failRequests(line: Int, errno: Int32) throws(EmulationError) {
        try call { coaty_emu_gpio_fail_line(Int32(number), Int32(clamping: line), errno, $0, $1) }
    }
}

/// A running pulse train; `finish` waits for its end. Finish each train once.
public final class EmulatedPulseTrain: @unchecked Sendable {
    private let handle: OpaquePointer
    private let finished = Mutex(false)

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    /// Waits for the last pulse: the edge events the requester got and those the full FIFO dropped.
    public func finish() -> (delivered: UInt64, dropped: UInt64) {
        let wasFinished = finished.withLock { finished in
            defer { finished = true }
            return finished
        }
        precondition(!wasFinished, "a pulse train is finished once")
        var delivered: UInt64 = 0
        var dropped: UInt64 = 0
        coaty_emu_gpio_pulse_train_finish(handle, &delivered, &dropped)
        return (delivered, dropped)
    }
}

public struct EmulatedLineState: Sendable, Hashable {
    public enum Bias: Int, Sendable {
        case asIs = 0, disabled, pullUp, pullDown
    }

    public var isRequested: Bool
    public var isOutput: Bool
    public var isActiveLow: Bool
    public var bias: Bias
    /// The physical level.
    public var level: Bool
    public var consumer: String
}

public enum EmulationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The process does not run with libumockdev-preload, so the drivers would reach the real device nodes.
    case preloadMissing
    case failed(String)

    public var description: String {
        switch self {
        case .preloadMissing:
            "emulated hardware needs the umockdev preload: run under umockdev-wrapper (LD_PRELOAD must name "
                + "libumockdev-preload)"
        case .failed(let message): "hardware emulation: \(message)"
        }
    }
}

private func call(_ body: (UnsafeMutablePointer<CChar>, Int) -> Int32) throws(EmulationError) {
    var message = [CChar](repeating: 0, count: 256)
    let result = message.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
    if result != 0 {
        throw .failed(String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
