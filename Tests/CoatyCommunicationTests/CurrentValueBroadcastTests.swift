import CoatyTestSupport
import Foundation
import Synchronization
import Testing

@testable import CoatyCommunication

@Suite struct CurrentValueBroadcastTests {
    @Test func aStreamStartsWithTheCurrentValueThenGetsEveryChange() async throws {
        let broadcast = CurrentValueBroadcast(1)
        let values = Recorder(broadcast.stream())
        try await values.wait(count: 1)
        broadcast.send(2)
        broadcast.send(2)
        broadcast.send(3)
        #expect(try await values.wait(count: 3) == [1, 2, 3])
        #expect(broadcast.value == 3)
    }

    /// Watchers cancelled while another thread sends values: handing a value to a waiting watcher takes the Swift
    /// runtime's lock of its task, and a cancelled watcher's end runs under that lock and removes the watcher. With
    /// the values handed over under the broadcast's own lock, the two threads waited for each other for good (an
    /// agent hung in its stop that way).
    @Test func watchersCancelledWhileValuesAreSentEndWithoutAHang() async throws {
        let broadcast = CurrentValueBroadcast(0)
        let isSending = Mutex(true)
        let sender = Thread {
            var value = 0
            while isSending.withLock({ $0 }) {
                value += 1
                broadcast.send(value)
            }
        }
        sender.start()
        defer { isSending.withLock { $0 = false } }
        let cancelled = Mutex(0)
        let watching = Task {
            for _ in 0..<3_000 {
                let watcher = Task { for await _ in broadcast.stream() {} }
                await Task.yield()
                watcher.cancel()
                await watcher.value
                cancelled.withLock { $0 += 1 }
            }
        }
        try await poll(within: .seconds(60), "3,000 cancelled watchers") { cancelled.withLock { $0 } == 3_000 }
        await watching.value
    }
}
