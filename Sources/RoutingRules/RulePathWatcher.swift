import DetachedThread
import Glibc
import Synchronization

/// Watches a rules path, a directory of rule files or a single rule file, and yields its rules whenever they
/// change.
///
/// The first element is the rule set as it is when iteration starts. After that, a burst of changes (an editor
/// saving by writing a temporary file and renaming it, a `git checkout`, a deploy that swaps a symlink) is let
/// settle for `quietPeriod` and then the path is loaded again. An element is yielded when the outcome differs from
/// the previous one: a new rule set, or the problems of a failed load, after which the consumer keeps its last good
/// rules. A missing path (removed, moved away, a symlink to nothing) is such a failure, yielded once; the path is
/// watched on and loaded again when it reappears.
///
/// inotify watches the path itself (through a symlink) for changes to its files, and its parent directory for the
/// path's name: that sees the path replaced (renamed over, moved away and back, a symlink swapped by `mv -T`).
/// After each change both watches are set up again by name. What inotify cannot report, a parent directory that
/// is missing or replaced higher up (say, a symlinked `/etc/coaty-edge` swapped), is caught by checking every
/// `recheckInterval` whether the path and its parent still name what is watched: two `stat` calls.
///
/// The watches and the loading run on a thread of their own. Cancelling the consuming task, or dropping the
/// iterator, stops that thread and closes its descriptors.
public struct RulePathWatcher: AsyncSequence, Sendable {
    public typealias Element = Result<RoutingRuleSet, RuleLoadError>

    public var path: String
    public var quietPeriod: Duration
    public var recheckInterval: Duration

    public init(path: String, quietPeriod: Duration = .milliseconds(150), recheckInterval: Duration = .seconds(2)) {
        self.path = path
        self.quietPeriod = quietPeriod
        self.recheckInterval = recheckInterval
    }

    public func makeAsyncIterator() -> AsyncStream<Element>.Iterator {
        // Only the newest outcome matters to a consumer that fell behind.
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(1))
        do {
            let watch = try PathWatch(watcher: self, continuation: continuation)
            continuation.onTermination = { _ in watch.stop() }
            try watch.start()
        } catch {
            continuation.yield(.failure(error))
            continuation.finish()
        }
        return stream.makeAsyncIterator()
    }
}

/// The inotify descriptor and the thread that waits on it. The thread owns the inotify descriptor, its watches
/// and the reading end of the stop pipe; `stop()` may come from any thread, so the writing end sits behind a
/// mutex and is closed by the watch thread as it exits.
private final class PathWatch: Sendable {
    typealias Element = RulePathWatcher.Element

    private let watcher: RulePathWatcher
    private let parent: (directory: String, name: String)?
    private let continuation: AsyncStream<Element>.Continuation
    private let inotify: Int32
    private let stopReader: Int32
    private let stopWriter: Mutex<Int32?>
    /// Touched only by the watch thread; a mutex only to make that checkable.
    private let watches = Mutex(Watches())

    private struct Watches {
        var path: Int32?
        var parent: Int32?
        /// What the path and its parent named when they were watched; nil where that failed.
        var identities = Identities()
    }

    private struct Identities: Equatable {
        var path: FileIdentity?
        var parent: FileIdentity?
    }

