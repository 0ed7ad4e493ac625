import CoatyJSON

/// How long an output stays in a state at least before it switches again: relays, compressors and heaters wear
/// out, or short-cycle, when switched too often. Zero is no minimum.
public struct SwitchingLimits: Sendable, Hashable {
    /// How long the line stays on at least (`minOnTime`).
    public var minimumOn: Duration
    /// How long the line stays off at least (`minOffTime`).
    public var minimumOff: Duration

    public init(minimumOn: Duration = .zero, minimumOff: Duration = .zero) {
        self.minimumOn = minimumOn
        self.minimumOff = minimumOff
    }

    /// How long a line that is `on` must hold that state at least.
    public func minimum(whileOn on: Bool) -> Duration { on ? minimumOn : minimumOff }
}

/// Drives one `DigitalOutput` with an `OutputLogic`: writes the line only when its state changes (and again after a
/// write failed), and not sooner than the `SwitchingLimits` allow.
///
/// A switch that comes too early is suppressed; the logic keeps the state last asked for, and `settle` applies it
/// once the minimum time has passed (the caller asks when, from the `.suppressed` outcome). So a line follows the
/// latest routed value at the rate its limits allow, and ends in the state last asked for. The safe state ignores
/// the limits. The time at which the line got its state counts from the driver's start: an agent that restarts
/// does not switch sooner than the limits allow either. `Instant` is the caller's clock's.
package struct OutputDriver<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    public let line: any DigitalOutput
    public private(set) var logic: OutputLogic
    public let limits: SwitchingLimits
    /// The state the line was last set to; nil after a failed write, so that the next decision writes again.
    private var written: Bool?
    /// When the line got its current state.
    private var since: Instant
    /// When the running pulse ends, for a pulse output.
    private var pulseEnds: Instant?
    /// The length of a pulse asked for while the line could not switch on yet: it counts from the switch.
    private var pendingPulse: Duration?

    /// Sets the line to the logic's state first, so that line and logic agree from the start.
    public init(
        line: any DigitalOutput, logic: OutputLogic, limits: SwitchingLimits = SwitchingLimits(), at now: Instant
    )
        throws(GPIOError)
    {
        try line.set(active: logic.state)
        self.line = line
        self.logic = logic
        self.limits = limits
        written = logic.state
        since = now
    }

    /// The state the line was last set to; nil after a failed write.
    public var lineState: Bool? { written }

    /// When `settle` has to be called next for a pulse to end; nil while none runs.
    public var pulseDeadline: Instant? { pulseEnds }

    /// Applies a routed value.
    public mutating func receive(_ value: JSONValue, at now: Instant) -> OutputOutcome {
        guard let state = logic.receive(value) else { return .rejected(value) }
        if case .pulse(let pulse) = logic.control {
            if state {
                let length = pulse.length(for: value)
                if written == true {
                    // On already: the running pulse restarts or grows.
                    let ends =
                        switch pulse.retrigger {
                        case .restart: now.advanced(by: length)
                        case .extend: min((pulseEnds ?? now).advanced(by: length), now.advanced(by: pulse.maximum))
                        }
                    pulseEnds = ends
                } else {
                    pendingPulse = length
                }
            } else {
                pulseEnds = nil
                pendingPulse = nil
            }
        }
        return apply(state, at: now)
    }

    /// Applies new hysteresis thresholds to the last value received.
    public mutating func retune(_ hysteresis: Hysteresis, at now: Instant) -> OutputOutcome {
        guard let state = logic.retune(hysteresis) else { return .unchanged }
        return apply(state, at: now)
    }

    /// Applies the state last asked for, if a switch to it was suppressed and may happen now.
    public mutating func settle(at now: Instant) -> OutputOutcome {
        if let pulseEnds, now >= pulseEnds {
            self.pulseEnds = nil
            _ = logic.endPulse()
        }
        return apply(logic.state, at: now)
    }

    /// Applies the safe state, whatever the limits say; call it when the IoActor loses its association and on
    /// shutdown. `keep` leaves the line as it is, and drops a suppressed switch.
    public mutating func enterSafeState(at now: Instant) -> OutputOutcome {
        pulseEnds = nil
        pendingPulse = nil
        let state = logic.enterSafeState(lineState: written ?? logic.state)
        return write(state, at: now)
    }

    private mutating func apply(_ state: Bool, at now: Instant) -> OutputOutcome {
        guard state != written else { return .unchanged }
        if let written {
            let holdEnds = since.advanced(by: limits.minimum(whileOn: written))
            if now < holdEnds { return .suppressed(on: state, remaining: now.duration(to: holdEnds)) }
        }
        return write(state, at: now)
    }

    private mutating func write(_ state: Bool, at now: Instant) -> OutputOutcome {
        guard state != written else { return .unchanged }
        do {
            try line.set(active: state)
        } catch {
            written = nil
            return .failed(error)
        }
        written = state
        since = now
        if state, let pendingPulse {
            pulseEnds = now.advanced(by: pendingPulse)
            self.pendingPulse = nil
        }
        return .switched(on: state)
    }
}

/// What an `OutputDriver` did.
package enum OutputOutcome: Sendable, Hashable {
    /// The line was set.
    case switched(on: Bool)
    /// The line already had the state.
    case unchanged
    /// The line keeps its state for `remaining` more, its minimum on or off time; then `settle` applies the state
    /// last asked for.
    case suppressed(on: Bool, remaining: Duration)
    /// The value meant nothing to the output and was ignored.
    case rejected(JSONValue)
    /// Setting the line failed; the next decision tries again.
    case failed(GPIOError)
}
