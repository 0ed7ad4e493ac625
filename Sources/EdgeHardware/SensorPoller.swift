import Synchronization

/// Polls one sensor at a fixed interval and runs each configured quantity through its pipeline; iterating
/// the poller does the polling, so a consumer that falls behind delays the next poll instead of piling up
/// values.
///
/// Polls are due at the start (plus `phase`) and then every `interval`. A poll that comes due while the previous one is still
/// running (a slow device, a slow consumer) runs as soon as it can and the schedule continues from there;
/// missed polls are not made up. A failed read is retried after `backoff.delay(afterFailures:)` and the
/// regular schedule resumes from the first read that succeeds again. The sequence ends when its task is
/// cancelled; it never ends on its own and never throws.
///
/// Iterate a poller once: each iteration polls the sensor and keeps its own pipeline state; `status` shows the
/// most recent iteration's view.
public struct SensorPoller<C: Clock>: AsyncSequence, Sendable where C.Duration == Duration {
    public typealias Element = SensorEvent
    public typealias Failure = Never

    public let sensor: any Sensor
    public let interval: Duration
    public let backoff: Backoff
    /// The pipelines of the quantities to publish; the sensor's other quantities are read and not published.
    public let pipelines: [Quantity: ValuePipeline]
    public let clock: C
    /// How long after the start the first poll is due: sensors with the same interval are spread over it.
    public let phase: Duration
    /// The timer the poller waits on, shared with the agent's other pollers; without one it sleeps on the clock.
    public let scheduler: PollScheduler<C>?
    private let health = Health()

    /// Needs an `interval` above zero and a `phase` of zero or more.
    public init(
        sensor: any Sensor, interval: Duration, backoff: Backoff, pipelines: [Quantity: ValuePipeline], clock: C,
        phase: Duration = .zero
    ) {
        self.init(
            sensor: sensor, interval: interval, backoff: backoff, pipelines: pipelines, clock: clock, scheduler: nil,
            phase: phase)
    }

    /// A poller that waits on the shared `scheduler`, on its clock.
    public init(
        sensor: any Sensor, interval: Duration, backoff: Backoff, pipelines: [Quantity: ValuePipeline],
        scheduler: PollScheduler<C>, phase: Duration = .zero
    ) {
        self.init(
            sensor: sensor, interval: interval, backoff: backoff, pipelines: pipelines, clock: scheduler.clock,
            scheduler: scheduler, phase: phase)
    }

    private init(
        sensor: any Sensor, interval: Duration, backoff: Backoff, pipelines: [Quantity: ValuePipeline], clock: C,
        scheduler: PollScheduler<C>?, phase: Duration
    ) {
        precondition(interval > .zero, "poll interval must be positive")
        precondition(phase >= .zero, "poll phase must not be negative")
        self.sensor = sensor
        self.interval = interval
        self.backoff = backoff
        self.pipelines = pipelines
        self.clock = clock
        self.phase = phase
        self.scheduler = scheduler
    }

    /// Whether the sensor answers, and if not since when and how often it failed in a row.
    public var status: SensorStatus<C.Instant> {
        health.status.withLock { $0 }
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(poller: self)
    }

    public struct Iterator: AsyncIteratorProtocol {
        private let poller: SensorPoller
        private var schedule: SensorSchedule<C.Instant>
        private var pending: [SensorEvent] = []

        init(poller: SensorPoller) {
            self.poller = poller
            self.schedule = SensorSchedule(
                interval: poller.interval, backoff: poller.backoff, pipelines: poller.pipelines,
                start: poller.clock.now,
                phase: poller.phase)
        }

        public mutating func next() async -> SensorEvent? {
            while true {
                guard !Task.isCancelled else { return nil }
                if !pending.isEmpty { return pending.removeFirst() }
                do {
                    if let scheduler = poller.scheduler {
                        try await scheduler.sleep(until: schedule.due)
                    } else {
                        try await poller.clock.sleep(until: schedule.due, tolerance: nil)
                    }
                } catch { return nil }
                await poll()
            }
        }

        private mutating func poll() async {
            let result: Result<[Measurement], SensorError>
            do {
                result = .success(try await poller.sensor.read())
            } catch {
                result = .failure(error)
            }
            let now = poller.clock.now
            var events: [SensorEvent] = []
            let sensor = poller.sensor
            schedule.complete(result, of: sensor.label, at: now) { events.append($0) }
            pending += events
            let status = schedule.status(at: now)
            poller.health.status.withLock { $0 = status }
        }
    }

    private final class Health: Sendable {
        let status = Mutex<SensorStatus<C.Instant>>(.ok)
    }
}

extension SensorPoller where C == ContinuousClock {
    public init(sensor: any Sensor, interval: Duration, backoff: Backoff, pipelines: [Quantity: ValuePipeline]) {
        self.init(sensor: sensor, interval: interval, backoff: backoff, pipelines: pipelines, clock: ContinuousClock())
    }
}

