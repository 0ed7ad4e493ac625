import EdgeHardware
import Synchronization

/// A clock whose time moves only when something sleeps on it or calls `advance`: a sleeper's deadline
/// becomes the time at once. With one sleeper (a poller) it replays hours of schedule instantly and exactly.
final class VirtualClock: Clock {
    struct Instant: InstantProtocol, CustomStringConvertible {
        var offset: Duration

        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        var description: String { "\(offset)" }
    }

    private let current = Mutex(Instant(offset: .zero))

    var now: Instant { current.withLock { $0 } }
    var minimumResolution: Duration { .nanoseconds(1) }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        current.withLock { $0 = max($0, deadline) }
    }

    func advance(by duration: Duration) {
        current.withLock { $0 = $0.advanced(by: duration) }
    }

    static func at(_ seconds: Double) -> Instant { Instant(offset: .seconds(seconds)) }
}

/// A sensor that answers each read with the next scripted result, records when it was read, and cancels the
/// reading task once the script is used up, which ends the poller's sequence (and a `SensorPollLoop`'s run on a
/// virtual clock).
final class ScriptedSensor: ImmediateSensor {
    enum Step {
        case measure([Measurement])
        case fail(SensorError)
        /// Takes `duration` of clock time, then measures.
        case slow(Duration, [Measurement])
    }

    let label = "scripted sensor"
    let quantities: [Quantity]
    private let clock: VirtualClock
    private let state: Mutex<(steps: [Step], reads: [VirtualClock.Instant])>
    private let onRead = Mutex<(@Sendable () -> Void)?>(nil)

    init(_ quantities: [Quantity] = [.temperature], clock: VirtualClock, _ steps: [Step]) {
        self.quantities = quantities
        self.clock = clock
        self.state = Mutex((steps, []))
    }

    /// When the sensor was read, in order.
    var readTimes: [VirtualClock.Instant] { state.withLock { $0.reads } }

    /// Runs `probe` at the start of every read.
    func observeReads(_ probe: @escaping @Sendable () -> Void) {
        onRead.withLock { $0 = probe }
    }

    func readImmediately(into measurements: inout [Measurement]) throws(SensorError) {
        onRead.withLock { $0 }?()
        let now = clock.now
        let step: Step? = state.withLock { state in
            state.reads.append(now)
            return state.steps.isEmpty ? nil : state.steps.removeFirst()
        }
        switch step {
        case .measure(let reading):
            measurements += reading
        case .fail(let error):
            throw error
        case .slow(let duration, let reading):
            clock.advance(by: duration)
            measurements += reading
        case nil:
            withUnsafeCurrentTask { $0?.cancel() }
            throw .noDevice("script used up")
        }
    }
}

extension ScriptedSensor.Step {
    static func temperature(_ value: Double) -> Self { .measure([Measurement(.temperature, value)]) }
}

/// A GPIO output that records every write and fails when told to.
final class RecordingOutput: DigitalOutput {
    let label = "recording output"
    private let state = Mutex<(writes: [Bool], failures: [GPIOError])>(([], []))

    var writes: [Bool] { state.withLock { $0.writes } }

    /// The next writes fail with these errors, one each, before writes succeed again.
    func failNextWrites(_ errors: [GPIOError]) {
        state.withLock { $0.failures = errors }
    }

    func set(active: Bool) throws(GPIOError) {
        let failure: GPIOError? = state.withLock { state in
            if state.failures.isEmpty {
                state.writes.append(active)
                return nil
            }
            return state.failures.removeFirst()
        }
        if let failure { throw failure }
    }
}

/// A GPIO input that reports a fixed start state and then scripted debounced changes, then an optional error.
final class ScriptedInput: DigitalInput {
    let label = "scripted input"
    private let initial: Result<Bool, GPIOError>
    private let changeScript: [Bool]
    private let finalError: GPIOError?

    init(initial: Result<Bool, GPIOError>, changes: [Bool], thenFail error: GPIOError? = nil) {
        self.initial = initial
        self.changeScript = changes
        self.finalError = error
    }

    func read() throws(GPIOError) -> Bool {
        try initial.get()
    }

    func changes() -> AsyncThrowingStream<Bool, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Bool.self)
        for change in changeScript { continuation.yield(change) }
        continuation.finish(throwing: finalError)
        return stream
    }
}
