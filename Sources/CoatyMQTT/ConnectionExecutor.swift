import Glibc
import Synchronization

/// Runs tasks on a connection's network thread, between its reads and writes.
///
/// A task that prefers this executor (`Task(executorPreference:)`, `withTaskExecutorPreference`) and waits for
/// inbound events continues on the thread that received them, and what it publishes is written by that thread
/// as it publishes: no thread is woken on the way, as in a C client that answers inside its message callback.
/// Such code must not block or compute for long: the connection reads, writes and pings in the same thread.
///
/// While no network thread runs (before the first connect, between a stop and the next start, or with a transport
/// that has no thread of its own) the jobs go to the global concurrent executor, so a task never waits for a
/// connection to run.
public final class ConnectionExecutor: TaskExecutor, Sendable {
    private struct State: ~Copyable {
        var jobs: [UnownedJob] = []
        /// Wakes the network thread while one runs jobs for this executor.
        var wake: (@Sendable () -> Void)?
        /// The network thread sleeps (or is about to) until `wake` is called.
        var isSleeping = false
    }

    private let state = Mutex(State())
    /// The thread inside `runJobs` (its `pthread_self`), or 0: written and compared only by that thread, so a
    /// relaxed atomic is enough; any other thread reads a value that is not its own.
    private let jobThread = Atomic<UInt>(0)

    public init() {}

    /// Whether the caller is one of this executor's jobs running on the network thread: what it publishes can be
    /// written at once, by the thread that owns the socket.
    var isRunningJobOnCurrentThread: Bool {
        jobThread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (isQueued, wake) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            guard state.wake != nil else { return (false, nil) }
            state.jobs.append(job)
            return (true, takeWake(&state))
        }
        if !isQueued {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
        wake?()
    }

    // MARK: - For the network thread

    /// Makes the calling thread the one that runs the jobs, until `detach`; `wake` interrupts its sleep. Returns
    /// false if another thread runs them already.
    func attach(wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard state.wake == nil else { return false }
            state.wake = wake
            state.isSleeping = false
            return true
        }
    }

    /// Hands the jobs still queued, and all later ones, to the global executor.
    func detach() {
        let left = state.withLock { state in
            state.wake = nil
            state.isSleeping = false
            defer { state.jobs = [] }
            return state.jobs
        }
        for job in left {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }

    /// Runs the jobs queued now; those they enqueue wait for the next call, so that the thread keeps serving the
    /// connection. `running` is the thread's own buffer, empty between calls: the queue and it swap storage, so
    /// that a turn with jobs allocates nothing (taking a copy of the queue and emptying it allocated a new array
    /// on every turn that had a job: every message an awaiting task takes).
    func runJobs(using running: inout [UnownedJob]) {
        state.withLock { swap(&$0.jobs, &running) }
        guard !running.isEmpty else { return }
        let executor = asUnownedTaskExecutor()
        jobThread.store(UInt(pthread_self()), ordering: .relaxed)
        for job in running {
            job.runSynchronously(on: executor)
        }
        jobThread.store(0, ordering: .relaxed)
        running.removeAll(keepingCapacity: true)
    }

    /// Called before the thread blocks: whether it may sleep (no job to run), then marked sleeping, so that from
    /// then on `enqueue` and `wakeIfSleeping` wake it; and `hasOtherWork`, asked under the same lock. A caller that
    /// queues other work for the thread (a publication) calls `wakeIfSleeping` afterwards, so the work is either
    /// seen here or wakes the thread. Only when it may sleep must the thread call `didWake` afterwards.
    func prepareToSleep(hasOtherWork: () -> Bool) -> (canSleep: Bool, hasOtherWork: Bool) {
        state.withLock { state in
            state.isSleeping = state.jobs.isEmpty
            return (state.isSleeping, hasOtherWork())
        }
    }

    /// Called when the thread stops blocking, before it does anything else.
    func didWake() {
        state.withLock { $0.isSleeping = false }
    }

    /// Wakes the network thread if it sleeps: for work queued outside this executor, such as a publication made
    /// on another thread. While the thread sleeps, `doInstead` may do the work here and return whether the thread
    /// is still needed: it runs under the lock that the thread takes on waking (`didWake`) and while preparing to
    /// sleep, so the two never do the thread's work at once.
    func wakeIfSleeping(doInstead: () -> Bool = { true }) {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.isSleeping, doInstead() else { return nil }
            return takeWake(&state)
        }
        wake?()
    }

    private func takeWake(_ state: inout State) -> (@Sendable () -> Void)? {
        guard state.isSleeping else { return nil }
        state.isSleeping = false
        return state.wake
    }
}
