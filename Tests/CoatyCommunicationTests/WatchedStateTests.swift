import CoatyTestSupport
import Foundation
import Synchronization
import Testing

@testable import CoatyCommunication

@Suite struct WatchedStateTests {
    @Test func everyWatcherGetsItsStartThenEveryChangeInOrder() async throws {
        let watched = WatchedState<[Int], Int>([1, 2])
        let first = Recorder(watched.watch { $0 })
        try await first.wait(count: 2)
        let told = watched.change { numbers, isWatched in
            numbers.append(3)
            return (isWatched, [3])
        }
        #expect(told)
        let second = Recorder(watched.watch { [$0.count] })
        watched.change { numbers, _ in
            numbers += [4, 5]
            return ((), [4, 5])
        }
        #expect(try await first.wait(count: 5) == [1, 2, 3, 4, 5])
        // The new watcher starts from the state as it was, with nothing of the change before it.
        #expect(try await second.wait(count: 3) == [3, 4, 5])
    }

    @Test func withNobodyWatchingTheStateChangesAndNothingIsKept() async throws {
        let watched = WatchedState<Int, Int>(0)
        let isWatched = watched.change { value, isWatched in
            value = 7
            return (isWatched, [7])
        }
        #expect(!isWatched)
        #expect(watched.withState { $0 } == 7)
        let watcher = Task { () -> Int? in
            for await change in watched.watch() { return change }
            return nil
        }
        try await poll("the watcher") { watched.change { _, isWatched in (isWatched, []) } }
        watched.change { value, _ in
            value = 8
            return ((), [8])
        }
        #expect(await watcher.value == 8)
        // Its stream ended with its task's loop: nobody watches any more.
        try await poll("the watcher's end") { !watched.change { _, isWatched in (isWatched, []) } }
    }

    @Test func aSlowWatcherKeepsTheNewestChangesUpToTheLimit() async throws {
        let watched = WatchedState<Void, Int>((), bufferLimit: 3)
        let stream = watched.watch()
        for change in 1...10 {
            watched.change { _, _ in ((), [change]) }
        }
        var iterator = stream.makeAsyncIterator()
        var received: [Int] = []
        for _ in 0..<3 { received.append(await iterator.next() ?? 0) }
        #expect(received == [8, 9, 10])
    }

    /// Watchers cancelled while another thread changes the state: handing a change to a waiting watcher takes the
    /// Swift runtime's lock of its task, and a cancelled watcher's end runs under that lock and removes the watcher.
    /// With the changes handed over under the state's own lock, the two threads waited for each other for good (an
    /// agent hung in its stop that way). The sender pauses between changes (the old shape still hangs with the
    /// pause): without one it held the lock nearly all the time, and the pool threads waiting for it (a new watcher,
    /// a watcher's end) were lost to every other suite; in a clean-clone CI run this test ran past its 60 s while
    /// about a hundred tests of other suites timed out.
    @Test func watchersCancelledWhileChangesAreHandedOverEndWithoutAHang() async throws {
        let watched = WatchedState<Int, Int>(0)
        let isSending = Mutex(true)
        let sender = Thread {
            while isSending.withLock({ $0 }) {
                watched.change { value, _ in
                    value += 1
                    return ((), [value])
                }
                usleep(20)
            }
        }
        sender.start()
        defer { isSending.withLock { $0 = false } }
        let cancelled = Mutex(0)
        let watching = Task {
            for _ in 0..<3_000 {
                let watcher = Task { for await _ in watched.watch() {} }
                await Task.yield()
                watcher.cancel()
                await watcher.value
                cancelled.withLock { $0 += 1 }
            }
        }
        try await poll(within: .seconds(60), "3,000 cancelled watchers") { cancelled.withLock { $0 } == 3_000 }
        await watching.value
    }

    @Test func aBroadcastStreamStartsWithTheCurrentValueThenGetsEveryChange() async throws {
        let broadcast = CurrentValueBroadcast(1)
        let values = Recorder(broadcast.stream())
        try await values.wait(count: 1)
        broadcast.send(2)
        broadcast.send(2)
        broadcast.send(3)
        #expect(try await values.wait(count: 3) == [1, 2, 3])
        #expect(broadcast.value == 3)
    }
}