/// What a poller keeps of one sensor between its reads: its pipelines, when its next read is due and how it has been
/// failing. A value type without locks, so that one task can keep the state of a thousand sensors in an array
/// (`SensorPollLoop`) as cheaply as a `SensorPoller` keeps its one.
///
/// Reads are due at `start` plus `phase` and then every `interval`. A read that comes due while the previous one was
/// still running runs as soon as it can and the schedule continues from there; missed reads are not made up. A failed
/// read is retried after `backoff.delay(afterFailures:)` and the regular schedule resumes from the first read that
/// succeeds again.
package struct SensorSchedule<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    package let interval: Duration
    package let backoff: Backoff
    /// In `Quantity.allCases` order; an array, not a dictionary: a sensor has one to three.
    private var pipelines: [(quantity: Quantity, pipeline: ValuePipeline)]
    /// Where the pipelines' time starts.
    private let origin: Instant
    /// When the next read is due.
    package private(set) var due: Instant
    /// Failed reads in a row, and when the first of them failed.
    private var failures = 0
    private var failingSince: Instant?
    /// The error of the latest failed read while failing, so that a different one is reported.
    private var lastError: SensorError?

    /// Needs an `interval` above zero and a `phase` of zero or more.
    package init(
        interval: Duration, backoff: Backoff, pipelines: [Quantity: ValuePipeline], start: Instant, phase: Duration
    ) {
        precondition(interval > .zero, "poll interval must be positive")
        precondition(phase >= .zero, "poll phase must not be negative")
        self.interval = interval
        self.backoff = backoff
        self.pipelines = Quantity.allCases.compactMap { quantity in pipelines[quantity].map { (quantity, $0) } }
        self.origin = start
        self.due = start.advanced(by: phase)
    }

    /// Takes the result of a read that ended at `now`: hands the events it makes to `deliver` (a recovery, the values
    /// that come out of the pipelines, in the sensor's order, or a failure) and sets when the next read is due, which
    /// it returns. `label` names the sensor in an error; it is not evaluated otherwise (a sensor's label is made of
    /// text, and handing the sensor itself on copied it on every read).
    @discardableResult
    package mutating func complete(
        _ result: Result<[Measurement], SensorError>, of label: @autoclosure () -> String, at now: Instant,
        deliver: (SensorEvent) -> Void
    ) -> Instant {
        var result = result
        // Checked without a closure: one that uses `self` copied the whole schedule on every read (perf).
        if case .success(let measurements) = result, let missing = missingQuantity(in: measurements) {
            result = .failure(.invalidReading("\(label()) returned no \(missing.rawValue)"))
        }
        switch result {
        case .success(let measurements):
            if failures > 0 {
                deliver(.recovered(failedAttempts: failures))
                failures = 0
                failingSince = nil
                lastError = nil
            }
            let time = origin.duration(to: now)
            for measurement in measurements {
                guard let index = pipelines.firstIndex(where: { $0.quantity == measurement.quantity }),
                    let value = pipelines[index].pipeline.process(measurement.value, at: time)
                else { continue }
                deliver(.value(measurement.quantity, value))
            }
            let next = due.advanced(by: interval)
            due = next < now ? now : next
            return due
        case .failure(let error):
            failures += 1
            if failingSince == nil { failingSince = now }
            // A chip that stopped answering and then answers as another part fails for a new reason: the old
            // one would be stale.
            if error != lastError { deliver(.failed(error)) }
            lastError = error
            due = now.advanced(by: backoff.delay(afterFailures: failures))
            return due
        }
    }

    /// Whether the sensor answers, and if not since when and how often it failed in a row.
    package func status(at now: Instant) -> SensorStatus<Instant> {
        guard failures > 0, let lastError else { return .ok }
        return .failing(since: failingSince ?? now, error: lastError, attempts: failures)
    }

    /// The first quantity to publish that the measurements lack, if any.
    private func missingQuantity(in measurements: [Measurement]) -> Quantity? {
        // By index: an element copied out would retain its pipeline's filters.
        for index in pipelines.indices {
            let quantity = pipelines[index].quantity
            if !measurements.contains(where: { $0.quantity == quantity }) { return quantity }
        }
        return nil
    }
}

/// What a `SensorPoller` delivers.
public enum SensorEvent: Sendable, Hashable {
    /// A value that came out of the quantity's pipeline, ready to publish.
    case value(Quantity, Double)
    /// The sensor stopped answering (or never did), or fails for another reason than it last did; it is retried
    /// with backoff. Sent when the failing starts and when the reason changes, not for retries that fail alike;
    /// `SensorPoller.status` has the latest error and the number of attempts.
    case failed(SensorError)
    /// The sensor answers again after `failedAttempts` failed reads in a row.
    case recovered(failedAttempts: Int)
}

public enum SensorStatus<Instant: InstantProtocol>: Sendable, Hashable {
    case ok
    /// Failing since the first failed read, with the latest error and the number of failed reads in a row.
    case failing(since: Instant, error: SensorError, attempts: Int)
}

/// How long to wait before retrying a failing device: `minimum` after the first failure, doubling with each
/// further failure up to `maximum`.
public struct Backoff: Sendable, Hashable {
    public var minimum: Duration
    public var maximum: Duration

    /// Needs `0 < minimum <= maximum`.
    public init(minimum: Duration, maximum: Duration) {
        precondition(minimum > .zero && minimum <= maximum, "backoff needs 0 < minimum <= maximum")
        self.minimum = minimum
        self.maximum = maximum
    }

    public func delay(afterFailures failures: Int) -> Duration {
        var delay = minimum
        var doublings = failures - 1
        while doublings > 0 && delay < maximum {
            delay *= 2
            doublings -= 1
        }
        return min(delay, maximum)
    }
}
