import CoatyTesting
import DetachedThread
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@testable import EdgeHardware

/// A sensor that always answers `value` and records when it was read.
private final class SteadySensor: ImmediateSensor {
    let label: String
    let quantities: [Quantity] = [.temperature]
    let value: Double
    private let clock: VirtualClock
    private let reads = Mutex<[Double]>([])

    init(_ value: Double, clock: VirtualClock) {
        self.label = "steady \(value)"
        self.value = value
        self.clock = clock
    }

    /// When it was read, in seconds.
    var readTimes: [Double] { reads.withLock { $0 } }

    func readImmediately(into measurements: inout [Measurement]) throws(SensorError) {
        let offset = clock.now.offset.components
        reads.withLock { $0.append(Double(offset.seconds) + Double(offset.attoseconds) / 1e18) }
        measurements.append(Measurement(.temperature, value))
    }
}

private struct Delivered: Hashable, CustomStringConvertible {
    var time: Double
    var sensor: Int
    var event: SensorEvent

    var description: String { "\(time) s #\(sensor): \(event)" }
}

/// The loop's timer on a `VirtualClock`: a wait moves the clock to its deadline at once; a cancelled task stops.
private struct VirtualTimer: PollLoopTimer {
    let clock: VirtualClock

    func now() -> Duration { clock.now.offset }

    func wait(until deadline: Duration) -> Bool {
        guard !Task.isCancelled else { return false }
        let now = clock.now.offset
        if deadline > now { clock.advance(by: deadline - now) }
        return true
    }
}

/// Runs the loop in a task of its own until `stop` says so after an event (or a scripted sensor's script ends),
/// and returns every event with its time and sensor.
private func run(
    _ loop: SensorPollLoop, on clock: VirtualClock, stop: @escaping @Sendable (Delivered) -> Bool = { _ in false }
) async -> [Delivered] {
    await Task {
        var delivered: [Delivered] = []
        loop.run(timer: VirtualTimer(clock: clock)) { sensor, event in
            let offset = clock.now.offset.components
            let event = Delivered(time: Double(offset.seconds), sensor: sensor, event: event)
            delivered.append(event)
            if stop(event) { withUnsafeCurrentTask { $0?.cancel() } }
        }
        return delivered
    }.value
}

@Suite struct SensorPollLoopTests {
    let clock = VirtualClock()
    let backoff = Backoff(minimum: .seconds(1), maximum: .seconds(8))

    func entry(_ sensor: any ImmediateSensor, every interval: Double, phase: Double = 0) -> SensorPollLoop.Entry {
        .init(
            sensor: sensor, interval: .seconds(interval), backoff: backoff, pipelines: [.temperature: ValuePipeline()],
            phase: .seconds(phase))
    }

    @Test(.timeLimit(.minutes(1)))
    func everySensorIsReadOnItsOwnIntervalAndPhaseAndItsValuesAreItsOwn() async {
        let sensors = [SteadySensor(1, clock: clock), SteadySensor(2, clock: clock), SteadySensor(3, clock: clock)]
        let loop = SensorPollLoop(
            [
                entry(sensors[0], every: 10), entry(sensors[1], every: 10, phase: 5),
                entry(sensors[2], every: 3, phase: 1),
            ],
            coalescing: .zero)
        let delivered = await run(loop, on: clock) { $0.time > 30 }

        #expect(sensors[0].readTimes.filter { $0 <= 30 } == [0, 10, 20, 30])
        #expect(sensors[1].readTimes.filter { $0 <= 30 } == [5, 15, 25])
        #expect(sensors[2].readTimes.filter { $0 <= 30 } == [1, 4, 7, 10, 13, 16, 19, 22, 25, 28])
        // Each value reached the caller with the index of the sensor that read it, at the time it was read.
        for event in delivered {
            #expect(event.event == .value(.temperature, sensors[event.sensor].value), "\(event)")
            #expect(sensors[event.sensor].readTimes.contains(event.time), "\(event)")
        }
        #expect(delivered.count(where: { $0.time <= 30 }) == 4 + 3 + 10)
    }

