import CGPIOD
import DetachedThread
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Counts the pulses on a GPIO line from its edge events (a water, gas or energy meter's pulse output, a fan's
/// tachometer), not by polling: the kernel timestamps each edge as it happens and queues it, so a pulse shorter than
/// any poll interval still counts.
///
/// `count()` watches the line on a thread of its own that sleeps in poll(2), until the task is cancelled. Debouncing
/// uses the kernel's timestamps: an edge closer than `debounce` to the last counted edge is a bounce and does not count.
/// The kernel's queue holds 16 events per line; a reader that falls behind by more loses pulses (see the counter
/// benchmark for the rates that are safe).
public final class GPIOPulseCounter: Sendable {
    public let label: String
    public let edge: CounterDevice.Edge
    public let debounce: Duration
    private let handle: GPIOLineHandle
    private let counted = Atomic<UInt64>(0)
    private let bounces = Atomic<UInt64>(0)
    private let watcherNanoseconds = Atomic<UInt64>(0)

    public init(
        chip chipPath: String, line offset: Int, activeLow: Bool = false, edge: CounterDevice.Edge = .rising,
        debounce: Duration = .zero
    ) throws(GPIOError) {
        let flags = activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
        handle = try GPIOLineHandle(chipPath: chipPath, offset: offset) { line in
            switch edge {
            case .rising: gpiod_line_request_rising_edge_events_flags(line, gpioConsumerLabel, flags)
            case .falling: gpiod_line_request_falling_edge_events_flags(line, gpioConsumerLabel, flags)
            case .both: gpiod_line_request_both_edges_events_flags(line, gpioConsumerLabel, flags)
            }
        }
        label = "pulse counter \(handle.location)"
        self.edge = edge
        self.debounce = debounce
    }

    /// The pulses counted since the line was requested.
    public var total: UInt64 { counted.load(ordering: .relaxed) }
    /// The edges ignored as bounces.
    public var bounceCount: UInt64 { bounces.load(ordering: .relaxed) }
    /// The CPU time the watching thread used, once `count()` has returned: the cost of counting (the counter benchmark).
    public var watcherCPUTime: Duration { .nanoseconds(Int64(watcherNanoseconds.load(ordering: .relaxed))) }

    /// Counts until the task is cancelled; throws when the line fails (then request it again).
    public func count() async throws(GPIOError) {
        let stop = try Wakeup()
        let result: Result<Void, GPIOError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let started = startDetachedThread { [self] in
                    let result = Result { () throws(GPIOError) in try watch(until: stop) }
                    var time = timespec()
                    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
                    watcherNanoseconds.store(
                        UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec), ordering: .relaxed)
                    continuation.resume(returning: result)
                }
                if started != 0 {
                    continuation.resume(
                        returning: .failure(.io(errno: started, "cannot start a thread to count \(label)")))
                }
            }
        } onCancel: {
            stop.signal()
        }
        try result.get()
    }

    private func watch(until stop: Wakeup) throws(GPIOError) {
        var buffer = [gpiod_line_event](repeating: gpiod_line_event(), count: 64)
        var waiter = EdgeWaiter(handle, stop: stop, label: label)
        let window =
            UInt64(debounce.components.seconds) * 1_000_000_000
            + UInt64(debounce.components.attoseconds / 1_000_000_000)
        var lastCounted: UInt64?
        while true {
            let outcome = try waiter.wait()
            if outcome == .stopped { return }
            guard outcome == .edges else { continue }
            let count = try handle.readEvents(into: &buffer)
            var added: UInt64 = 0
            var bounced: UInt64 = 0
            for event in buffer[..<count] {
                let time = UInt64(event.ts.tv_sec) * 1_000_000_000 + UInt64(event.ts.tv_nsec)
                if window > 0, let lastCounted, time &- lastCounted < window {
                    bounced += 1
                    continue
                }
                lastCounted = time
                added += 1
            }
            counted.add(added, ordering: .relaxed)
            if bounced > 0 { bounces.add(bounced, ordering: .relaxed) }
        }
    }
}
