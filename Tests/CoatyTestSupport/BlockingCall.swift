import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body`, which may block in `open` on the FIFO at `fifo`, on a thread of its own, and waits at most `timeout`
/// for it: nil if it did not return in time. The FIFO is then opened for writing and closed again, which lets a
/// blocked reader go, so that a regression fails the test instead of hanging it.
public func returnsPromptly<T: Sendable>(
    within timeout: Duration = .seconds(10), unblocking fifo: String, _ body: @escaping @Sendable () -> T
) -> T? {
    let result = ResultBox<T>()
    let thread = Thread { result.set(body()) }
    thread.start()
    if result.wait(for: timeout) { return result.value }
    let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
    if writer >= 0 { close(writer) }
    _ = result.wait(for: .seconds(10))
    return nil
}

/// Creates a FIFO (named pipe) at `path`.
public func makeFIFO(_ path: String) throws {
    guard mkfifo(path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var stored: T?

    var value: T? {
        condition.lock()
        defer { condition.unlock() }
        return stored
    }

    func set(_ value: T) {
        condition.lock()
        stored = value
        condition.broadcast()
        condition.unlock()
    }

    /// Whether a value came within `timeout`.
    func wait(for timeout: Duration) -> Bool {
        let deadline = Date(timeIntervalSinceNow: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) * 1e-18)
        condition.lock()
        defer { condition.unlock() }
        while stored == nil {
            if !condition.wait(until: deadline) { return stored != nil }
        }
        return true
    }
}
