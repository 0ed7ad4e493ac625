import Foundation

/// Runs CPU-bound test work on a thread of its own and returns its result. All suites share the cooperative pool,
/// which has a thread per core (two on a two-core machine): a test that computed for seconds on one of them (20-30 s
/// on a loaded machine) left every other test's agents one thread, and their waits for routing ran out.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
