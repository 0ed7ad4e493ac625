import DetachedThread

#if canImport(Glibc)
    import Glibc
#endif

/// The thread of a `SensorPollLoop`, and its timer: it sleeps in the kernel (a futex wait with an absolute deadline
/// on `CLOCK_MONOTONIC`, through a condition variable) until the next reads are due, and is woken early only to stop.
///
/// Why a thread and not a task: a task that sleeps with `Task.sleep` wakes through libdispatch (its timer thread
/// re-arms a `timerfd`, then hands the task to a cooperative thread, which it wakes), so each wake-up cost two thread
/// wake-ups, four context switches and a `timerfd_settime`; here it is one thread waking, which reads the due sensors
/// and publishes their values itself (the publish path does not wait: it queues the packets and writes them to the
/// socket). The cooperative threads (two on a 2-core Pi) stay free for the agent's tasks, and no task delays the
/// reads.
final class PollThread: PollLoopTimer, @unchecked Sendable {
    // @unchecked: the mutex and the condition variable live at fixed addresses for the object's life (a pthread
    // mutex must not move), and `isStopped` is only touched with the mutex held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var isStopped = false
    /// The `CLOCK_MONOTONIC` time the loop started at: `now()` counts from it.
    private let origin: Duration

    private init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Deadlines on the monotonic clock: a change of the wall clock (NTP setting it at boot) moves no read.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        origin = Self.monotonicNow()
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` on a new thread, named "sensor polls", and returns when it has returned; when the task is
    /// cancelled, `wait(until:)` returns false from then on (at once, if `body` is waiting), and `body` is to return.
    static func run(_ body: @escaping @Sendable (PollThread) -> Void) async {
        let thread = PollThread()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let poll: @Sendable () -> Void = {
                    body(thread)
                    continuation.resume()
                }
                let started = startDetachedThread(named: "sensor polls", poll)
                // No thread to be had (the process is at its limit): polling holds this cooperative thread rather
                // than stopping.
                if started != 0 { poll() }
            }
        } onCancel: {
            thread.stop()
        }
    }

    func now() -> Duration {
        Self.monotonicNow() - origin
    }

    func wait(until deadline: Duration) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var absolute = timespec(origin + deadline)
        // A wake-up before the deadline (spurious, or a signal) waits again; only `stop` ends the wait early.
        while !isStopped && now() < deadline {
            _ = pthread_cond_timedwait(condition, mutex, &absolute)
        }
        return !isStopped
    }

    /// Ends the wait of the thread, now and from now on.
    func stop() {
        pthread_mutex_lock(mutex)
        isStopped = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    private static func monotonicNow() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
