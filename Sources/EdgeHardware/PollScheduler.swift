import Synchronization

/// One timer for the polls of every sensor of an agent: pollers wait on it instead of each sleeping on a timer of
/// its own, and `run()` sleeps until the earliest deadline and wakes every poller due then. A thousand sensors at
/// 10 Hz cost one timer re-armed at most once per `coalescing` window, instead of a thousand timers re-armed ten
/// times a second each.
///
/// A wake-up also wakes the pollers due within `coalescing` after it, so that sensors spread over an interval share
/// wake-ups: such a read happens up to `coalescing` early, and the poller's schedule still advances from its own
/// deadline, so its phase does not drift.
///
/// The woken pollers run their reads as the tasks they are, on the cooperative thread pool: a read that waits (a
/// conversion time, an I2C transfer, which its bus's thread makes: `I2CBus`) holds no thread, so no reading stalls
/// another beyond the CPU it takes.
///
/// A deadline earlier than the one the timer sleeps for (a retry after a failure, a poller that just started) is
/// slept for by its poller alone: the timer is never re-armed for an earlier deadline. Once `run()` has ended, every
/// waiter sleeps on its own.
public final class PollScheduler<C: Clock>: Sendable where C.Duration == Duration {
    public let clock: C
    public let coalescing: Duration
    private let state = Mutex(State())

    /// Needs `coalescing >= 0`.
    public init(clock: C, coalescing: Duration = .milliseconds(1)) {
        precondition(coalescing >= .zero, "coalescing must not be negative")
        self.clock = clock
        self.coalescing = coalescing
    }

    /// Sleeps until `deadline`, or up to `coalescing` less; throws `CancellationError` when the task is cancelled.
    public func sleep(until deadline: C.Instant) async throws {
        try Task.checkCancellation()
        let now = clock.now
        if deadline <= now.advanced(by: coalescing) { return }
        let id: UInt64? = state.withLock { state in
            switch state.timer {
            case .stopped: return nil
            case .sleeping(let until) where deadline < until: return nil
            default:
                state.nextId &+= 1
                return state.nextId
            }
        }
        guard let id else {
            try await clock.sleep(until: deadline, tolerance: nil)
            return
        }
        let woken = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let resumeNow: Bool? = state.withLock { state in
                    if state.cancelledBeforeQueued.remove(id) != nil { return false }
                    if case .stopped = state.timer { return true }
                    state.queue.insert(Waiter(id: id, continuation: continuation), dueAt: deadline)
                    if case .idle(let timer) = state.timer {
                        state.timer = .busy
                        timer.resume()
                    }
                    return nil
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLock { state in
                if let waiter = state.queue.remove(where: { $0.id == id }) { return waiter }
                state.cancelledBeforeQueued.insert(id)
                return nil
            }
            waiter?.continuation.resume(returning: false)
        }
        state.withLock { _ = $0.cancelledBeforeQueued.remove(id) }
        guard woken else { throw CancellationError() }
        // Woken before its time because `run()` ended.
        if clock.now.advanced(by: coalescing) < deadline { try await clock.sleep(until: deadline, tolerance: nil) }
    }

    /// The waiters in the queue, for tests.
    var queuedCount: Int { state.withLock { $0.queue.count } }

    /// The timer: wakes the waiting pollers when they are due, until the task is cancelled. Run it once.
    public func run() async {
        defer {
            let waiting: [Waiter] = state.withLock { state in
                state.timer = .stopped
                return state.queue.removeAll()
            }
            // Woken early: each sleeps the rest of its wait on its own.
            for waiter in waiting { waiter.continuation.resume(returning: true) }
        }
        while !Task.isCancelled {
            let next: C.Instant? = state.withLock { state in
                guard let earliest = state.queue.earliest else { return nil }
                state.timer = .sleeping(until: earliest)
                return earliest
            }
            guard let next else {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (timer: CheckedContinuation<Void, Never>) in
                        let wakeNow = state.withLock { state in
                            if !state.queue.isEmpty || Task.isCancelled { return true }
                            state.timer = .idle(timer)
                            return false
                        }
                        if wakeNow { timer.resume() }
                    }
                } onCancel: {
                    let timer: CheckedContinuation<Void, Never>? = state.withLock { state in
                        guard case .idle(let timer) = state.timer else { return nil }
                        state.timer = .busy
                        return timer
                    }
                    timer?.resume()
                }
                continue
            }
            do { try await clock.sleep(until: next, tolerance: nil) } catch { return }
            let due: [Waiter] = state.withLock { state in
                state.timer = .busy
                let limit = clock.now.advanced(by: coalescing)
                var due: [Waiter] = []
                while let waiter = state.queue.popEarliest(through: limit) { due.append(waiter) }
                return due
            }
            for waiter in due { waiter.continuation.resume(returning: true) }
        }
    }

    /// Where `index` of `count` sensors polled at the same `interval` starts in it: the sensors are dealt into as few
    /// slots spread evenly over the interval as hold at most `batch` each, so that many sensors do not all read at
    /// once, and a few (up to `batch`) share one wake-up, which costs less than one each.
    public static func phase(of index: Int, among count: Int, interval: Duration, batch: Int = 16) -> Duration {
        precondition(count > 0 && (0..<count).contains(index), "index must be one of count")
        precondition(batch > 0, "a slot holds at least one sensor")
        let slots = (count + batch - 1) / batch
        return interval / slots * (index % slots)
    }

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Bool, Never>
    }

    private enum Timer {
        /// Nothing to wait for: the timer waits for the first waiter.
        case idle(CheckedContinuation<Void, Never>)
        /// Waking the due waiters, or about to sleep.
        case busy
        case sleeping(until: C.Instant)
        /// `run()` ended.
        case stopped
    }

    private struct State {
        var queue = DeadlineHeap<C.Instant, Waiter>()
        var timer = Timer.busy
        var nextId: UInt64 = 0
        /// Waiters cancelled before they were queued: they are not queued then.
        var cancelledBeforeQueued: Set<UInt64> = []
    }
}
