#if canImport(Glibc)
    import Glibc
#endif

/// Sleeps in poll(2) until a requested line has edge events pending or its watcher is told to stop: the wait that
/// `GPIOInput` and `GPIOPulseCounter` run on a thread of their own.
struct EdgeWaiter {
    enum Outcome: Equatable {
        /// Edge events are pending: read them.
        case edges
        /// `stop` was signalled.
        case stopped
        /// The timeout passed, or a signal interrupted the wait: the caller works out its timeout again.
        case nothing
    }

    private let label: String
    private var descriptors: [pollfd]

    init(_ handle: GPIOLineHandle, stop: Wakeup, label: String) {
        self.label = label
        descriptors = [
            pollfd(fd: handle.eventDescriptor(), events: Int16(POLLIN | POLLPRI), revents: 0),
            pollfd(fd: stop.descriptor, events: Int16(POLLIN), revents: 0),
        ]
    }

    /// Waits at most `timeout` milliseconds (-1: without a limit). Throws when the wait fails or the line was released
    /// under it.
    mutating func wait(timeout: Int32 = -1) throws(GPIOError) -> Outcome {
        let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
        if ready < 0 {
            let code = errno
            if code == EINTR { return .nothing }
            throw .io(errno: code, "cannot wait for edges of \(label): \(describe(code))")
        }
        if descriptors[1].revents != 0 { return .stopped }
        if descriptors[0].revents & Int16(POLLNVAL) != 0 {
            throw .io(errno: EBADF, "edge events of \(label) stopped: the line was released")
        }
        return descriptors[0].revents != 0 ? .edges : .nothing
    }
}

/// A pipe that wakes the watching thread's poll when the stream ends.
final class Wakeup: Sendable {
    let descriptor: Int32
    private let writeDescriptor: Int32

    init() throws(GPIOError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw .io(errno: errno, "cannot create a pipe: \(describe(errno))") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        descriptor = ends[0]
        writeDescriptor = ends[1]
    }

    func signal() {
        var byte: UInt8 = 1
        _ = write(writeDescriptor, &byte, 1)
    }

    deinit {
        close(descriptor)
        close(writeDescriptor)
    }
}
