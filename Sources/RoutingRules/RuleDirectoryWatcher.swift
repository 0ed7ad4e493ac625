import Glibc
import Synchronization

/// Watches a rule directory and yields its rules whenever they change.
///
/// The first element is the rule set as it is when iteration starts. After that, a burst of changes in the
/// directory (an editor saving by writing a temporary file and renaming it, a `git checkout`) is let settle for
/// `quietPeriod` and then the directory is loaded again. An element is yielded when the outcome differs from the
/// previous one: a new rule set, or the problems of a failed load, after which the consumer keeps its last good
/// rules. If the directory itself is removed or moved, a failure saying so is the last element.
///
/// The directory is watched with inotify on a thread of its own, which also reads the files. Cancelling the
/// consuming task, or dropping the iterator, stops that thread and closes its descriptors.
public struct RuleDirectoryWatcher: AsyncSequence, Sendable {
    public typealias Element = Result<RoutingRuleSet, RuleLoadError>

    public var directory: String
    public var quietPeriod: Duration

    public init(directory: String, quietPeriod: Duration = .milliseconds(150)) {
        self.directory = directory
        self.quietPeriod = quietPeriod
    }

    public func makeAsyncIterator() -> AsyncStream<Element>.Iterator {
        // Only the newest outcome matters to a consumer that fell behind.
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(1))
        do {
            let watch = try DirectoryWatch(directory: directory, quietPeriod: quietPeriod, continuation: continuation)
            continuation.onTermination = { _ in watch.stop() }
            try watch.start()
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
        }
        return stream.makeAsyncIterator()
    }
}

/// One inotify watch and the thread that waits on it. The thread owns the inotify descriptor and the reading end
/// of the stop pipe; `stop()` may come from any thread, so the writing end sits behind a mutex and is closed by
/// the watch thread as it exits.
private final class DirectoryWatch: Sendable {
    typealias Element = RuleDirectoryWatcher.Element

    private let directory: String
    private let quietPeriod: Duration
    private let continuation: AsyncStream<Element>.Continuation
    private let inotify: Int32
    private let stopReader: Int32
    private let stopWriter: Mutex<Int32?>

    private static let events = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF
            | IN_ONLYDIR)
    private static let directoryGone = UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT)

    init(directory: String, quietPeriod: Duration, continuation: AsyncStream<Element>.Continuation)
        throws(RuleLoadError)
    {
        self.directory = directory
        self.quietPeriod = quietPeriod
        self.continuation = continuation
        func failure(_ what: String) -> RuleLoadError {
            Self.failure(directory, "cannot watch the directory: \(what): \(SystemError(code: errno))")
        }
        inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotify >= 0 else { throw failure("inotify_init1") }
        guard inotify_add_watch(inotify, directory, Self.events) >= 0 else {
            let problem = failure("inotify_add_watch")
            close(inotify)
            throw problem
        }
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else {
            let problem = failure("pipe")
            close(inotify)
            throw problem
        }
        for end in pipeEnds {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        stopReader = pipeEnds[0]
        stopWriter = Mutex(pipeEnds[1])
    }

    private static func failure(_ directory: String, _ reason: String) -> RuleLoadError {
        RuleLoadError(problems: [RuleFileProblem(file: directory, location: .file, reason: reason)])
    }

    func start() throws(RuleLoadError) {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                Unmanaged<DirectoryWatch>.fromOpaque(context).takeRetainedValue().run()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<DirectoryWatch>.fromOpaque(context).release()
            closeDescriptors()
            throw Self.failure(directory, "cannot watch the directory: pthread_create: \(SystemError(code: result))")
        }
        pthread_detach(thread)
    }

    func stop() {
        stopWriter.withLock { writer in
            guard let writer else { return }
            var byte: UInt8 = 1
            _ = write(writer, &byte, 1)
        }
    }

    private func closeDescriptors() {
        close(inotify)
        close(stopReader)
        stopWriter.withLock { writer in
            if let open = writer { close(open) }
            writer = nil
        }
    }

    private enum Wake {
        case changed
        case quiet
        case directoryGone
        case stopped
    }

    private func run() {
        Self.nameCurrentThread("rules-watcher")
        defer {
            closeDescriptors()
            continuation.finish()
        }
        var last: Element?
        func publish(_ outcome: Element) {
            guard outcome != last else { return }
            last = outcome
            continuation.yield(outcome)
        }
        publish(load())
        // A directory that keeps changing is still reloaded this often.
        let longestDelay = quietPeriod * 10
        while true {
            switch wait(timeout: nil) {
            case .stopped: return
            case .directoryGone: return publishDirectoryGone()
            case .changed, .quiet: break
            }
            let deadline = ContinuousClock.now + longestDelay
            settling: while true {
                let remaining = min(quietPeriod, ContinuousClock.now.duration(to: deadline))
                guard remaining > .zero else { break settling }
                switch wait(timeout: remaining) {
                case .stopped: return
                case .directoryGone: return publishDirectoryGone()
                case .changed: continue settling
                case .quiet: break settling
                }
            }
            publish(load())
        }

        func publishDirectoryGone() {
            continuation.yield(
                .failure(Self.failure(directory, "the directory was removed or moved; it is no longer watched")))
        }
    }

    private func load() -> Element {
        Result { () throws(RuleLoadError) in try RoutingRuleSet.load(directory: directory) }
    }

    /// Waits for inotify events, a stop request or the timeout, and drains the events that arrived.
    private func wait(timeout: Duration?) -> Wake {
        var descriptors = [
            pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopReader, events: Int16(POLLIN), revents: 0),
        ]
        let milliseconds =
            timeout.map {
                Int32(clamping: $0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000)
            } ?? -1
        let ready = poll(&descriptors, 2, milliseconds)
        if ready < 0 {
            // A signal interrupted the wait: count it as a change, since a needless reload costs little. Any other
            // error means the descriptors are unusable, and the watch ends.
            return errno == EINTR ? .changed : .stopped
        }
        if descriptors[1].revents != 0 { return .stopped }
        if ready == 0 { return .quiet }
        return drainEvents()
    }

    private func drainEvents() -> Wake {
        let bufferSize = 64 << 10
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: bufferSize, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        var wake = Wake.changed
        while true {
            let count = read(inotify, buffer.baseAddress, bufferSize)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return wake }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                if event.mask & Self.directoryGone != 0 { wake = .directoryGone }
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
    }

    /// Names the thread (as `top -H` and /proc show it) through /proc, which needs no non-portable pthread call.
    private static func nameCurrentThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var bytes = Array(name.utf8.prefix(15))
        _ = write(descriptor, &bytes, bytes.count)
    }
}