    @Test(.timeLimit(.minutes(1)))
    func aFailingSensorIsReportedAndRetriedWithBackoffWhileTheOthersKeepTheirSchedule() async {
        let eio = SensorError.io(errno: 5, "/sys/class/thermal/thermal_zone7/temp")
        let failing = ScriptedSensor(clock: clock, [.fail(eio), .fail(eio), .temperature(20), .temperature(21)])
        let steady = SteadySensor(5, clock: clock)
        let loop = SensorPollLoop(
            [entry(failing, every: 10), entry(steady, every: 1)], coalescing: .zero)
        // The scripted sensor ends the run at its fifth read (23 s).
        let delivered = await run(loop, on: clock)

        #expect(failing.readTimes.map(\.offset) == [0, 1, 3, 13, 23].map { Duration.seconds($0) })
        #expect(
            delivered.filter { $0.sensor == 0 && $0.time < 23 } == [
                Delivered(time: 0, sensor: 0, event: .failed(eio)),
                Delivered(time: 3, sensor: 0, event: .recovered(failedAttempts: 2)),
                Delivered(time: 3, sensor: 0, event: .value(.temperature, 20)),
                Delivered(time: 13, sensor: 0, event: .value(.temperature, 21)),
            ])
        // Read every second throughout, while the other one failed and was retried.
        #expect(steady.readTimes.filter { $0 <= 22 } == (0...22).map(Double.init))
    }

    @Test(.timeLimit(.minutes(1)))
    func everyReadIsHandedAnEmptyArrayEvenAfterAReadThatFailedHalfway() async {
        let halfway = HalfwayFailingSensor()
        let steady = SteadySensor(5, clock: clock)
        let loop = SensorPollLoop([entry(halfway, every: 1), entry(steady, every: 1)], coalescing: .zero)
        let delivered = await run(loop, on: clock) { $0.time >= 5 }

        #expect(halfway.countsHandedIn.count >= 6)
        #expect(halfway.countsHandedIn.allSatisfy { $0 == 0 }, "\(halfway.countsHandedIn)")
        // Its good reads (every other one) deliver their one value, not one left over from the read before.
        let values = delivered.filter { $0.sensor == 0 && $0.time <= 5 }.compactMap { event -> Double? in
            guard case .value(_, let value) = event.event else { return nil }
            return value
        }
        #expect(values == [20, 20, 20])
        #expect(
            delivered.filter { $0.sensor == 1 && $0.time <= 5 }.map(\.event)
                == Array(repeating: .value(.temperature, 5), count: 6))
    }

    @Test(.timeLimit(.minutes(1)))
    func aSlowReadIsNotMadeUpAndTheScheduleContinuesFromIt() async {
        // Its read takes 25 s of clock time: two polls come due meanwhile, and one read makes up for both.
        let slow = ScriptedSensor(
            clock: clock, [.slow(.seconds(25), [Measurement(.temperature, 20)]), .temperature(21)])
        let loop = SensorPollLoop([entry(slow, every: 10)], coalescing: .zero)
        let delivered = await run(loop, on: clock)
        #expect(slow.readTimes.map(\.offset) == [0, 25, 35].map { Duration.seconds($0) })
        #expect(delivered.filter { $0.time < 35 }.map(\.event) == [.value(.temperature, 20), .value(.temperature, 21)])
    }

    /// The values of the reads due at one wake-up go out in one call of `together` (one TCP segment for all of
    /// them); a turn with a single value is delivered without it.
    @Test(.timeLimit(.minutes(1)))
    func theEventsOfATurnAreDeliveredInsideOneCallOfTogether() async {
        let sensors = [SteadySensor(1, clock: clock), SteadySensor(2, clock: clock), SteadySensor(3, clock: clock)]
        let loop = SensorPollLoop(
            [entry(sensors[0], every: 10), entry(sensors[1], every: 10), entry(sensors[2], every: 10, phase: 5)],
            coalescing: .zero)
        // Per delivery: its time, its sensor, and which call of `together` it came in (nil: none).
        let deliveries = await Task {
            var deliveries: [(time: Int64, sensor: Int, together: Int?)] = []
            var togetherCalls = 0
            var currentTogether: Int?
            loop.run(
                timer: VirtualTimer(clock: clock),
                together: { delivery in
                    togetherCalls += 1
                    currentTogether = togetherCalls
                    delivery()
                    currentTogether = nil
                }
            ) { sensor, _ in
                let time = clock.now.offset.components.seconds
                deliveries.append((time, sensor, currentTogether))
                if time >= 20 { withUnsafeCurrentTask { $0?.cancel() } }
            }
            return deliveries
        }.value

        // Sensors due at the same instant are read in no particular order.
        let first = deliveries.prefix(5).sorted { ($0.time, $0.sensor) < ($1.time, $1.sensor) }.map {
            "\($0.time) #\($0.sensor) \($0.together.map(String.init) ?? "alone")"
        }
        #expect(first == ["0 #0 1", "0 #1 1", "5 #2 alone", "10 #0 2", "10 #1 2"])
    }

    /// Each wake-up of the loop costs more than a read: reads due within a twentieth of the shortest interval (1 ms
    /// to 5 ms) share one.
    @Test func coalescingIsATwentiethOfTheShortestIntervalFromOneToFiveMilliseconds() {
        func coalescing(_ intervals: [Duration]) -> Duration {
            SensorPollLoop.defaultCoalescing(
                for: intervals.map {
                    .init(sensor: SteadySensor(1, clock: clock), interval: $0, backoff: backoff, pipelines: [:])
                })
        }
        #expect(coalescing([.milliseconds(100)]) == .milliseconds(5))
        #expect(coalescing([.seconds(1), .milliseconds(60)]) == .milliseconds(3))
        #expect(coalescing([.milliseconds(10), .seconds(5)]) == .milliseconds(1))
        #expect(coalescing([.seconds(30)]) == .milliseconds(5))
        #expect(SensorPollLoop([]).coalescing == .milliseconds(5))
    }

    @Test func onlySensorsWhoseReadsNeverWaitShareTheLoop() {
        let sensors: [any Sensor] = [
            ThermalZone(zone: 0, sysfsRoot: "/nonexistent"), DS18B20(deviceId: "28-000000000001", sysfsRoot: "/x"),
        ]
        #expect(sensors.map { $0 is any ImmediateSensor } == [true, false])
    }

    /// `runOnPollThread` reads on a thread of its own ("sensor polls"), never on one of the cooperative threads, and
    /// returns once that thread stopped polling, soon after the task is cancelled, even while it sleeps for a read an
    /// hour away.
    @Test(.timeLimit(.minutes(1)))
    func onItsOwnThreadTheLoopPollsOnTheRealClockAndStopsWhenCancelled() async throws {
        let often = ThreadRecordingSensor()
        let seldom = ThreadRecordingSensor()
        let loop = SensorPollLoop(
            [
                .init(
                    sensor: often, interval: .milliseconds(20), backoff: backoff,
                    pipelines: [.temperature: ValuePipeline()]),
                .init(
                    sensor: seldom, interval: .seconds(3600), backoff: backoff,
                    pipelines: [.temperature: ValuePipeline()], phase: .seconds(3600)),
            ])
        let delivered = Mutex<[Int]>([])
        let polling = Task {
            await loop.runOnPollThread { sensor, _ in delivered.withLock { $0.append(sensor) } }
        }
        try await waitUntil("five reads", timeout: .seconds(30)) { often.threadNames.count >= 5 }
        polling.cancel()
        await polling.value
        let reads = often.threadNames.count
        #expect(Set(often.threadNames) == ["sensor polls"])
        #expect(seldom.threadNames.isEmpty)
        #expect(delivered.withLock { $0 }.allSatisfy { $0 == 0 })
        #expect(delivered.withLock { $0.count } >= 5)
        // The thread stopped before `runOnPollThread` returned: no read after it.
        try await Task.sleep(for: .milliseconds(100))
        #expect(often.threadNames.count == reads)
    }

    /// What a hung I2C transfer does to the cooperative threads (it blocks the one it runs on), tasks here do to all
    /// of them at once: the loop's thread goes on reading meanwhile, and it is these reads that let the tasks go. On
    /// the cooperative pool, the loop could not have read until they gave up.
    @Test(.timeLimit(.minutes(1)))
    func theLoopReadsWhileEveryCooperativeThreadIsBlocked() async throws {
        let width = max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1)
        let blockers = BlockedThreads(count: width)
        let sensor = ThreadRecordingSensor { blockers.readWhileAllBlocked() }
        let loop = SensorPollLoop(
            [.init(sensor: sensor, interval: .milliseconds(10), backoff: backoff, pipelines: [:])])
        let polling = Task { await loop.runOnPollThread { _, _ in } }
        try await waitUntil("the first read", timeout: .seconds(30)) { !sensor.threadNames.isEmpty }
        // As many tasks as the pool has threads, each holding its thread in a blocking wait.
        let released = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<width { group.addTask { blockers.block() } }
            return await group.reduce(true) { $0 && $1 }
        }
        polling.cancel()
        await polling.value
        #expect(released, "the tasks gave up after 20 s: the loop did not read while they held every thread")
        #expect(blockers.readsWhileAllBlocked >= 3)
    }

    @Test(.timeLimit(.minutes(1)))
    func aLoopCancelledBeforeItsThreadStartsReturnsWithoutReading() async {
        let sensor = ThreadRecordingSensor()
        let loop = SensorPollLoop(
            [.init(sensor: sensor, interval: .seconds(1), backoff: backoff, pipelines: [.temperature: ValuePipeline()])]
        )
        let polling = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await loop.runOnPollThread { _, _ in }
        }
        await polling.value
        #expect(sensor.threadNames.isEmpty)
    }
}

