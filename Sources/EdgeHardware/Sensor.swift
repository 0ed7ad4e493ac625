/// One quantity a sensor measured.
public struct Measurement: Sendable, Hashable {
    public var quantity: Quantity
    public var value: Double

    public init(_ quantity: Quantity, _ value: Double) {
        self.quantity = quantity
        self.value = value
    }
}

public enum Quantity: String, Sendable, Hashable, CaseIterable {
    /// Degrees Celsius.
    case temperature
    /// Percent relative humidity.
    case humidity
    /// Hectopascal.
    case pressure

    /// The unit its values are in, for messages.
    public var unit: String {
        switch self {
        case .temperature: "°C"
        case .humidity: "%RH"
        case .pressure: "hPa"
        }
    }
}

/// The values a sensor can give for one quantity, from its datasheet. A driver makes each of its measurements
/// through its range, so that a value outside it (a corrupt register, a sysfs file holding garbage, a chip beyond
/// its rating) is a read error that is reported and retried like any other, never a published number.
public struct PlausibleRange: Sendable, Hashable, CustomStringConvertible {
    public let quantity: Quantity
    public let bounds: ClosedRange<Double>

    public init(_ quantity: Quantity, _ bounds: ClosedRange<Double>) {
        self.quantity = quantity
        self.bounds = bounds
    }

    /// The measurement of `value`, or `implausibleReading` when it is outside the range (or not a number).
    public func measurement(_ value: Double) throws(SensorError) -> Measurement {
        guard bounds.contains(value) else { throw .implausibleReading(Measurement(quantity, value), range: self) }
        return Measurement(quantity, value)
    }

    /// "-40...150".
    public var description: String {
        "\(Self.format(bounds.lowerBound))...\(Self.format(bounds.upperBound))"
    }

    /// For messages: at most three decimals (1100.024, not 1100.0235188898673), and a whole number without a
    /// fraction or exponent (9223372036854776, not 9.223372036854776e+15).
    static func format(_ value: Double) -> String {
        let rounded = abs(value) < 1e15 ? (value * 1000).rounded() / 1000 : value
        if rounded == rounded.rounded(), abs(rounded) < 1e18 { return String(Int64(rounded)) }
        return "\(rounded)"
    }
}

/// A physical sensor: a chip on a bus, a 1-Wire device, a thermal zone.
public protocol Sensor: Sendable {
    /// What the sensor is and where, for logs and status: "BME280 at 0x76 on /dev/i2c-1".
    var label: String { get }
    /// The quantities `read()` returns, in that order.
    var quantities: [Quantity] { get }
    /// Takes one reading of every quantity. A device that does not answer, answers wrongly or fails a check
    /// throws; it never returns a made-up number.
    func read() async throws(SensorError) -> [Measurement]
}

/// A sensor whose read returns at once, on the calling thread, without waiting for anything (no conversion time, no
/// bus shared with slow devices): a `pread` of a sysfs attribute, microseconds. Such sensors are all read on the one
/// thread of a `SensorPollLoop`; the others are polled each by a `SensorPoller` of its own.
public protocol ImmediateSensor: Sensor {
    /// `read()`, on the calling thread: appends the reading to `measurements`, which the caller hands in empty. The
    /// poll loop hands the same array to every read, so that a read allocates nothing; an array returned by each
    /// read was an allocation and a free per read (perf at 1000 zones).
    func readImmediately(into measurements: inout [Measurement]) throws(SensorError)
}

extension ImmediateSensor {
    public func read() async throws(SensorError) -> [Measurement] {
        var measurements: [Measurement] = []
        try readImmediately(into: &measurements)
        return measurements
    }
}

public enum SensorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No device answers: NACK/ENXIO on I2C, a missing device node or sysfs file.
    case noDevice(String)
    /// The bus or file failed (EIO, EREMOTEIO, ...).
    case io(errno: Int32, String)
    /// The chip identifies itself as something else.
    case wrongChipId(expected: UInt32, found: UInt32)
    /// The checksum of the data does not match.
    case checksumMismatch(String)
    /// The device answered with data that is not a measurement (a power-on value, an out-of-range raw value).
    case invalidReading(String)
    /// The reading is outside what the sensor can measure (its `PlausibleRange`).
    case implausibleReading(Measurement, range: PlausibleRange)

    public var description: String {
        switch self {
        case .noDevice(let detail): "no device: \(detail)"
        case .io(let errno, let detail): "I/O error \(errno): \(detail)"
        case .wrongChipId(let expected, let found):
            "wrong chip id 0x\(String(found, radix: 16)), expected 0x\(String(expected, radix: 16))"
        case .checksumMismatch(let detail): "checksum mismatch: \(detail)"
        case .invalidReading(let detail): "invalid reading: \(detail)"
        case .implausibleReading(let measurement, let range):
            "implausible reading \(PlausibleRange.format(measurement.value)) \(measurement.quantity.unit) (range \(range))"
        }
    }
}
