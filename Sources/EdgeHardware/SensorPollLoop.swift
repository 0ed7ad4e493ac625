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

    /// Needs `coalescing >= 0`.
    package init(_ entries: [Entry], clock: C, coalescing: Duration = .milliseconds(1)) {
        precondition(coalescing >= .zero, "coalescing must not be negative")
        self.entries = entries
        self.clock = clock
        self.coalescing = coalescing
    }

    /// Polls until the task is cancelled, handing each event to `deliver` with the index of its sensor in `entries`,
    /// in the order they happen. `deliver` runs in this task: what it does delays the next reads.
    package func run(_ deliver: (_ sensor: Int, _ event: SensorEvent) -> Void) async {
        guard !entries.isEmpty else { return }
        let start = clock.now
        var schedules = entries.map { entry in
            SensorSchedule(
                interval: entry.interval, backoff: entry.backoff, pipelines: entry.pipelines, start: start,
                phase: entry.phase)
        }
        var queue = DeadlineHeap<C.Instant, Int>()
        queue.reserveCapacity(schedules.count)
        for index in schedules.indices { queue.insert(index, dueAt: schedules[index].due) }
        var due: [Int] = []
        while !Task.isCancelled {
            guard let earliest = queue.earliest else { return }
            if clock.now.advanced(by: coalescing) < earliest {
                do { try await clock.sleep(until: earliest, tolerance: nil) } catch { return }
            } else {
                // Behind schedule: the reads do not wait, so without this the loop would hold its thread for good.
                await Task.yield()
            }
            // Taken out before any is read: a sensor due again at once (a late schedule, a short backoff) waits for
            // the next turn instead of being read again and again in this one.
            let limit = clock.now.advanced(by: coalescing)
            due.removeAll(keepingCapacity: true)
            while let index = queue.popEarliest(through: limit) { due.append(index) }
            for index in due {
                let sensor = entries[index].sensor
                let result: Result<[Measurement], SensorError>
                do {
                    result = .success(try await sensor.read())
                } catch {
                    result = .failure(error)
                }
                schedules[index].complete(result, of: sensor, at: clock.now) { deliver(index, $0) }
                queue.insert(index, dueAt: schedules[index].due)
            }
        }
    }
}
