import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body`, which may block in `open` on the FIFO at `fifo`, on a thread of its own: its result if it returned
/// within `timeout`, else nil. A child process opens the FIFO for writing once `timeout` has passed, which lets a
/// blocked reader go (it reads an empty file), so that a regression fails the test instead of hanging it. The child
/// is started before `body`: under umockdev's preload, a blocked `open` holds a lock that every path operation of
/// this process waits for.
public func returnsPromptly<T: Sendable>(
    within timeout: Duration = .seconds(10), unblocking fifo: String, _ body: @escaping @Sendable () -> T
) -> T? {
    // posix_spawn and SIGKILL to its process group, not Foundation's Process: a shell inherits the blocked SIGTERM
    // of Swift's threads, and waiting for a Process could hang.
    let script = #"sleep "$1"; : > "$0""#
    let arguments: [String] = ["/bin/sh", "-c", script, fifo, "\(timeout.components.seconds)"]
    let argv = arguments.map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
    posix_spawnattr_setpgroup(&attributes, 0)
    var writer = pid_t()
    guard posix_spawn(&writer, "/bin/sh", nil, &attributes, argv, environ) == 0 else { return nil }
    defer {
        kill(-writer, SIGKILL)
        var status: Int32 = 0
        while waitpid(writer, &status, 0) < 0 && errno == EINTR {}
    }
    let result = ResultBox<T>()
    let start = ContinuousClock.now
    let thread = Thread { result.set(body()) }
    thread.start()
    guard result.wait(for: timeout + .seconds(30)), ContinuousClock.now - start < timeout else { return nil }
    return result.value
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
        let deadline = Date(
            timeIntervalSinceNow: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) * 1e-18)
        condition.lock()
        defer { condition.unlock() }
        while stored == nil {
            if !condition.wait(until: deadline) { return stored != nil }
        }
        return true
    }
}
