/// The steps a sensor value goes through before it is published, in the configured order, in the spirit of
/// ESPHome's sensor filters.
///
/// Time is a monotonic `Duration` since any fixed origin (the poller uses its start), passed in with every
/// value, so that the time-dependent heartbeat is exact and testable without a clock.
public struct ValuePipeline: Sendable, Hashable {
    public private(set) var filters: [ValueFilter]

    public init(_ filters: [ValueFilter] = []) {
        self.filters = filters
    }

    /// Runs one reading through every filter and returns what comes out at the end, or nil when a filter
    /// held it back. A value that is not finite is never published: it enters as nothing, which still lets a
    /// heartbeat repeat the last good value.
    public mutating func process(_ value: Double, at time: Duration) -> Double? {
        var current: Double? = value.isFinite ? value : nil
        for index in filters.indices {
            current = filters[index].process(current, at: time)
        }
        return current?.isFinite == true ? current : nil
    }
}

/// One step of a `ValuePipeline`. Each step gets the value that reached it at `time`, or nil when the steps
/// before it let nothing through at that time, and passes on a value or nil.
public enum ValueFilter: Sendable, Hashable {
    case calibrate(LinearCalibration)
    case clamp(Clamp)
    case deadband(Deadband)
    case movingAverage(MovingAverage)
    case round(Rounding)
    case heartbeat(Heartbeat)

    public mutating func process(_ value: Double?, at time: Duration) -> Double? {
        switch self {
        case .calibrate(let filter):
            return value.map(filter.apply)
        case .clamp(let filter):
            return value.flatMap(filter.apply)
        case .round(let filter):
            return value.map(filter.apply)
        case .deadband(var filter):
            defer { self = .deadband(filter) }
            return value.flatMap { filter.process($0) }
        case .movingAverage(var filter):
            defer { self = .movingAverage(filter) }
            return value.map { filter.process($0) }
        case .heartbeat(var filter):
            defer { self = .heartbeat(filter) }
            return filter.process(value, at: time)
        }
    }
}

/// `actual = slope × measured + offset`; a plain offset has slope 1.
public struct LinearCalibration: Sendable, Hashable {
    public var slope: Double
    public var offset: Double

    public init(slope: Double = 1, offset: Double) {
        self.slope = slope
        self.offset = offset
    }

    /// The line through two reference points, each a measured value and the true value at that point;
    /// nil when both were measured at the same value.
    public init?(
        measured first: Double, actual firstActual: Double, measured second: Double, actual secondActual: Double
    ) {
        guard first != second else { return nil }
        slope = (secondActual - firstActual) / (second - first)
        offset = firstActual - slope * first
    }

    public func apply(_ value: Double) -> Double {
        slope * value + offset
    }
}

/// Bounds a value to `lower...upper`. What happens to a value outside is configured: `clamp` moves it to the
/// nearest bound (a humidity of 100.4 % becomes 100 %), `drop` discards it (a glitch of -127 °C is not
/// published as -40 °C).
public struct Clamp: Sendable, Hashable {
    public enum Outside: String, Sendable, Hashable, CaseIterable {
        case clamp
        case drop
    }

    public var lower: Double
    public var upper: Double
    public var outside: Outside

    /// Needs `lower <= upper`; use infinity for an open side.
    public init(lower: Double = -.infinity, upper: Double = .infinity, outside: Outside) {
        precondition(lower <= upper, "clamp bounds out of order")
        self.lower = lower
        self.upper = upper
        self.outside = outside
    }

    public func apply(_ value: Double) -> Double? {
        if value >= lower && value <= upper { return value }
        switch outside {
        case .clamp: return value < lower ? lower : upper
        case .drop: return nil
        }
    }
}

/// Passes a value only when it differs from the last one passed by at least `threshold`; the first value
/// always passes.
public struct Deadband: Sendable, Hashable {
    public var threshold: Double
    public private(set) var lastPassed: Double?

    public init(threshold: Double) {
        self.threshold = threshold
    }

    public mutating func process(_ value: Double) -> Double? {
        if let lastPassed, abs(value - lastPassed) < threshold { return nil }
        lastPassed = value
        return value
    }
}

/// The mean of the last `window` values (fewer until that many arrived), emitted for every value.
public struct MovingAverage: Sendable, Hashable {
    public var window: Int
    public private(set) var values: [Double] = []

    /// Needs `window >= 1`.
    public init(window: Int) {
        precondition(window >= 1, "moving average window must hold at least one value")
        self.window = window
        values.reserveCapacity(window)
    }

    public mutating func process(_ value: Double) -> Double {
        if values.count == window { values.removeFirst() }
        values.append(value)
        // Summed afresh in arrival order: a running sum would drift and make outputs depend on history.
        return values.reduce(0, +) / Double(values.count)
    }
}

/// Rounds to `digits` decimal places, halves away from zero. The result is the nearest double, so 0.1 stays
/// 0.1 and is published as `0.1`.
public struct Rounding: Sendable, Hashable {
    public var digits: Int
    private let scale: Double

    /// Needs `0...15` digits, the precision a double carries.
    public init(digits: Int) {
        precondition((0...15).contains(digits), "rounding digits out of 0...15")
        self.digits = digits
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        self.scale = scale
    }

    public func apply(_ value: Double) -> Double {
        (value * scale).rounded(.toNearestOrAwayFromZero) / scale
    }
}

/// Passes every value at once and, while nothing passes, repeats the last one every `period`, so that a
/// subscriber sees the sensor alive although a deadband holds back unchanged values. It can repeat only when
/// the pipeline runs, that is at each successful poll: its resolution is the poll interval. A sensor that
/// fails is not repeated; its stale value would look fresh.
public struct Heartbeat: Sendable, Hashable {
    public var period: Duration
    private var lastValue: Double?
    private var lastTime: Duration = .zero

    public init(period: Duration) {
        self.period = period
    }

    public mutating func process(_ value: Double?, at time: Duration) -> Double? {
        if let value {
            lastValue = value
            lastTime = time
            return value
        }
        guard let lastValue, time - lastTime >= period else { return nil }
        lastTime = time
        return lastValue
    }
}