/// Tasks that hold their threads in a blocking wait until the reads made while all of them waited let them go.
private final class BlockedThreads: Sendable {
    private let count: Int
    /// Tasks waiting now, reads while all of them waited, and whether they were let go.
    private let state = Mutex<(blocked: Int, reads: Int, isReleased: Bool)>((0, 0, false))

    init(count: Int) {
        self.count = count
    }

    var readsWhileAllBlocked: Int { state.withLock { $0.reads } }

    /// Blocks the calling thread until released (true) or for 20 s (false).
    func block() -> Bool {
        state.withLock { $0.blocked += 1 }
        defer { state.withLock { $0.blocked -= 1 } }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        while clock.now < deadline {
            if state.withLock({ $0.isReleased }) { return true }
            usleep(1000)
        }
        return false
    }

    /// Counts a read if every task is blocked now; the third such read releases them.
    func readWhileAllBlocked() {
        state.withLock { state in
            guard state.blocked == count else { return }
            state.reads += 1
            if state.reads >= 3 { state.isReleased = true }
        }
    }
}

/// A sensor whose every other read (the first, the third, ...) appends a temperature and then fails with EIO, and
/// whose others answer 20 °C; it records how many measurements each read was handed.
private final class HalfwayFailingSensor: ImmediateSensor {
    let label = "halfway failing"
    let quantities: [Quantity] = [.temperature]
    private let counts = Mutex<[Int]>([])

    var countsHandedIn: [Int] { counts.withLock { $0 } }

    func readImmediately(into measurements: inout [Measurement]) throws(SensorError) {
        let handedIn = measurements.count
        let fails = counts.withLock { counts in
            counts.append(handedIn)
            return counts.count % 2 == 1
        }
        measurements.append(Measurement(.temperature, fails ? 99 : 20))
        if fails { throw .io(errno: EIO, "halfway") }
    }
}

/// A sensor that answers 20 °C and records the name of the thread each read ran on.
private final class ThreadRecordingSensor: ImmediateSensor {
    let label = "thread recording"
    let quantities: [Quantity] = [.temperature]
    private let names = Mutex<[String]>([])
    private let onRead: @Sendable () -> Void

    init(onRead: @escaping @Sendable () -> Void = {}) {
        self.onRead = onRead
    }

    var threadNames: [String] { names.withLock { $0 } }

    func readImmediately(into measurements: inout [Measurement]) throws(SensorError) {
        onRead()
        names.withLock { $0.append(currentThreadName()) }
        measurements.append(Measurement(.temperature, 20))
    }
}
