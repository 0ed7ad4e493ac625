import DetachedThread
import Dispatch
import Glibc
import Synchronization

enum BenchmarkError: Error, CustomStringConvertible {
    case broker(String)
    case mqtt(String)
    case agent(String)
    case timeout(String)
    case system(String, Int32)

    var description: String {
        switch self {
        case .broker(let message), .mqtt(let message), .agent(let message): message
        case .timeout(let what): "timed out: \(what)"
        case .system(let what, let code): "\(what): \(String(cString: strerror(code)))"
        }
    }
}

func monotonicNanoseconds() -> UInt64 {
    nanoseconds(CLOCK_MONOTONIC)
}

/// CPU time of every thread of this process (the broker runs in its own).
func processCPUNanoseconds() -> UInt64 {
    nanoseconds(CLOCK_PROCESS_CPUTIME_ID)
}

private func nanoseconds(_ clock: clockid_t) -> UInt64 {
    var time = timespec()
    clock_gettime(clock, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// The latencies of one round.
struct LatencyRound: Sendable {
    var samples: Int
    /// Microseconds, nearest rank.
    var p50: Double
    var p90: Double
    var p99: Double
    var mean: Double

    init(nanoseconds: [UInt64]) {
        let sorted = nanoseconds.sorted()
        samples = sorted.count
        func percentile(_ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            let rank = Int((fraction * Double(sorted.count)).rounded(.up))
            return Double(sorted[min(max(rank, 1), sorted.count) - 1]) / 1000
        }
        p50 = percentile(0.50)
        p90 = percentile(0.90)
        p99 = percentile(0.99)
        mean = sorted.isEmpty ? .nan : Double(sorted.reduce(0, +)) / Double(sorted.count) / 1000
    }
}

/// A figure over its rounds: the median round of each statistic.
struct LatencySummary: Sendable {
    var p50: Double
    var p90: Double
    var p99: Double
    var mean: Double

    init(rounds: [LatencyRound]) {
        p50 = median(rounds.map(\.p50))
        p90 = median(rounds.map(\.p90))
        p99 = median(rounds.map(\.p99))
        mean = median(rounds.map(\.mean))
    }
}

/// The middle value (the mean of the middle two for an even count); NaN for none.
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// The deliveries of one throughput round.
struct ThroughputRound: Sendable {
    var sent: Int
    var delivered: Int
    var seconds: Double
    /// CPU time this process spent on the round (publisher, receiver and their network threads), per message.
    var cpuMicrosecondsPerMessage: Double

    var lost: Int { sent - delivered }
    var perSecond: Double { Double(delivered) / seconds }
}

/// The round with the highest `key`, for throughput: interference on a shared machine only ever slows a flood
/// down, so the best round comes closest to what the code costs; the bare client and the agent get the same choice.
func bestRound<Round>(_ rounds: [Round], by key: (Round) -> Double) -> Round? {
    rounds.max { key($0) < key($1) }
}

/// Counts the deliveries of a throughput round at the receiver and hands the publisher a credit for each, so
/// that at most `window` messages are on their way: what is measured is messages delivered per second, not how
/// fast a publisher fills libmosquitto's unbounded send queue.
final class DeliveryProbe: Sendable {
    private let credits = DispatchSemaphore(value: 0)
    private let completed = DispatchSemaphore(value: 0)
    private let received = Atomic<Int>(0)
    private let expected = Atomic<Int>(.max)
    private let completion = Atomic<UInt64>(0)

    /// Called by the receiver for every message, on whatever thread it receives on.
    func delivered() {
        let count = received.wrappingAdd(1, ordering: .relaxed).newValue
        credits.signal()
        if count == expected.load(ordering: .relaxed) {
            completion.store(monotonicNanoseconds(), ordering: .relaxed)
            completed.signal()
        }
    }

    /// Publishes `count` messages, each once a credit is free, and waits for them at the receiver. Blocks: run it
    /// on a thread of its own. A publisher stalled by `stallTimeout` (lost messages hold their credits) ends the
    /// round early; the messages missing at the end count as lost.
    func flood(
        count: Int, window: Int, stallTimeout: Double = 2, publish: (Int) throws(BenchmarkError) -> Void
    ) throws(BenchmarkError) -> ThroughputRound {
        while credits.wait(timeout: .now()) == .success {}
        while completed.wait(timeout: .now()) == .success {}
        received.store(0, ordering: .relaxed)
        expected.store(count, ordering: .relaxed)
        for _ in 0..<window { credits.signal() }

        let cpuStart = processCPUNanoseconds()
        let start = monotonicNanoseconds()
        var sent = 0
        while sent < count, credits.wait(timeout: .now() + stallTimeout) == .success {
            try publish(sent)
            sent += 1
        }
        let publishingEnded = monotonicNanoseconds()
        let isComplete = completed.wait(timeout: .now() + stallTimeout) == .success
        let cpu = processCPUNanoseconds() - cpuStart
        let end = isComplete ? completion.load(ordering: .relaxed) : publishingEnded
        expected.store(.max, ordering: .relaxed)
        return ThroughputRound(
            sent: count, delivered: received.load(ordering: .relaxed), seconds: Double(end - start) / 1e9,
            cpuMicrosecondsPerMessage: Double(cpu) / 1000 / Double(count))
    }
}

/// Runs blocking work (a semaphore wait, a flood) on a thread of its own, not on one of Swift's cooperative
/// threads, which the agents need meanwhile.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws(BenchmarkError) -> T) async throws(BenchmarkError)
    -> T
{
    let result: Result<T, BenchmarkError>
    do {
        result = try await DetachedThread.onOwnThread { Result { () throws(BenchmarkError) in try body() } }
    } catch {
        throw .system("cannot start a thread", error.code)
    }
    return try result.get()
}

/// Starts a detached thread that runs `body`.
func startThread(_ body: @escaping @Sendable () -> Void) throws(BenchmarkError) {
    let rc = startDetachedThread(body)
    guard rc == 0 else { throw .system("cannot start a thread", rc) }
}

/// Runs `body`, cancelling it when `limit` passes: a lost message must not hang the benchmark.
func withDeadline<T: Sendable>(
    _ what: String, _ limit: Duration = .seconds(60), _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask(operation: body)
        group.addTask {
            try await Task.sleep(for: limit)
            throw BenchmarkError.timeout(what)
        }
        defer { group.cancelAll() }
        guard let result = try await group.next() else { throw BenchmarkError.timeout(what) }
        return result
    }
}

/// Polls `condition` every 5 ms until it holds.
func waitUntil(_ what: String, within limit: Duration = .seconds(10), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else { throw BenchmarkError.timeout(what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}
