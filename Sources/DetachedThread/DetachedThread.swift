#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` on a new detached thread, for blocking calls that must not hold one of the concurrency pool's
/// threads; returns 0, or the error of pthread_create (then `body` is not run and is released). With a `name`, the
/// thread carries it (what `top -H`, `perf` and `/proc/PID/task/*/comm` show; at most 15 bytes are kept).
package func startDetachedThread(named name: String? = nil, _ body: @escaping @Sendable () -> Void) -> Int32 {
    let context = Unmanaged.passRetained(
        ThreadBody {
            if let name { nameCurrentThread(name) }
            body()
        }
    ).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let result = pthread_create(
        &thread, &attributes,
        { context in
            guard let context else { return nil }
            Unmanaged<ThreadBody>.fromOpaque(context).takeRetainedValue().body()
            return nil
        }, context)
    if result != 0 { Unmanaged<ThreadBody>.fromOpaque(context).release() }
    return result
}

/// The error of pthread_create when a thread could not be started.
package struct ThreadStartError: Error, Equatable {
    package let code: Int32
}

/// Runs `body` on a detached thread of its own and returns its result: for blocking waits and long computations,
/// which would hold one of the concurrency pool's threads (one per core) while other tasks need it.
package func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async throws(ThreadStartError) -> T {
    let result = await withCheckedContinuation {
        (continuation: CheckedContinuation<Result<T, ThreadStartError>, Never>) in
        let rc = startDetachedThread { continuation.resume(returning: .success(body())) }
        if rc != 0 { continuation.resume(returning: .failure(ThreadStartError(code: rc))) }
    }
    return try result.get()
}

/// Names the calling thread through /proc: Swift's Glibc does not declare `pthread_setname_np`, a GNU extension. A
/// failure leaves the inherited name. At most 15 bytes are kept.
package func nameCurrentThread(_ name: String) {
    let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return }
    defer { close(descriptor) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
}

/// What the kernel calls the calling thread (`/proc/thread-self/comm`), or "?" when it cannot say.
package func currentThreadName() -> String {
    let descriptor = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return "?" }
    defer { close(descriptor) }
    var bytes = [UInt8](repeating: 0, count: 64)
    let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    guard count > 0 else { return "?" }
    return String(decoding: bytes[..<count].prefix(while: { $0 != UInt8(ascii: "\n") }), as: UTF8.self)
}

private final class ThreadBody: Sendable {
    let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }
}

extension timespec {
    /// A duration as the kernel takes it, for the waits of a thread that blocks: a pause (`nanosleep`), a deadline
    /// on a clock (`pthread_cond_timedwait`). Whole nanoseconds, rounded down.
    package init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    }
}
