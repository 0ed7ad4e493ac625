import DetachedThread
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct OwnThreadTests {
    /// Eight bodies that each wait until all eight have started can only finish if each has a thread of its own: on
    /// the concurrency pool (a thread per core) they would wait for each other until the deadline (long: the bodies
    /// start from tasks, which a busy pool may hold back for seconds; 13 s in a CI run). Their thread ids
    /// differ as they all live at once (an id is the thread's descriptor's address: an ended thread's id can come
    /// back, so the test's own thread is not compared with them).
    @Test func eachBodyRunsOnAThreadOfItsOwn() async throws {
        let count = 8
        let started = StartCount()
        let threadIds = try await withThrowingTaskGroup(of: pthread_t.self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await onOwnThread {
                        started.count.withLock { $0 += 1 }
                        let deadline = ContinuousClock.now + .seconds(120)
                        while started.count.withLock({ $0 }) < count, ContinuousClock.now < deadline {
                            usleep(1000)
                        }
                        return pthread_self()
                    }
                }
            }
            return try await group.reduce(into: Set<pthread_t>()) { $0.insert($1) }
        }
        #expect(started.count.withLock { $0 } == count)
        #expect(threadIds.count == count)
    }

    @Test func theBodysResultIsReturned() async throws {
        let name = try await onOwnThread { currentThreadName() }
        let sum = try await onOwnThread { (1...100).reduce(0, +) }
        #expect(sum == 5050)
        #expect(!name.isEmpty && name != "?")
    }
}

private final class StartCount: Sendable {
    let count = Mutex(0)
}
