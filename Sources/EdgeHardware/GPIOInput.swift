import CGPIOD
import DetachedThread
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A GPIO line read as an input (button, contact, presence sensor) through libgpiod, with edge events on both
/// edges and software debouncing.
///
/// The line is requested for edge events from the moment of creation. `changes()` watches it on a thread of
/// its own that sleeps in poll(2) (blocking waits stay off Swift's cooperative pool) and ends when the stream
/// ends. Debouncing runs on the times the events are seen, so events read together count as simultaneous.
public final class GPIOInput: DigitalInput {
    public enum Bias: Sendable {
        /// Leave the bias as the board or device tree set it.
        case asIs
        case disabled
        case pullUp
        case pullDown

        var requestFlag: Int32 {
            switch self {
            case .asIs: 0
            case .disabled: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
            case .pullUp: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
            case .pullDown: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
            }
        }
    }

    public let label: String
    /// How long a new level must hold before it counts; zero passes every edge.
    public let debounceWindow: Duration
    private let handle: GPIOLineHandle
    private let watched = Mutex(false)

    public init(
        chip chipPath: String, line offset: Int, activeLow: Bool = false, bias: Bias = .asIs,
        debounceWindow: Duration = .zero
    ) throws(GPIOError) {
        let flags = (activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0) | bias.requestFlag
        handle = try GPIOLineHandle(chipPath: chipPath, offset: offset) { line in
            gpiod_line_request_both_edges_events_flags(line, gpioConsumerLabel, flags)
        }
        label = "GPIO input \(handle.location)"
        self.debounceWindow = debounceWindow
    }

    public func read() throws(GPIOError) -> Bool {
        try handle.value()
    }

    /// Debounced changes of the logical state. One stream at a time: a second one while the first runs, or while
    /// its thread is still stopping (within one wake-up), ends at once with `GPIOError.lineUnavailable`. Ending the stream (or cancelling its consumer) stops the
    /// watching thread; a failing line ends the stream with the error.
    public func changes() -> AsyncThrowingStream<Bool, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Bool.self)
        guard
            !watched.withLock({
                let busy = $0; $0 = true; return busy
            })
        else {
            continuation.finish(throwing: GPIOError.lineUnavailable("\(label) is already being watched"))
            return stream
        }
        // The level to debounce from is read before returning, so a change made after this call is a change.
        let stop: Wakeup
        let initialLevel: Bool
        do {
            initialLevel = try handle.value()
            stop = try Wakeup()
        } catch {
            watched.withLock { $0 = false }
            continuation.finish(throwing: error)
            return stream
        }
        continuation.onTermination = { _ in stop.signal() }
        let started = startDetachedThread { [self] in
            defer { watched.withLock { $0 = false } }
            do {
                try watch(from: initialLevel, until: stop, continuation)
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        if started != 0 {
            watched.withLock { $0 = false }
            continuation.finish(throwing: GPIOError.io(errno: started, "cannot start a thread to watch \(label)"))
        }
        return stream
    }

    private func watch(
        from initialLevel: Bool, until stop: Wakeup, _ continuation: AsyncThrowingStream<Bool, any Error>.Continuation
    ) throws(GPIOError) {
        let clock = ContinuousClock()
        var debouncer = Debouncer(window: debounceWindow, level: initialLevel)
        var buffer = [gpiod_line_event](repeating: gpiod_line_event(), count: 16)
        var waiter = EdgeWaiter(handle, stop: stop, label: label)
        while true {
            let timeout = debouncer.deadline.map { milliseconds(until: $0, from: clock.now) } ?? -1
            switch try waiter.wait(timeout: timeout) {
            case .stopped: return
            case .edges:
                let seen = clock.now
                for edge in try handle.readEdges(into: &buffer) {
                    debouncer.observe(edge, at: seen)
                    if let level = debouncer.settle(at: seen) { continuation.yield(level) }
                }
            case .nothing: break
            }
            if let level = debouncer.settle(at: clock.now) { continuation.yield(level) }
        }
    }
}

/// Rounded up, so that poll does not wake before the deadline.
private func milliseconds(until deadline: ContinuousClock.Instant, from now: ContinuousClock.Instant) -> Int32 {
    let remaining = now.duration(to: deadline)
    guard remaining > .zero else { return 0 }
    let (seconds, attoseconds) = remaining.components
    let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return Int32(clamping: milliseconds)
}
