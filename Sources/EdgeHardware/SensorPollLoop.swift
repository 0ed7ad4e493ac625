import ElapsedTime

/// Polls many sensors on one thread: `run` sleeps until the earliest due read, reads every sensor due then (and within
/// `coalescing` after it) one after the other, and hands the events to its caller there, without a task, a
/// continuation or a thread hop per sensor or per value. A thousand sensors cost one thread, one timer and the
/// `SensorSchedule` of each. `runOnPollThread` runs it on a thread of its own that sleeps in the kernel until the next
/// reads are due (`PollThread`): a wake-up is that one thread waking, with no timer to re-arm in libdispatch and no
/// hop to the cooperative pool, and no task of the agent can delay the reads.
///
/// For sensors whose reads never wait (`ImmediateSensor`: a `pread` of a sysfs attribute, microseconds): a read that
/// waited (a conversion time, a 1-Wire transaction of 750 ms) would hold back every other sensor's read, so such
/// sensors keep a `SensorPoller` of their own.
///
/// Each sensor keeps its phase: its reads are due at the start plus its phase and then every interval, as a
/// `SensorSchedule` says; a read due within `coalescing` of a wake-up happens up to that much early, and its schedule
/// advances from its own deadline, so it does not drift. A failing sensor is retried with its backoff and stalls no
/// other.
package struct SensorPollLoop: Sendable {
    /// One sensor to poll: its schedule starts when `run` starts.
    package struct Entry: Sendable {
        package var sensor: any ImmediateSensor
        package var interval: Duration
        package var backoff: Backoff
        /// The pipelines of the quantities to publish; the sensor's other quantities are read and not published.
        package var pipelines: [Quantity: ValuePipeline]
        /// How long after the start its first read is due.
        package var phase: Duration

        package init(
            sensor: any ImmediateSensor, interval: Duration, backoff: Backoff, pipelines: [Quantity: ValuePipeline],
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
    package let coalescing: Duration

    /// Needs `coalescing >= 0`; without one, `defaultCoalescing(for:)` of the entries.
    package init(_ entries: [Entry], coalescing: Duration? = nil) {
        let coalescing = coalescing ?? Self.defaultCoalescing(for: entries)
        precondition(coalescing >= .zero, "coalescing must not be negative")
        self.entries = entries
        self.coalescing = coalescing
    }

    /// A twentieth of the shortest interval, from 1 ms to 5 ms: each wake-up of the loop costs a thread wake-up, two
    /// context switches and a TCP segment, more than a read and its publication, so the loop wakes at most about
    /// 200 times a second, however many sensors are due (1000 zones every 100 ms: 50 reads a wake-up, not 10),
    /// and a read happens at most 5 % of its interval early (its schedule does not drift by it).
    package static func defaultCoalescing(for entries: [Entry]) -> Duration {
        let shortest = entries.map(\.interval).min() ?? .seconds(1)
        return min(max(shortest / 20, .milliseconds(1)), .milliseconds(5))
    }

    /// Polls on a thread of its own (`PollThread`) until the task is cancelled, and returns once that thread has
    /// stopped; `together` and `deliver` run on that thread, as `run` says.
    package func runOnPollThread(
        together: @escaping @Sendable (_ delivery: () -> Void) -> Void = { $0() },
        _ deliver: @escaping @Sendable (_ sensor: Int, _ event: SensorEvent) -> Void
    ) async {
        guard !entries.isEmpty else { return }
        await PollThread.run { timer in run(timer: timer, together: together, deliver) }
    }

    /// Polls on the calling thread until `timer` says to stop, handing each event to `deliver` with the index of its
    /// sensor in `entries`, in the order they happen. `deliver` runs on this thread: what it does delays the next
    /// reads, and it must not block. The events of one turn (the reads due at one wake-up) are delivered after its
    /// last read, and when there are several, inside one call of `together`, so that what they publish can leave
    /// together (one TCP segment rather than one each).
    package func run(
        timer: some PollLoopTimer,
        together: (_ delivery: () -> Void) -> Void = { $0() },
        _ deliver: (_ sensor: Int, _ event: SensorEvent) -> Void
    ) {
        guard !entries.isEmpty else { return }
        // The schedules and the queue count time from the start as a plain `Duration` (an `ElapsedInstant`), as the
        // timer does.
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
        // Every read appends to this one array, emptied before each, so that a read allocates nothing.
        var measurements: [Measurement] = []
        measurements.reserveCapacity(Quantity.allCases.count)
        var events: [(sensor: Int, event: SensorEvent)] = []
        func now() -> ElapsedInstant { ElapsedInstant(timer.now()) }
        while let earliest = queue.earliest {
            // Behind schedule (or due within `coalescing`), the timer only says whether to go on.
            let wakeUp = now().advanced(by: coalescing) < earliest ? earliest.sinceOrigin : .zero
            guard timer.wait(until: wakeUp) else { return }
            // Taken out before any is read: a sensor due again at once (a late schedule, a short backoff) waits for
            // the next turn instead of being read again and again in this one.
            let limit = now().advanced(by: coalescing)
            due.removeAll(keepingCapacity: true)
            while let index = queue.popEarliest(through: limit) { due.append(index) }
            for index in due {
                // The sensor and its schedule are used where they lie in their arrays: a copy of either retains
                // every reference in it (perf at 1000 zones).
                let result = Self.read(sensors, at: index, into: &measurements)
                let next = schedules[index].complete(result, of: sensors[index].label, at: now()) {
                    events.append((index, $0))
                }
                queue.insert(index, dueAt: next)
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

extension SensorPollLoop {
    /// Reads the sensor at `index` into `measurements` (emptied first). A function of its own, so that the array is
    /// a parameter, which the compiler knows to stay unchanged during the call: the sensor is then read where it lies.
    /// Inline in `run` (whose array closures capture), it was copied out for every read (an existential copy, which
    /// retains every reference in it; perf at 1000 zones).
    @inline(never)
    fileprivate static func read(
        _ sensors: [any ImmediateSensor], at index: Int, into measurements: inout [Measurement]
    ) -> Result<[Measurement], SensorError> {
        measurements.removeAll(keepingCapacity: true)
        do {
            try sensors[index].readImmediately(into: &measurements)
            return .success(measurements)
        } catch {
            return .failure(error)
        }
    }
}

/// What `SensorPollLoop.run` keeps time and waits with: `PollThread`, or a test's virtual clock.
package protocol PollLoopTimer {
    /// The time since the loop started.
    func now() -> Duration
    /// Blocks the calling thread until `deadline` (the time since the start; at once when it has passed); false when
    /// the loop is to stop instead.
    func wait(until deadline: Duration) -> Bool
}