    /// The changes to the path itself (a directory's entries, a file's content) and to the watched object.
    private static let pathEvents = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF)
    /// The entries of the parent directory appearing and going, so the path's name among them.
    private static let parentEvents = UInt32(
        IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
    private static let watchedObjectGone = UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT)

    init(watcher: RulePathWatcher, continuation: AsyncStream<Element>.Continuation) throws(RuleLoadError) {
        self.watcher = watcher
        self.continuation = continuation
        parent = Self.split(watcher.path)
        func failure(_ what: String) -> RuleLoadError {
            Self.failure(watcher.path, "cannot watch the rules: \(what): \(SystemError(code: errno))")
        }
        inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotify >= 0 else { throw failure("inotify_init1") }
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

    /// The parent directory and the name in it; nil for `/`.
    private static func split(_ path: String) -> (directory: String, name: String)? {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return (".", String(trimmed)) }
        let name = trimmed[trimmed.index(after: slash)...]
        guard !name.isEmpty else { return nil }
        return (slash == trimmed.startIndex ? "/" : String(trimmed[..<slash]), String(name))
    }

    private static func failure(_ path: String, _ reason: String) -> RuleLoadError {
        RuleLoadError(problems: [RuleFileProblem(file: path, location: .file, reason: reason)])
    }

    func start() throws(RuleLoadError) {
        let result = startDetachedThread(named: "rules-watcher") { self.run() }
        guard result == 0 else {
            closeDescriptors()
            throw Self.failure(watcher.path, "cannot watch the rules: pthread_create: \(SystemError(code: result))")
        }
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
        case stopped
    }

    private func run() {
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
        publish(watchAndLoad())
        // A path that keeps changing is still reloaded this often.
        let longestDelay = watcher.quietPeriod * 10
        while true {
            switch wait(timeout: watcher.recheckInterval) {
            case .stopped: return
            case .changed: break
            case .quiet:
                // The fallback for what inotify does not report, also run when unrelated events in the parent
                // directory woke the thread. Comparing identities rather than reloading keeps an idle watcher from
                // reading the files every few seconds.
                guard currentIdentities() != watches.withLock({ $0.identities }) else { continue }
            }
            let deadline = ContinuousClock.now + longestDelay
            settling: while true {
                let remaining = min(watcher.quietPeriod, ContinuousClock.now.duration(to: deadline))
                guard remaining > .zero else { break settling }
                switch wait(timeout: remaining) {
                case .stopped: return
                case .changed: continue settling
                case .quiet: break settling
                }
            }
            publish(watchAndLoad())
        }
    }

    /// Sets the watches up for what the path and its parent name now, then loads the rules.
    private func watchAndLoad() -> Element {
        let unwatched = watches.withLock { watches in
            let unwatched = rewatch(watcher.path, Self.pathEvents, &watches.path)
            if let parent {
                _ = rewatch(parent.directory, Self.parentEvents, &watches.parent)
            }
            watches.identities = currentIdentities()
            if unwatched != nil { watches.identities.path = nil }  // so that the next recheck tries again
            return unwatched
        }
        var information = stat()
        if stat(watcher.path, &information) != 0 && errno == ENOENT {
            return .failure(
                Self.failure(
                    watcher.path,
                    "the rules path does not exist (removed, moved away, or a symlink to nothing); "
                        + "its rules are loaded again when it reappears"))
        }
        if let unwatched {
            return .failure(
                Self.failure(
                    watcher.path,
                    "cannot watch the rules: inotify_add_watch: \(unwatched); trying again every \(watcher.recheckInterval)"
                ))
        }
        return Result { () throws(RuleLoadError) in try RoutingRuleSet.load(path: watcher.path) }
    }

    /// Watches what `path` names now in place of what `descriptor` watched. The kernel hands out the same
    /// descriptor for the same object, so only a watch of something else is removed. Returns why the watch
    /// failed, unless the path does not exist.
    private func rewatch(_ path: String, _ events: UInt32, _ descriptor: inout Int32?) -> SystemError? {
        let new = inotify_add_watch(inotify, path, events)
        let problem = new < 0 && errno != ENOENT ? SystemError(code: errno) : nil
        if let old = descriptor, old != new {
            // Fails harmlessly when the kernel already removed the watch with its object.
            _ = inotify_rm_watch(inotify, old)
        }
        descriptor = new >= 0 ? new : nil
        return problem
    }

    private func currentIdentities() -> Identities {
        Identities(path: FileIdentity(of: watcher.path), parent: parent.flatMap { FileIdentity(of: $0.directory) })
    }

    /// Waits for inotify events, a stop request or the timeout, and drains the events that arrived.
    private func wait(timeout: Duration) -> Wake {
        var descriptors = [
            pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopReader, events: Int16(POLLIN), revents: 0),
        ]
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&descriptors, 2, milliseconds)
        if ready < 0 {
            // A signal interrupted the wait: count it as a change, since a needless reload costs little. Any other
            // error means the descriptors are unusable, and the watch ends.
            return errno == EINTR ? .changed : .stopped
        }
        if descriptors[1].revents != 0 { return .stopped }
        if ready == 0 { return .quiet }
        return drainEvents() ? .changed : .quiet
    }

    /// Reads the pending events; whether one of them concerns the rules. Events about other names in the parent
    /// directory, and those of watches already replaced, do not.
    private func drainEvents() -> Bool {
        let bufferSize = 64 << 10
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: bufferSize, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        let (pathWatch, parentWatch) = watches.withLock { ($0.path, $0.parent) }
        let name = parent.map { Array($0.name.utf8) } ?? []
        var concernsRules = false
        while true {
            let count = read(inotify, buffer.baseAddress, bufferSize)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return concernsRules }
            var offset = 0
            let headerSize = MemoryLayout<inotify_event>.size
            while offset + headerSize <= count {
                let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                let nameBytes = UnsafeRawBufferPointer(
                    rebasing: buffer[(offset + headerSize)..<min(count, offset + headerSize + Int(event.len))])
                if event.wd == -1 || event.wd == pathWatch {
                    // A queue overflow, or a change to the path's files or to the path's object.
                    concernsRules = true
                } else if event.wd == parentWatch {
                    concernsRules =
                        concernsRules || event.mask & Self.watchedObjectGone != 0
                        || nameBytes.prefix(while: { $0 != 0 }).elementsEqual(name)
                }
                offset += headerSize + Int(event.len)
            }
        }
    }
}

/// Which file a path names (following symlinks): its device and inode.
private struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    init?(of path: String) {
        var information = stat()
        guard stat(path, &information) == 0 else { return nil }
        device = UInt64(information.st_dev)
        inode = UInt64(information.st_ino)
    }
}
