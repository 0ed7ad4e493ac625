import Synchronization

/// The elements of one observation, in order, for one consumer: what the communication manager's `observe...`
/// methods return.
///
/// It behaves as an `AsyncStream` with unbounded buffering: the producer yields from any thread; the sequence
/// ends after the buffered elements once the producer finishes it; and the observation ends (the producer's
/// termination handler runs, so the manager forgets it) when the consuming task is cancelled or the sequence and
/// its iterators are dropped. One task iterates at a time.
///
/// Why not `AsyncStream`: its code is generic code of the standard library that runs unspecialized, looking up
/// type metadata on every `yield` and `next`; on the receive path that cost as much as decoding the event. This
/// one is inlinable, so it is specialized for each element type where it is used.
public struct ObservationStream<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = Never

    /// Shared by the sequence and its iterators; when the last of them goes, the observation ends.
    @usableFromInline
    final class Consumer: Sendable {
        @usableFromInline let queue: Queue
        /// `queue.terminate()`, made where the element type is known: a generic class's deinit runs unspecialized,
        /// and `terminate` run from there looked up the metadata of its generic types each time (a request's
        /// responses end with every request).
        private let terminate: @Sendable () -> Void

        init(_ queue: Queue) {
            self.queue = queue
            terminate = { queue.terminate() }
        }

        deinit {
            terminate()
        }
    }

    @usableFromInline let consumer: Consumer

    /// A stream and the continuation that feeds it. With a `bufferLimit`, the stream holds at most that many elements
    /// the consumer has not taken: a new one then replaces the oldest (and `yield` says so), so that a consumer that
    /// falls behind a flood costs bounded memory.
    public static func makeStream(of _: Element.Type = Element.self, bufferLimit: Int? = nil) -> (
        stream: Self, continuation: Continuation
    ) {
        let queue = Queue(limit: Swift.max(1, bufferLimit ?? .max))
        return (Self(consumer: Consumer(queue)), Continuation(queue: queue))
    }

    /// A stream that has ended: for an observation that cannot start.
    public static var finished: Self {
        let (stream, continuation) = makeStream()
        continuation.finish()
        return stream
    }

    @usableFromInline
    init(consumer: Consumer) {
        self.consumer = consumer
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(consumer: consumer)
    }

    public struct Iterator: AsyncIteratorProtocol {
        public typealias Failure = Never

        @usableFromInline let consumer: Consumer

        @usableFromInline
        init(consumer: Consumer) {
            self.consumer = consumer
        }

        @inlinable
        public mutating func next() async -> Element? {
            await consumer.queue.next(isolation: nil)
        }

        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            await consumer.queue.next(isolation: actor)
        }

        /// The next element if one is buffered, without suspending; nil when none is (or the sequence ended). For a
        /// consumer that works between elements and takes what arrived meanwhile before it goes on.
        @inlinable
        package mutating func nextIfBuffered() -> Element? {
            consumer.queue.takeBuffered()
        }
    }

    /// The producer's side. Copies feed the same stream.
    public struct Continuation: Sendable {
        @usableFromInline let queue: Queue

        @usableFromInline
        init(queue: Queue) {
            self.queue = queue
        }

        /// Appends an element for the consumer; dropped once the stream has finished or the consumer is gone. Returns
        /// false when the buffer was full and the oldest element was dropped for it.
        @inlinable
        @discardableResult
        public func yield(_ element: consuming Element) -> Bool {
            queue.yield(element)
        }

        /// Ends the stream after the elements already yielded; runs the termination handler.
        @inlinable
        public func finish() {
            queue.finish()
        }

        /// Drops the elements buffered for the consumer, without ending the stream; returns how many there were. For a
        /// producer that stops: what the consumer has not taken yet is no longer wanted.
        @discardableResult
        package func discardBuffered() -> Int {
            queue.discardBuffered()
        }

        /// Whether `yield` would keep an element without dropping the oldest: the buffer has room, the consumer
        /// waits, or the stream has ended (nothing is kept then, nothing is waited for). For a producer that can hold
        /// an element back instead of losing one (zero-loss delivery).
        package var hasRoom: Bool {
            queue.hasRoom
        }

        /// Runs once, when the stream finishes or the consumer goes (cancelled, or the sequence dropped); at once
        /// if that has happened already.
        public func onTermination(_ handler: @escaping @Sendable () -> Void) {
            queue.setTerminationHandler(handler)
        }
    }

    @usableFromInline
    final class Queue: Sendable {
        @usableFromInline
        enum Phase: Sendable {
            case open
            /// The producer finished: the buffer drains, then the sequence ends.
            case finished
            /// The consumer is gone: nothing more is buffered or delivered.
            case terminated
        }

        @usableFromInline
        struct State: ~Copyable {
            /// Elements not yet taken, from `head` on; the taken prefix is dropped in bulk.
            @usableFromInline var buffer: [Element] = []
            @usableFromInline var head = 0
            /// The consumer, while it waits for an element (the buffer is empty then).
            @usableFromInline var waiter: UnsafeContinuation<Element?, Never>?
            @usableFromInline var phase = Phase.open
            @usableFromInline var onTermination: (@Sendable () -> Void)?

            @usableFromInline
            init() {}

            /// The next element; nil when there is none: the sequence ended if `phase` is no longer open.
            @inlinable
            mutating func take() -> Element? {
                guard head < buffer.count else { return nil }
                let element = buffer[head]
                head += 1
                if head == buffer.count {
                    buffer.removeAll(keepingCapacity: true)
                    head = 0
                } else if head >= 64 && head * 2 >= buffer.count {
                    buffer.removeFirst(head)
                    head = 0
                }
                return element
            }
        }

        @usableFromInline let state = Mutex(State())
        /// The most elements the buffer holds.
        @usableFromInline let limit: Int

        @usableFromInline
        init(limit: Int) {
            self.limit = limit
        }

        /// The element is moved, never copied, into the buffer or to the waiting consumer: a copy of an event retains
        /// each of its strings and values, and releases them again.
        @inlinable
        func yield(_ element: consuming Element) -> Bool {
            var pending = Optional(element)
            let (waiter, isKept) = state.withLock { state -> (UnsafeContinuation<Element?, Never>?, Bool) in
                guard case .open = state.phase else { return (nil, true) }
                if let waiter = state.waiter {
                    state.waiter = nil
                    return (waiter, true)
                }
                let isFull = state.buffer.count - state.head >= limit
                if isFull { _ = state.take() }
                if let element = pending.take() { state.buffer.append(element) }
                return (nil, !isFull)
            }
            waiter?.resume(returning: pending.take())
            return isKept
        }

        var hasRoom: Bool {
            state.withLock { state in
                guard case .open = state.phase else { return true }
                return state.waiter != nil || state.buffer.count - state.head < limit
            }
        }

        /// Takes a buffered element without suspending when there is one; otherwise waits for `yield`, `finish`
        /// or the task's cancellation. A cancelled consumer gets nil even while elements are buffered, as from
        /// `AsyncStream`, so that a loop over a busy observation ends with its task.
        @inlinable
        func next(isolation actor: isolated (any Actor)?) async -> Element? {
            if Task.isCancelled {
                terminate()
                return nil
            }
            let (element, isOpen) = state.withLock { state in (state.take(), state.phase == .open) }
            if element != nil || !isOpen { return element }
            // The variant that runs on the caller's executor: the one with an `isolation` parameter is a generic
            // function of the runtime library that switches to that isolation as it starts and again after the
            // operation, two executor switches more per wait; with a task executor preference (the connection's
            // thread) each switch takes the task's status record lock to find it. Cancellation is registered the
            // same way.
            return await _unsafeInheritExecutor_withTaskCancellationHandler(
                operation: {
                    await withUnsafeContinuation(isolation: actor) {
                        (continuation: UnsafeContinuation<Element?, Never>) in
                        let (element, isWaiting) = state.withLock { state -> (Element?, Bool) in
                            if let element = state.take() { return (element, false) }
                            guard case .open = state.phase else { return (nil, false) }
                            precondition(state.waiter == nil, "ObservationStream: next() awaited by two tasks at once")
                            state.waiter = continuation
                            return (nil, true)
                        }
                        if !isWaiting { continuation.resume(returning: element) }
                    }
                },
                onCancel: { terminate() })
        }

        @inlinable
        func takeBuffered() -> Element? {
            state.withLock { state in state.phase == .terminated ? nil : state.take() }
        }

        @usableFromInline
        func finish() {
            let (waiter, handler) = state.withLock {
                state -> (UnsafeContinuation<Element?, Never>?, (@Sendable () -> Void)?) in
                guard case .open = state.phase else { return (nil, nil) }
                state.phase = .finished
                defer {
                    state.waiter = nil
                    state.onTermination = nil
                }
                return (state.waiter, state.onTermination)
            }
            waiter?.resume(returning: nil)
            handler?()
        }

        /// The consumer is gone: drops what is buffered, ends a pending `next` and runs the termination handler
        /// (unless `finish` already ran it).
        @usableFromInline
        func terminate() {
            let (waiter, handler, dropped) = state.withLock {
                state -> (UnsafeContinuation<Element?, Never>?, (@Sendable () -> Void)?, [Element]) in
                guard state.phase != .terminated else { return (nil, nil, []) }
                state.phase = .terminated
                defer {
                    state.waiter = nil
                    state.onTermination = nil
                    state.buffer = []
                }
                return (state.waiter, state.onTermination, state.buffer)
            }
            waiter?.resume(returning: nil)
            handler?()
            // The elements are released here, outside the lock.
            _ = dropped
        }

        func discardBuffered() -> Int {
            let (dropped, count) = state.withLock { state -> ([Element], Int) in
                defer {
                    state.buffer = []
                    state.head = 0
                }
                return (state.buffer, state.buffer.count - state.head)
            }
            // The elements are released here, outside the lock.
            _ = dropped
            return count
        }

        func setTerminationHandler(_ handler: @escaping @Sendable () -> Void) {
            let hasEnded = state.withLock { state -> Bool in
                guard case .open = state.phase else { return true }
                state.onTermination = handler
                return false
            }
            if hasEnded { handler() }
        }
    }
}
