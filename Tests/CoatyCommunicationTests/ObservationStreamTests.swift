import Synchronization
import Testing

import CoatyCommunication

/// The `AsyncStream` semantics the manager's observations rely on.
@Suite struct ObservationStreamTests {
    /// Counts the runs of a termination handler and lets a test wait for the first.
    final class Termination: Sendable {
        private let state = Mutex<(runs: Int, waiter: CheckedContinuation<Void, Never>?)>((0, nil))

        var runs: Int { state.withLock { $0.runs } }

        func handler() {
            let waiter = state.withLock { state in
                state.runs += 1
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        func wait() async {
            await withCheckedContinuation { continuation in
                let hasRun = state.withLock { state in
                    if state.runs == 0 { state.waiter = continuation }
                    return state.runs > 0
                }
                if hasRun { continuation.resume() }
            }
        }
    }

    /// A consumer that works between elements takes what is buffered without waiting, in order, and nil when
    /// nothing is; the elements it did not take this way still come from `next`, and nothing after the end.
    @Test func takingWhatIsBufferedDoesNotWaitAndKeepsTheOrder() async {
        let (stream, continuation) = ObservationStream.makeStream(of: Int.self)
        var iterator = stream.makeAsyncIterator()
        #expect(iterator.nextIfBuffered() == nil)
        for value in 1...3 { continuation.yield(value) }
        #expect(iterator.nextIfBuffered() == 1)
        #expect(await iterator.next() == 2)
        #expect(iterator.nextIfBuffered() == 3)
        #expect(iterator.nextIfBuffered() == nil)
        continuation.yield(4)
        continuation.finish()
        #expect(iterator.nextIfBuffered() == 4)
        #expect(iterator.nextIfBuffered() == nil)
        #expect(await iterator.next() == nil)
    }

    /// What a stopping producer discards is gone, counted, and the stream goes on with what comes later.
    @Test func discardingTheBufferDropsWhatTheConsumerHasNotTakenAndKeepsTheStreamOpen() async {
        let (stream, continuation) = ObservationStream.makeStream(of: Int.self)
        var iterator = stream.makeAsyncIterator()
        for value in 1...100 { continuation.yield(value) }
        #expect(await iterator.next() == 1)
        #expect(continuation.discardBuffered() == 99)
        #expect(continuation.discardBuffered() == 0)
        continuation.yield(101)
        continuation.finish()
        #expect(await iterator.next() == 101)
        #expect(await iterator.next() == nil)
    }

    /// A stream with a buffer limit keeps the newest elements its consumer has not taken; `yield` says when the oldest
    /// gave way. A waiting consumer takes an element directly, whatever the limit.
    @Test func aBufferLimitKeepsTheNewestElements() async {
        let (stream, continuation) = ObservationStream.makeStream(of: Int.self, bufferLimit: 3)
        var iterator = stream.makeAsyncIterator()
        #expect((1...10).map { continuation.yield($0) } == [true, true, true] + Array(repeating: false, count: 7))
        #expect(await iterator.next() == 8)
        #expect(continuation.yield(11))
        continuation.finish()
        var rest: [Int] = []
        while let value = await iterator.next() { rest.append(value) }
        #expect(rest == [9, 10, 11])
    }

    @Test func deliversWhatWasBufferedInOrderAndEndsAfterFinish() async {
        let (stream, continuation) = ObservationStream.makeStream(of: Int.self)
        let termination = Termination()
        continuation.onTermination(termination.handler)
        for value in 1...1000 { continuation.yield(value) }
        continuation.finish()
        continuation.yield(1001)
        #expect(termination.runs == 1)

        var received: [Int] = []
        for await value in stream { received.append(value) }
        #expect(received == Array(1...1000))
        #expect(termination.runs == 1)
    }

    @Test func finishEndsAWaitingConsumer() async {
        let (stream, continuation) = ObservationStream.makeStream(of: Int.self)
        let consumer = Task {
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        continuation.yield(1)
        continuation.finish()
        #expect(await consumer.value == 1)
    }

    @Test func cancellingTheConsumerTerminates() async {
        let (stream, continuation) = ObservationStream.makeStream(of: Int.self)
        let termination = Termination()
        continuation.onTermination(termination.handler)
        let (started, signalStart) = ObservationStream.makeStream(of: Void.self)
        let consumer = Task {
            var count = 0
            signalStart.yield(())
            for await _ in stream { count += 1 }
            return count
        }
        var starts = started.makeAsyncIterator()
        await starts.next()
        consumer.cancel()
        await termination.wait()
        _ = await consumer.value
        #expect(termination.runs == 1)
        // Nothing reaches a terminated stream, and ending it again does not run the handler again.
        continuation.yield(1)
        continuation.finish()
        #expect(termination.runs == 1)
    }

    /// A consumer whose loop is isolated to an actor, in a task that prefers another executor (as the agents'
    /// responders prefer their connection's thread): `next` waits on the consumer's own isolation, so each element
    /// arrives in the actor's loop, and cancelling the task still ends a waiting `next` and the observation.
    @Test func aConsumerIsolatedToAnActorGetsEachElementAndEndsWhenCancelled() async {
        actor Consumer {
            var values: [Int] = []

            func consume(_ stream: ObservationStream<Int>, telling received: ObservationStream<Int>.Continuation) async
                -> [Int]
            {
                received.yield(0)
                for await value in stream {
                    values.append(value)
                    received.yield(value)
                }
                return values
            }
        }
        let (stream, continuation) = ObservationStream.makeStream(of: Int.self)
        let termination = Termination()
        continuation.onTermination(termination.handler)
        let (received, tellReceived) = ObservationStream.makeStream(of: Int.self)
        let actor = Consumer()
        let consumer = Task(executorPreference: globalConcurrentExecutor) {
            await actor.consume(stream, telling: tellReceived)
        }
        var arrivals = received.makeAsyncIterator()
        #expect(await arrivals.next() == 0)
        for value in 1...3 {
            continuation.yield(value)
            #expect(await arrivals.next() == value)
        }
        consumer.cancel()
        await termination.wait()
        #expect(await consumer.value == [1, 2, 3])
        #expect(termination.runs == 1)
    }

    @Test func aCancelledConsumerEndsEvenWhileElementsAreBuffered() async {
        let (stream, continuation) = ObservationStream.makeStream(of: Int.self)
        for value in 1...10 { continuation.yield(value) }
        let consumer = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        #expect(await consumer.value == 0)
    }

    @Test func droppingTheStreamTerminates() async {
        let termination = Termination()
        do {
            let (stream, continuation) = ObservationStream.makeStream(of: Int.self)
            continuation.onTermination(termination.handler)
            var iterator = stream.makeAsyncIterator()
            continuation.yield(1)
            #expect(await iterator.next() == 1)
            #expect(termination.runs == 0)
        }
        #expect(termination.runs == 1)
    }

    @Test func aHandlerSetAfterTheEndRunsAtOnce() {
        let (_, continuation) = ObservationStream.makeStream(of: Int.self)
        continuation.finish()
        let termination = Termination()
        continuation.onTermination(termination.handler)
        #expect(termination.runs == 1)
    }

    @Test func yieldsFromManyThreadsAllArrive() async {
        let (stream, continuation) = ObservationStream.makeStream(of: Int.self)
        let consumer = Task {
            var sum = 0
            for await value in stream { sum += value }
            return sum
        }
        await withDiscardingTaskGroup { group in
            for producer in 0..<8 {
                group.addTask {
                    for value in 1...1000 { continuation.yield(producer * 1000 + value) }
                }
            }
        }
        continuation.finish()
        #expect(await consumer.value == (1...8000).reduce(0, +))
    }
}
