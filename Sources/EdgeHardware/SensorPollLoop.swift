import ElapsedTime

/// Polls many sensors in one task: `run` sleeps until the earliest due read, reads every sensor due then (and within
/// `coalescing` after it) on its own thread, one after the other, and hands the events to its caller there, without a
/// task, a continuation or a thread hop per sensor or per value. A thousand sensors cost one task, one timer and the
/// `SensorSchedule` of each.
///
/// For sensors whose read never waits (`Sensor.readsWithoutWaiting`: a `pread` of a sysfs attribute, microseconds):
/// a read that waited (a conversion time, a 1-Wire transaction of 750 ms) would hold back every other sensor's read,
/// so such sensors keep a `SensorPoller` of their own.
///
/// Each sensor keeps its phase: its reads are due at the start plus its phase and then every interval, as a
/// `SensorSchedule` says; a read due within `coalescing` of a wake-up happens up to that much early, and its schedule
/// advances from its own deadline, so it does not drift. A failing sensor is retried with its backoff and stalls no
/// other.
package struct SensorPollLoop<C: Clock>: Sendable where C.Duration == Duration {
    /// One sensor to poll: its schedule starts when `run` starts.
    package struct Entry: Sendable {
        package var sensor: any Sensor
        package var interval: Duration
        package var backoff: Backoff
        /// The pipelines of the quantities to publish; the sensor's other quantities are read and not published.
        package var pipelines: [Quantity: ValuePipeline]
        /// How long after the start its first read is due.
        package var phase: Duration

        package init(
            sensor: any Sensor, interval: Duration, backoff: Backoff, pipelines: [Quantity: ValuePipeline],
            phase: Duration = .zero
        ) {
            self.sensor = sensor
            self.interval = interval
            self.backoff = backoff
            self.pipelines = pipelines
            self.phase = phase
        }
    }

    package let entries: [Entry]
    package let clock: C
    package let coalescing: Duration

    /// Needs `coalescing >= 0`; without one, `defaultCoalescing(for:)` of the entries.
    package init(_ entries: [Entry], clock: C, coalescing: Duration? = nil) {
        let coalescing = coalescing ?? Self.defaultCoalescing(for: entries)
        precondition(coalescing >= .zero, "coalescing must not be negative")
        self.entries = entries
        self.clock = clock
        self.coalescing = coalescing
    }

    /// A twentieth of the shortest interval, from 1 ms to 5 ms: each wake-up of the loop costs a timer, a thread
    /// wake-up and two context switches, more than a read and its publication, so the loop wakes at most about
    /// 200 times a second, however many sensors are due (1000 zones every 100 ms: 50 reads a wake-up, not 10),
    /// and a read happens at most 5 % of its interval early (its schedule does not drift by it).
    package static func defaultCoalescing(for entries: [Entry]) -> Duration {
        let shortest = entries.map(\.interval).min() ?? .seconds(1)
        return min(max(shortest / 20, .milliseconds(1)), .milliseconds(5))
    }

    /// Polls until the task is cancelled, handing each event to `deliver` with the index of its sensor in `entries`,
    /// in the order they happen. `deliver` runs in this task: what it does delays the next reads. The events of one
    /// turn (the reads due at one wake-up) are delivered after its last read, and when there are several, inside
    /// one call of `together`, so that what they publish can leave together (one TCP segment rather than one each).
    package func run(
        together: (_ delivery: () -> Void) -> Void = { $0() },
        _ deliver: (_ sensor: Int, _ event: SensorEvent) -> Void
    ) async {
        guard !entries.isEmpty else { return }
        // The schedules and the queue count time from the start as a plain `Duration`: over `C.Instant` their code
        // ran unspecialized (the agent's clock is known only in another module), and looking up generic metadata
        // and copying through value witnesses cost more than the reads.
        let start = clock.now
        var schedules = entries.map { entry in
            SensorSchedule(
                interval: entry.interval, backoff: entry.backoff, pipelines: entry.pipelines,
                start: ElapsedInstant(.zero),
                phase: entry.phase)
        }
        let sensors = entries.map(\.sensor)
        var queue = DeadlineHeap<ElapsedInstant, Int>()
        queue.reserveCapacity(schedules.count)
        for index in schedules.indices { queue.insert(index, dueAt: schedules[index].due) }
        var due: [Int] = []
        var events: [(sensor: Int, event: SensorEvent)] = []
        func now() -> ElapsedInstant { ElapsedInstant(start.duration(to: clock.now)) }
        while !Task.isCancelled {
            guard let earliest = queue.earliest else { return }
            if now().advanced(by: coalescing) < earliest {
                do {
                    try await clock.sleep(until: start.advanced(by: earliest.sinceOrigin), tolerance: nil)
                } catch { return }
            } else {
                // Behind schedule: the reads do not wait, so without this the loop would hold its thread for good.
                await Task.yield()
            }
            // Taken out before any is read: a sensor due again at once (a late schedule, a short backoff) waits for
            // the next turn instead of being read again and again in this one.
            let limit = now().advanced(by: coalescing)
            due.removeAll(keepingCapacity: true)
            while let index = queue.popEarliest(through: limit) { due.append(index) }
            for index in due {
                let sensor = sensors[index]
                let result: Result<[Measurement], SensorError>
                do {
                    result = .success(try await sensor.read())
                } catch {
                    result = .failure(error)
                }
                schedules[index].complete(result, of: sensor, at: now()) { events.append((index, $0)) }
                queue.insert(index, dueAt: schedules[index].due)
            }
            if events.count > 1 {
                // `together` calls the delivery before it returns.
                withoutActuallyEscaping(deliver) { deliver in
                    together { for (sensor, event) in events { deliver(sensor, event) } }
                }
            } else if let (sensor, event) = events.first {
                deliver(sensor, event)
            }
            events.removeAll(keepingCapacity: true)
        }
    }
}
