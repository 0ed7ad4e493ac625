import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@testable import EdgeHardware

/// A clock whose time moves only when the test advances it; sleepers wait until then. It counts who sleeps on it, so
/// that a test sees how many timers the scheduler and its waiters hold.
final class ManualClock: Clock {
    typealias Instant = VirtualClock.Instant

    private struct Sleeper {
        var id: Int
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private let state = Mutex<(now: Instant, sleepers: [Sleeper], nextId: Int, sleeps: Int)>(
        (VirtualClock.at(0), [], 0, 0))

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .nanoseconds(1) }
    /// Sleeps under way now.
    var sleeperCount: Int { state.withLock { $0.sleepers.count } }
    /// Sleeps begun so far.
    var sleeps: Int { state.withLock { $0.sleeps } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state in
            state.nextId += 1
            state.sleeps += 1
            return state.nextId
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let sleeper: Sleeper? = state.withLock { state in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time to `seconds` and wakes the sleepers due then.
    func advance(to seconds: Double) {
        let due: [Sleeper] = state.withLock { state in
            state.now = max(state.now, VirtualClock.at(seconds))
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}

/// Clock times in seconds, recorded from any task.
final class Times: Sendable {
    private let recorded = Mutex<[Double]>([])

    var all: [Double] { recorded.withLock { $0 } }

    func record(_ instant: VirtualClock.Instant) {
        let offset = instant.offset.components
        recorded.withLock { $0.append(Double(offset.seconds) + Double(offset.attoseconds) / 1e18) }
    }
}

/// Polls `condition` until it holds; the scheduler's tasks run on other threads.
private func eventually(_ what: Comment, _ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + .seconds(30)
    while !condition() && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(2)) }
    #expect(condition(), what)
}

@Suite struct PollSchedulerTests {
    let clock = ManualClock()

    /// Starts a waiter for `seconds` that records when it woke, and returns once it is queued.
    private func wait(
        _ scheduler: PollScheduler<ManualClock>, until seconds: Double, woken: Times
    ) async -> Task<Void, any Error> {
        let queuedBefore = scheduler.queuedCount
        let task = Task { [clock] in
            try await scheduler.sleep(until: VirtualClock.at(seconds))
            woken.record(clock.now)
        }
        await eventually("the waiter for \(seconds) s is queued") { scheduler.queuedCount == queuedBefore + 1 }
        return task
    }

    @Test(.timeLimit(.minutes(1)))
    func oneTimerWakesEveryWaiterAtItsDeadline() async throws {
        let scheduler = PollScheduler(clock: clock, coalescing: .zero)
        let timer = Task { await scheduler.run() }
        defer { timer.cancel() }
        let woken = Times()
        var waiters: [Task<Void, any Error>] = []
        for second in 1...50 { waiters.append(await wait(scheduler, until: Double(second), woken: woken)) }
        // Fifty pollers waiting, one sleep on the clock: the timer's.
        #expect(clock.sleeperCount == 1)

        clock.advance(to: 20)
        await eventually("the first twenty woke") { woken.all.count == 20 }
        #expect(woken.all == Array(repeating: 20, count: 20))
        #expect(scheduler.queuedCount == 30)
        await eventually("the timer sleeps for the next") { clock.sleeperCount == 1 }

        clock.advance(to: 50)
        for waiter in waiters { try await waiter.value }
        #expect(woken.all.count == 50)
        #expect(scheduler.queuedCount == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func waitersDueWithinTheCoalescingWindowShareAWakeUp() async throws {
        let scheduler = PollScheduler(clock: clock, coalescing: .milliseconds(1))
        let timer = Task { await scheduler.run() }
        defer { timer.cancel() }
        let woken = Times()
        let first = await wait(scheduler, until: 10, woken: woken)
        let close = await wait(scheduler, until: 10.0005, woken: woken)
        let later = await wait(scheduler, until: 10.002, woken: woken)
        await eventually("the timer sleeps until 10 s") { clock.sleeperCount == 1 }
        let sleepsBefore = clock.sleeps

        clock.advance(to: 10)
        try await first.value
        try await close.value
        #expect(woken.all == [10, 10])
        #expect(scheduler.queuedCount == 1)
        clock.advance(to: 10.002)
        try await later.value
        // One sleep of the timer for the pair and one for the third; none of the waiters slept on its own.
        #expect(clock.sleeps - sleepsBefore == 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func aWaitDueAlreadyReturnsAtOnce() async throws {
        let scheduler = PollScheduler(clock: clock, coalescing: .milliseconds(1))
        clock.advance(to: 5)
        try await scheduler.sleep(until: VirtualClock.at(5))
        try await scheduler.sleep(until: VirtualClock.at(5.0005))
        #expect(clock.sleeps == 0)
        #expect(scheduler.queuedCount == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func aDeadlineBeforeTheTimersIsSleptForByItsWaiter() async throws {
        let scheduler = PollScheduler(clock: clock, coalescing: .zero)
        let timer = Task { await scheduler.run() }
        defer { timer.cancel() }
        let woken = Times()
        let late = await wait(scheduler, until: 10, woken: woken)
        await eventually("the timer sleeps until 10 s") { clock.sleeperCount == 1 }
        let early = Task { try await scheduler.sleep(until: VirtualClock.at(3)) }
        await eventually("the early waiter sleeps on its own") { clock.sleeperCount == 2 }
        #expect(scheduler.queuedCount == 1)
        clock.advance(to: 3)
        try await early.value
        #expect(woken.all.isEmpty)
        clock.advance(to: 10)
        try await late.value
        #expect(woken.all == [10])
    }

    @Test(.timeLimit(.minutes(1)))
    func aCancelledWaiterLeavesTheQueueAndThrows() async throws {
        let scheduler = PollScheduler(clock: clock, coalescing: .zero)
        let timer = Task { await scheduler.run() }
        defer { timer.cancel() }
        let woken = Times()
        let cancelled = await wait(scheduler, until: 10, woken: woken)
        let kept = await wait(scheduler, until: 20, woken: woken)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(scheduler.queuedCount == 1)
        clock.advance(to: 20)
        try await kept.value
        #expect(woken.all == [20])
    }

    @Test(.timeLimit(.minutes(1)))
    func waitersSleepOnTheirOwnOnceTheTimerStopped() async throws {
        let scheduler = PollScheduler(clock: clock, coalescing: .zero)
        let timer = Task { await scheduler.run() }
        let woken = Times()
        let waiter = await wait(scheduler, until: 10, woken: woken)
        timer.cancel()
        await timer.value
        #expect(scheduler.queuedCount == 0)
        // The waiter is not woken early: it sleeps the rest on its own, and so does one that starts now.
        await eventually("the waiter sleeps on its own") { clock.sleeperCount == 1 }
        let another = Task { try await scheduler.sleep(until: VirtualClock.at(12)) }
        await eventually("the new waiter sleeps on its own") { clock.sleeperCount == 2 }
        #expect(woken.all.isEmpty)
        clock.advance(to: 10)
        try await waiter.value
        #expect(woken.all == [10])
        clock.advance(to: 12)
        try await another.value
    }

    @Test func sensorsWithTheSameIntervalAreSpreadEvenlyOverIt() {
        typealias Scheduler = PollScheduler<ManualClock>
        let phases = (0..<4).map { Scheduler.phase(of: $0, among: 4, interval: .seconds(1), batch: 1) }
        #expect(phases == [0, 250, 500, 750].map(Duration.milliseconds))
        // Five sensors in slots of two: three slots, a third of the interval apart.
        let paired = (0..<5).map { Scheduler.phase(of: $0, among: 5, interval: .milliseconds(300), batch: 2) }
        #expect(paired == [0, 100, 200, 0, 100].map(Duration.milliseconds))
        // A few sensors read together: one wake-up for all.
        #expect((0..<16).allSatisfy { Scheduler.phase(of: $0, among: 16, interval: .seconds(1)) == .zero })
        // A thousand at 10 Hz: 63 slots of at most 16, about 1.6 ms apart.
        let thousand = Set((0..<1000).map { Scheduler.phase(of: $0, among: 1000, interval: .milliseconds(100)) })
        #expect(thousand.count == 63)
        #expect(thousand.max() == .milliseconds(100) / 63 * 62)
    }

    /// A poller on the scheduler first reads at its phase and then keeps it: every read is a whole number of
    /// intervals after the phase.
    @Test(.timeLimit(.minutes(1)))
    func aPollerOnTheSchedulerKeepsItsPhase() async throws {
        let scheduler = PollScheduler(clock: clock, coalescing: .zero)
        let timer = Task { await scheduler.run() }
        defer { timer.cancel() }
        let reads = Times()
        let sensor = ClockedSensor(clock: clock, reads: reads)
        let poller = SensorPoller(
            sensor: sensor, interval: .seconds(10), backoff: Backoff(minimum: .seconds(1), maximum: .seconds(2)),
            pipelines: [.temperature: ValuePipeline()], scheduler: scheduler, phase: .seconds(4))
        let consumer = Task { for await _ in poller {} }
        defer { consumer.cancel() }
        for (step, time) in [4.0, 14, 24, 34].enumerated() {
            await eventually("the poller waits for its next read") { scheduler.queuedCount == 1 }
            #expect(reads.all.count == step)
            clock.advance(to: time - 0.5)
            #expect(reads.all.count == step)
            clock.advance(to: time)
            await eventually("read \(step + 1) at \(time) s") { reads.all.count == step + 1 }
        }
        #expect(reads.all == [4, 14, 24, 34])
    }
}

/// A sensor that records the clock's time at each read.
private struct ClockedSensor: Sensor {
    let clock: ManualClock
    let reads: Times
    let label = "clocked sensor"
    let quantities: [Quantity] = [.temperature]

    func read() async throws(SensorError) -> [Measurement] {
        reads.record(clock.now)
        return [Measurement(.temperature, 20)]
    }
}

@Suite struct SysfsAttributeTests {
    /// The allocation-free parse takes exactly what `Int64(String)` takes after trimming, and nothing else.
    @Test(arguments: [
        "48312\n", "-10125\n", "+7", "0", " 42 ", "\t-1 \n", "9223372036854775807", "-9223372036854775808",
        "9223372036854775808", "-9223372036854775809", "", "\n", "-", "+", "48.3", "4 8", "0x10", "１２", "12a",
        "99999999999999999999999",
    ])
    func parsesIntegersLikeTheStandardLibrary(text: String) {
        let trimmed = text.trimmingCharacters(in: [" ", "\n", "\t", "\r"])
        let parsed = Array(text.utf8).withUnsafeBytes { SysfsAttribute.parseInteger($0) }
        #expect(parsed == Int64(trimmed))
    }

    @Test func readsTheFileAgainFromItsStartEachTime() throws {
        let tree = try SysfsTree()
        try tree.write("attribute", "48312\n")
        let attribute = SysfsAttribute(path: tree.root + "/attribute")
        #expect(try attribute.integer() == 48312)
        try tree.write("attribute", "7\n")
        #expect(try attribute.integer() == 7)
    }

    /// Outside sysfs a removed file stays readable through an open descriptor: the attribute notices and reads the
    /// path again, as a removed sysfs attribute fails (at once here: a check before every read).
    @Test func aRemovedFileIsNoDeviceAndARecreatedOneIsRead() throws {
        let tree = try SysfsTree()
        let path = tree.root + "/zone/temp"
        try tree.write("zone/temp", "40000\n")
        let attribute = SysfsAttribute(path: path, linkCheckInterval: .zero)
        #expect(try attribute.integer() == 40000)
        try tree.remove("zone/temp")
        #expect(throws: SensorError.noDevice(path)) { try attribute.integer() }
        try tree.write("zone/temp", "41000\n")
        #expect(try attribute.integer() == 41000)
    }

    @Test func aFileReplacedByARenameIsReadAnew() throws {
        let tree = try SysfsTree()
        try tree.write("temp", "40000\n")
        let attribute = SysfsAttribute(path: tree.root + "/temp", linkCheckInterval: .zero)
        #expect(try attribute.integer() == 40000)
        #expect(attribute.checksLink)
        try tree.write("temp.new", "42000\n")
        #expect(rename(tree.root + "/temp.new", tree.root + "/temp") == 0)
        #expect(try attribute.integer() == 42000)
    }

    /// The check that the file still has a name is made once per `linkCheckInterval`, not on every read: a file
    /// replaced meanwhile is read anew by the first read after the interval.
    @Test func theLinkIsCheckedOncePerInterval() throws {
        let tree = try SysfsTree()
        try tree.write("temp", "40000\n")
        let trusting = SysfsAttribute(path: tree.root + "/temp", linkCheckInterval: .seconds(3600))
        let checking = SysfsAttribute(path: tree.root + "/temp", linkCheckInterval: .milliseconds(50))
        #expect(try trusting.integer() == 40000)
        #expect(try checking.integer() == 40000)
        try tree.write("temp.new", "42000\n")
        #expect(rename(tree.root + "/temp.new", tree.root + "/temp") == 0)
        #expect(try trusting.integer() == 40000)
        // The coarse clock moves in kernel ticks (up to 10 ms).
        usleep(100_000)
        #expect(try checking.integer() == 42000)
    }

    /// Reads do not update the file's access time: on a disk file system each read would go through `touch_atime`.
    /// An access time older than the modification time (both set in the past here) is what `relatime` updates on the
    /// next read.
    @Test func readsLeaveTheAccessTimeAlone() throws {
        let tree = try SysfsTree()
        try tree.write("temp", "40000\n")
        let path = tree.root + "/temp"
        let past = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_500_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, past, 0) == 0)
        let attribute = SysfsAttribute(path: path)
        #expect(try attribute.integer() == 40000)
        #expect(try attribute.integer() == 40000)
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_atim.tv_sec == 1_000_000_000)
    }

    /// A real attribute cannot be replaced (a removed one fails), so its reads skip the check of the name.
    @Test(.enabled(if: access("/sys/kernel/uevent_seqnum", R_OK) == 0))
    func readsARealSysfsAttributeAgainAndAgain() throws {
        let attribute = SysfsAttribute(path: "/sys/kernel/uevent_seqnum")
        let first = try attribute.integer()
        #expect(try attribute.integer() >= first)
        #expect(!attribute.checksLink)
    }

    /// A read that fails closes the file; the next opens it again, so a zone that comes back is read.
    @Test func opensTheFileAgainAfterAFailedRead() throws {
        let tree = try SysfsTree()
        let path = tree.root + "/zone/attribute"
        let attribute = SysfsAttribute(path: path)
        #expect(throws: SensorError.noDevice(path)) { try attribute.integer() }
        try tree.write("zone/attribute", "-5\n")
        #expect(try attribute.integer() == -5)
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        String(drop(while: set.contains).reversed().drop(while: set.contains).reversed())
    }
}
