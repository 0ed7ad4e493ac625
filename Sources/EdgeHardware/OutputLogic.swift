import CoatyJSON

/// How an output line follows the values routed to its IoActor.
package enum OutputControl: Sendable, Hashable {
    /// On or off as the values say: `true`/`false`, `1`/`0`, `"on"`/`"off"` in any case.
    case switching
    /// On or off as a number crosses two thresholds, holding the state between them.
    case hysteresis(Hysteresis)
    /// Hysteresis whose thresholds are values of shared objects, which may change at any time.
    case sharedHysteresis(SharedHysteresis)
    /// On for a while, then off again: `true`, `1` or `"on"` for the configured time, a number for that many seconds;
    /// `false`, `0` or `"off"` ends the pulse at once.
    case pulse(PulseSettings)
}

/// A timed output: how long a pulse lasts, and what a new command does while one runs.
package struct PulseSettings: Sendable, Hashable {
    public enum Retrigger: String, Sendable, Hashable, CaseIterable {
        /// The pulse runs for the new time from now.
        case restart
        /// The new time is added to what the pulse has left, up to `maximum` from now.
        case extend
    }

    public var duration: Duration
    /// The longest pulse a command may ask for.
    public var maximum: Duration
    public var retrigger: Retrigger

    public init(duration: Duration, maximum: Duration? = nil, retrigger: Retrigger = .restart) {
        self.duration = duration
        self.maximum = max(maximum ?? duration, duration)
        self.retrigger = retrigger
    }

    /// How long the pulse `value` asks for lasts: a number of seconds (up to `maximum`), else the configured time.
    public func length(for value: JSONValue) -> Duration {
        guard case .number(let seconds) = value, seconds.isFinite, seconds > 0 else { return duration }
        let maximumSeconds = Double(maximum.components.seconds) + Double(maximum.components.attoseconds) / 1e18
        guard seconds < maximumSeconds else { return maximum }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}

/// Hysteresis thresholds read from shared objects (`setpoints.fanOn`), each with a fallback until its object has
/// the value, or fixed.
package struct SharedHysteresis: Sendable, Hashable {
    public enum Threshold: Sendable, Hashable {
        case fixed(Double)
        /// Key `key` of the shared object `object`; `fallback` while it has no number there.
        case shared(object: String, key: String, fallback: Double?)
    }

    public var on: Threshold
    public var off: Threshold
    /// On above `on` and off below `off` (a fan), or on below `on` and off above `off` (a heater).
    public var onWhenHigh: Bool

    public init(on: Threshold, off: Threshold, onWhenHigh: Bool) {
        self.on = on
        self.off = off
        self.onWhenHigh = onWhenHigh
    }

    public var sharedObjectNames: Set<String> {
        Set(
            [on, off].compactMap { threshold in
                if case .shared(let object, _, _) = threshold { object } else { nil }
            })
    }

    /// The two thresholds for the data of the shared objects now (by object name); nil while one has no value.
    public func thresholds(_ data: [String: JSONObject]) -> (on: Double, off: Double)? {
        func value(_ threshold: Threshold) -> Double? {
            switch threshold {
            case .fixed(let value): value
            case .shared(let object, let key, let fallback): data[object]?[key]?.numberValue ?? fallback
            }
        }
        guard let on = value(on), let off = value(off) else { return nil }
        return (on, off)
    }

    /// The hysteresis for `thresholds`; nil when they leave no band between them.
    public func hysteresis(on: Double, off: Double) -> Hysteresis? {
        onWhenHigh ? Hysteresis(onAbove: on, offBelow: off) : Hysteresis(onBelow: on, offAbove: off)
    }

    /// The hysteresis for the data of the shared objects now; nil while a threshold has no value or they leave no band.
    public func hysteresis(_ data: [String: JSONObject]) -> Hysteresis? {
        thresholds(data).flatMap { hysteresis(on: $0.on, off: $0.off) }
    }
}

/// Two thresholds with a band between them in which the state holds, so that a value hovering at one
/// threshold does not make a relay chatter. A fan runs `onAbove: 60, offBelow: 55`; a heater runs
/// `onBelow: 18, offAbove: 21`. A value exactly on a threshold holds the state too.
public struct Hysteresis: Sendable, Hashable {
    /// The threshold past which the output switches on.
    public let on: Double
    /// The threshold past which the output switches off.
    public let off: Double

    /// On above `on`, off below `off`; nil unless `on > off`.
    public init?(onAbove on: Double, offBelow off: Double) {
        guard on > off else { return nil }
        self.on = on
        self.off = off
    }

    /// On below `on`, off above `off`; nil unless `on < off`.
    public init?(onBelow on: Double, offAbove off: Double) {
        guard on < off else { return nil }
        self.on = on
        self.off = off
    }

    /// Whether the output is on when the value rises (a fan) rather than when it falls (a heater).
    public var onWhenHigh: Bool { on > off }

    public func state(for value: Double, current: Bool) -> Bool {
        if onWhenHigh {
            if value > on { return true }
            if value < off { return false }
        } else {
            if value < on { return true }
            if value > off { return false }
        }
        return current
    }
}

/// What an output does when it can no longer trust its input: when its IoActor loses its association and when
/// the agent shuts down.
public enum SafeState: String, Sendable, Hashable, CaseIterable {
    case on
    case off
    /// Leave the line as it is.
    case keep
}

/// The decisions of one output line, without the line: which state it should have after each routed value
/// and when it falls back to its safe state.
package struct OutputLogic: Sendable, Hashable {
    public let control: OutputControl
    public let safeState: SafeState
    /// The state the line should have now.
    public private(set) var state: Bool
    /// How many values meant nothing to this output and were ignored.
    public private(set) var rejectedValues = 0
    /// The thresholds in force, for hysteresis; nil while shared thresholds have no values yet.
    public private(set) var hysteresis: Hysteresis?
    /// The last number received, so that new thresholds apply at once.
    private var lastNumber: Double?

    public init(control: OutputControl, initial: Bool, safeState: SafeState) {
        self.control = control
        self.state = initial
        self.safeState = safeState
        switch control {
        case .switching:
            hysteresis = nil
        case .hysteresis(let fixed):
            hysteresis = fixed
        case .sharedHysteresis(let shared):
            hysteresis = shared.hysteresis([:])
        case .pulse:
            hysteresis = nil
        }
    }

    /// The state after a pulse ran out: off.
    public mutating func endPulse() -> Bool {
        state = false
        return state
    }

    /// New thresholds: the state after applying them to the last value received, or nil when there was none yet.
    public mutating func retune(_ hysteresis: Hysteresis) -> Bool? {
        self.hysteresis = hysteresis
        guard let lastNumber else { return nil }
        state = hysteresis.state(for: lastNumber, current: state)
        return state
    }

    /// The state after `value`, or nil when the value means nothing to this output: then it is counted and
    /// the state holds.
    public mutating func receive(_ value: JSONValue) -> Bool? {
        if case .number(let number) = value, number.isFinite { lastNumber = number }
        guard let next = decide(value) else {
            rejectedValues += 1
            return nil
        }
        state = next
        return next
    }

    /// The state after falling back to the safe state; for `keep`, `lineState`, the state the line has now (a switch
    /// that was held back is given up).
    public mutating func enterSafeState(lineState: Bool) -> Bool {
        switch safeState {
        case .on: state = true
        case .off: state = false
        case .keep: state = lineState
        }
        return state
    }

    private func decide(_ value: JSONValue) -> Bool? {
        switch (control, value) {
        case (.switching, .bool(let on)), (.pulse, .bool(let on)):
            return on
        case (.switching, .number(let number)):
            return number == 1 ? true : number == 0 ? false : nil
        case (.pulse, .number(let seconds)) where seconds.isFinite && seconds >= 0:
            return seconds > 0
        case (.switching, .string(let word)), (.pulse, .string(let word)):
            switch word.lowercased() {
            case "on": return true
            case "off": return false
            default: return nil
            }
        case (.hysteresis, .number(let number)) where number.isFinite,
            (.sharedHysteresis, .number(let number)) where number.isFinite:
            // Without thresholds yet, the state holds.
            return hysteresis?.state(for: number, current: state) ?? state
        default:
            return nil
        }
    }
}
