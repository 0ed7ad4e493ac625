import CoatyCommunication
import CoatyModel

/// How the values of one IO source reach the wire, given its association, the router's update rate and the
/// source's backpressure strategy. It is rebuilt whenever the association or the rate changes, and a rebuild
/// discards what was scheduled, as in Coaty JS.
///
/// A pure state machine over instants of any clock: `push` values, `advance` time, read `nextDeadline`.
struct IoSourcePipeline<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    enum Mode: Sendable, Equatable {
        /// Not associated: values are dropped.
        case closed
        /// Every value at once.
        case immediate
        /// The latest value once per interval, on a grid that starts when the pipeline is built (RxJS sampleTime).
        case sample(Duration)
        /// A value once the interval passed without a newer one (RxJS debounceTime; Coaty calls it Throttle).
        case debounce(Duration)

        init(isAssociated: Bool, updateRate: Double?, strategy: IoSourceBackpressureStrategy) {
            guard isAssociated else {
                self = .closed
                return
            }
            guard let updateRate, updateRate > 0 else {
                self = .immediate
                return
            }
            let interval = Duration.microseconds(Int64((updateRate * 1000).rounded()))
            switch strategy {
            case .none: self = .immediate
            case .default, .sample: self = .sample(interval)
            case .throttle: self = .debounce(interval)
            }
        }
    }

    private(set) var mode: Mode = .closed
    private var origin: Instant?
    private var pending: IoValue?
    /// When the pending value goes out.
    private(set) var nextDeadline: Instant?

    /// Whether a value waits for its deadline.
    var hasPending: Bool { pending != nil }

    /// Returns whether a value that waited for its deadline was discarded.
    @discardableResult
    mutating func rebuild(_ mode: Mode, at now: Instant) -> Bool {
        defer { pending = nil }
        let discards = pending != nil
        self.mode = mode
        origin = now
        nextDeadline = nil
        return discards
    }

    enum PushResult: Sendable, Equatable {
        case publishNow(IoValue)
        case scheduled
        case dropped
    }

    /// `now` is evaluated only by the strategies that keep time (Sample, Throttle).
    mutating func push(_ value: IoValue, at now: @autoclosure () -> Instant) -> PushResult {
        switch mode {
        case .closed:
            return .dropped
        case .immediate:
            return .publishNow(value)
        case .sample(let interval):
            pending = value
            if nextDeadline == nil, let origin {
                // The first grid instant strictly after now.
                let periods = Int64((origin.duration(to: now()) / interval).rounded(.down)) + 1
                nextDeadline = origin.advanced(by: interval * periods)
            }
            return .scheduled
        case .debounce(let interval):
            pending = value
            nextDeadline = now().advanced(by: interval)
            return .scheduled
        }
    }

    /// The value due at `now`, if any.
    mutating func advance(to now: Instant) -> IoValue? {
        guard let deadline = nextDeadline, deadline <= now, let value = pending else { return nil }
        pending = nil
        nextDeadline = nil
        return value
    }
}
