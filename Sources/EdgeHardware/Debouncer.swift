/// Software debouncing of a digital level: a change counts only once the new level has held for `window`.
///
/// Feed it every raw level change with the time it was seen, and ask it at any time whether a change has
/// become stable; `deadline` says when to ask next. A level that flips back within the window never counts.
public struct Debouncer: Sendable {
    public let window: Duration
    /// The last level that counted.
    public private(set) var level: Bool
    private var candidate: (level: Bool, since: ContinuousClock.Instant)?

    public init(window: Duration, level: Bool) {
        self.window = window
        self.level = level
    }

    /// When the level seen last has held for the window, if it differs from `level`.
    public var deadline: ContinuousClock.Instant? {
        candidate.map { $0.since + window }
    }

    /// Takes a raw level seen at `instant`.
    public mutating func observe(_ raw: Bool, at instant: ContinuousClock.Instant) {
        if raw == level {
            candidate = nil
        } else if candidate?.level != raw {
            candidate = (raw, instant)
        }
    }

    /// The new level if the candidate has held for the window by `instant`.
    public mutating func settle(at instant: ContinuousClock.Instant) -> Bool? {
        guard let candidate, instant >= candidate.since + window else { return nil }
        self.candidate = nil
        level = candidate.level
        return level
    }
}
