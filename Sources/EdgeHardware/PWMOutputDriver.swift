import CoatyJSON

/// Which duties a PWM output really runs at: a request at or below zero, or below `stopBelow`, stops it (a fan below
/// its stall duty only hums); any other request runs it between `minimum` and `maximum`. In percent.
public struct DutyRange: Sendable, Hashable {
    public var minimum: Double
    public var maximum: Double
    public var stopBelow: Double

    public init(minimum: Double = 0, maximum: Double = 100, stopBelow: Double = 0) {
        self.minimum = minimum
        self.maximum = maximum
        self.stopBelow = stopBelow
    }

    /// The duty an output runs at for `request` percent.
    public func duty(for request: Double) -> Double {
        guard request > 0, request >= stopBelow else { return 0 }
        return min(max(request, minimum), maximum)
    }
}

/// Full duty (or `duty`) for a moment when a fan starts from standstill: many fans do not spin up at a low duty.
public struct KickStart: Sendable, Hashable {
    public var duty: Double
    public var duration: Duration

    public init(duty: Double = 100, duration: Duration) {
        self.duty = duty
        self.duration = duration
    }
}

/// How a PWM output reads the values routed to it.
package enum PWMControl: Sendable, Hashable {
    /// Numbers are the duty in percent, 0...100.
    case direct
    /// Numbers are an input (a temperature) that a fan curve turns into a duty.
    case curve(CurveSettings)
}

/// A fan curve's points, fixed or from a shared object, and its hysteresis band.
package struct CurveSettings: Sendable, Hashable {
    public enum Points: Sendable, Hashable {
        case fixed(FanCurve)
        /// Key `key` of the shared object `object`; `fallback` while it holds no valid points.
        case shared(object: String, key: String, fallback: FanCurve?)
    }

    public var points: Points
    /// How far the input must fall below the one the duty was raised for before the duty follows it down.
    public var band: Double

    public init(points: Points, band: Double = 0) {
        self.points = points
        self.band = band
    }

    /// The curve in force without shared data: the fixed one or the fallback.
    public var initialCurve: FanCurve? {
        switch points {
        case .fixed(let curve): curve
        case .shared(_, _, let fallback): fallback
        }
    }
}

/// What stays the same for a PWM output while it runs.
package struct PWMSettings: Sendable, Hashable {
    public var frequency: Double
    public var inverted: Bool
    public var range: DutyRange
    public var kickStart: KickStart?
    /// At most this many percent per second, up or down; nil for none.
    public var slewRate: Double?
    /// The duty on a stop and when the actor loses its association, in percent; nil keeps the duty as it is.
    public var safeDuty: Double?
    /// The duty from the start, in percent.
    public var initialDuty: Double

    public init(
        frequency: Double = 25_000, inverted: Bool = false, range: DutyRange = DutyRange(), kickStart: KickStart? = nil,
        slewRate: Double? = nil, safeDuty: Double? = 100, initialDuty: Double = 0
    ) {
        self.frequency = frequency
        self.inverted = inverted
        self.range = range
        self.kickStart = kickStart
        self.slewRate = slewRate
        self.safeDuty = safeDuty
        self.initialDuty = initialDuty
    }
}

/// Drives one `PWMChannel` from routed values: the duty asked for (directly or by a curve), mapped into the duty
/// range, reached through a kick-start from standstill and at most at the slew rate. Writes the channel only when the
/// duty changes. The caller's clock drives it: an outcome with `next` asks for `advance(at:)` then (the kick-start
/// ends, or the slew takes its next step). `Instant` is the caller's clock's.
package struct PWMOutputDriver<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    /// What the driver did; `next` is when to call `advance(at:)`.
    public enum Outcome: Sendable, Hashable {
        /// The channel's duty was set, in percent.
        case set(duty: Double, next: Instant?)
        case unchanged(next: Instant?)
        /// The value meant nothing to the output and was ignored.
        case rejected(JSONValue, reason: String)
        /// Writing the channel failed; the next decision tries again.
        case failed(PWMError)

        public var next: Instant? {
            switch self {
            case .set(_, let next), .unchanged(let next): next
            case .rejected, .failed: nil
            }
        }
    }

    /// How often a slewing duty takes a step.
    public static var slewStep: Duration { .milliseconds(200) }

    public let channel: any PWMChannel
    public let settings: PWMSettings
    public let control: PWMControl
    /// The duty the output heads for, after the range, in percent.
    public private(set) var target: Double
    /// The duty last written, in percent; nil after a failed write, so that the next decision writes again.
    public private(set) var applied: Double?
    /// The curve and its hysteresis state; nil for direct control or while shared points are missing.
    public private(set) var follower: CurveFollower?
    /// How many values meant nothing to this output.
    public private(set) var rejectedValues = 0
    private var kickEnds: Instant?
    /// When the slewing duty last moved (or stood at its target).
    private var lastStep: Instant

    /// Starts the channel at the initial duty.
    public init(channel: any PWMChannel, settings: PWMSettings, control: PWMControl, at now: Instant) throws(PWMError) {
        try channel.start(frequency: settings.frequency, inverted: settings.inverted, duty: settings.initialDuty / 100)
        self.channel = channel
        self.settings = settings
        self.control = control
        target = settings.initialDuty
        applied = settings.initialDuty
        lastStep = now
        if case .curve(let curve) = control, let initial = curve.initialCurve {
            follower = CurveFollower(curve: initial, band: curve.band)
        }
    }

    /// Applies a routed value.
    public mutating func receive(_ value: JSONValue, at now: Instant) -> Outcome {
        guard case .number(let number) = value, number.isFinite else { return reject(value, "not a number") }
        let request: Double
        switch control {
        case .direct:
            guard (0...100).contains(number) else { return reject(value, "a duty is a percentage, 0...100") }
            request = number
        case .curve:
            guard var follower else { return reject(value, "the curve has no points yet") }
            request = follower.duty(for: number)
            self.follower = follower
        }
        return aim(at: settings.range.duty(for: request), now)
    }

    /// New curve points (from a shared object), applied to the last input received.
    public mutating func retune(_ curve: FanCurve, at now: Instant) -> Outcome {
        guard case .curve(let settings) = control else { return .unchanged(next: nil) }
        guard var follower else {
            follower = CurveFollower(curve: curve, band: settings.band)
            return .unchanged(next: nil)
        }
        let request = follower.retune(curve)
        self.follower = follower
        guard let request else { return .unchanged(next: nil) }
        return aim(at: self.settings.range.duty(for: request), now)
    }

    /// Takes the next step towards the target: the end of a kick-start, a step of the slew.
    public mutating func advance(at now: Instant) -> Outcome {
        if let kickEnds {
            guard now >= kickEnds else { return .unchanged(next: kickEnds) }
            self.kickEnds = nil
            // After the kick the fan spins: the target applies at once, not slewed down from the kick's duty.
            lastStep = now
            return write(target, next: nil)
        }
        let current = applied ?? target
        guard current != target else {
            lastStep = now
            return write(target, next: nil)
        }
        if let kick = settings.kickStart, current == 0, target > 0, target < kick.duty {
            let ends = now.advanced(by: kick.duration)
            kickEnds = ends
            return write(kick.duty, next: ends)
        }
        guard let rate = settings.slewRate else { return write(target, next: nil) }
        let elapsed = lastStep.duration(to: now)
        lastStep = now
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let allowed = rate * seconds
        // A fan starts at its minimum duty and stops from it: the duties between zero and the minimum stall it.
        let from = current == 0 ? min(settings.range.minimum, target) : current
        var next = target > from ? min(target, from + allowed) : max(target, from - allowed)
        if target == 0, next < settings.range.minimum { next = 0 }
        return write(next, next: next == target ? nil : now.advanced(by: Self.slewStep))
    }

    /// Applies the safe duty at once, whatever the slew rate; nil safe duty keeps the duty the channel has.
    public mutating func enterSafeState(at now: Instant) -> Outcome {
        kickEnds = nil
        lastStep = now
        guard let safeDuty = settings.safeDuty else {
            target = applied ?? target
            return .unchanged(next: nil)
        }
        target = safeDuty
        return write(safeDuty, next: nil)
    }

    private mutating func aim(at duty: Double, _ now: Instant) -> Outcome {
        // A slew starts now, not when the duty last moved.
        if applied == target, kickEnds == nil { lastStep = now }
        target = Self.tenth(duty)
        if kickEnds != nil {
            // The kick runs to its end; a stop ends it at once.
            if duty == 0 {
                kickEnds = nil
                return write(0, next: nil)
            }
            return .unchanged(next: kickEnds)
        }
        return advance(at: now)
    }

    private mutating func reject(_ value: JSONValue, _ reason: String) -> Outcome {
        rejectedValues += 1
        return .rejected(value, reason: reason)
    }

    /// Duties in tenths of a percent: finer than any fan can tell, and a slew's steps read as the duties they are.
    private static func tenth(_ duty: Double) -> Double { (duty * 10).rounded() / 10 }

    private mutating func write(_ unrounded: Double, next: Instant?) -> Outcome {
        let duty = Self.tenth(unrounded)
        guard duty != applied else { return .unchanged(next: next) }
        do {
            try channel.set(duty: duty / 100)
        } catch {
            applied = nil
            return .failed(error)
        }
        applied = duty
        return .set(duty: duty, next: next)
    }
}
