import CMosquitto
import CMosquittoSocket
import DetachedThread
import Glibc
import Synchronization

/// `MQTTTransport` over libmosquitto, with one network thread per connection.
///
/// The thread runs its own poll loop over libmosquitto's external-loop calls (`mosquitto_loop_read`, `_write`,
/// `_misc`) rather than `mosquitto_loop`: it also waits on an eventfd, so that it can run the jobs of a
/// `ConnectionExecutor` between reads and writes, and be woken for them. libmosquitto's own wake-up pipe, written
/// for every packet it queues and read only by its own loop, is closed before the connect (`LibraryWakePipe`).
/// libmosquitto's reads of the socket go through a buffer of the network thread (`CMosquittoSocket`), and the thread
/// reads every packet of the buffer before it polls again: a burst of values costs one read() and one poll(), where
/// libmosquitto alone reads each packet with three read() calls, one packet per poll. Its writes at the end of a
/// batch (`publishingTogether`) and in the network thread's turn are gathered in a buffer of the connection for the
/// length of that `mosquitto_loop_write` (`writeQueued`), so that the packets queued meanwhile leave in one write()
/// rather than one each.
/// It reconnects by itself: libmosquitto's `mosquitto_loop_forever` keeps its own schedule and retries failed TCP
/// connects silently, so it can neither follow `MQTTReconnectPolicy` nor report attempts.
/// The initial connect is not an attempt: when it fails or a connection is lost, attempts 1, 2, ... follow after
/// `delay(beforeAttempt:)`, and after `maximumAttempts` of them the transport gives up.
///
/// One thread at a time reads or writes the socket: the network thread, or while it sleeps a thread that publishes,
/// which then writes its packet itself instead of waking the network thread (under the executor's lock, which the
/// network thread takes before it touches the connection again); so a TLS session is never used by two threads.
///
/// Subscriptions are remembered and sent again after every reconnect (the session is clean); `subscribe` and
/// `unsubscribe` work offline too. Call `disconnect` before releasing the transport: the network thread keeps it
/// alive until then.
public final class MosquittoTransport: MQTTTransport, @unchecked Sendable {
    public let connectionEvents: AsyncStream<MQTTConnectionEvent>
    fileprivate let events: AsyncStream<MQTTConnectionEvent>.Continuation
    /// Other threads queue packets on it (`publish`, `subscribe`, `unsubscribe` while `state.connected`), and
    /// write them while the network thread sleeps; libmosquitto locks its queues internally in threaded mode.
    fileprivate let handle: OpaquePointer
    /// Where libmosquitto's writes are gathered (see `writeQueued`); nil when it could not be had.
    fileprivate let writeBuffer: OpaquePointer?
    fileprivate let state = Mutex(State())
    /// An eventfd that wakes the network thread: for jobs, for packets queued by other threads, and to stop.
    fileprivate let wakeEvent: Int32
    /// The publications handed to libmosquitto and not written yet, by message id; told as `unwritten` when the
    /// connection ends.
    fileprivate let pendingWrites = Mutex(PendingWrites())

    fileprivate struct State {
        var phase = Phase.idle
        var connected = false
        /// The executor whose jobs the network thread runs (set by `connect`).
        var executor: ConnectionExecutor?
        var subscriptions = SubscriptionList()
        var stopMode: MQTTDisconnectMode?
        /// A duplicate of the current connection's socket, for `disconnect(.abrupt)` to shut down from another
        /// thread: libmosquitto's own descriptor could be closed and reused by then; this one is closed only by us,
        /// under the lock.
        var socket: Int32?
        /// Counts the connections, so that a `publishingTogether` that began on one is not counted on the next.
        var connectionSerial = 0
        /// Callers inside `publishingTogether` on the current connection: what is published meanwhile waits for the
        /// last of them to return.
        var togetherPublishers = 0
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    fileprivate enum Phase {
        case idle, running
        /// The network thread has ended: stopped, or out of attempts.
        case ended
        /// `disconnect` has finished the events.
        case disconnected
    }

    public init() throws(MQTTError) {
        guard libraryInitialization == MOSQ_ERR_SUCCESS.rawValue else { throw .library(libraryInitialization) }
        let wakeEvent = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        guard wakeEvent >= 0 else {
            throw .library(code: MOSQ_ERR_ERRNO.rawValue, message: "cannot create an eventfd: errno \(errno)")
        }
        guard let handle = mosquitto_new(nil, true, nil) else {
            close(wakeEvent)
            throw .library(MOSQ_ERR_ERRNO.rawValue)
        }
        self.handle = handle
        self.wakeEvent = wakeEvent
        // Without one (memory is short), each packet is written on its own, as libmosquitto does.
        writeBuffer = coaty_write_buffer_create(Self.writeBufferCapacity)
        (connectionEvents, events) = AsyncStream.makeStream()
    }

    deinit {
        mosquitto_destroy(handle)
        coaty_write_buffer_destroy(writeBuffer)
        close(wakeEvent)
    }

    /// The packets one write() carries at most: about 100 values of a thermal zone.
    static let writeBufferCapacity = 32 * 1024

    /// Whether libmosquitto's writes to the broker socket are gathered (false where libmosquitto's dynamic section
    /// was not understood: it then writes packet by packet, as without the buffer).
    package static var writesAreGathered: Bool { libraryWritesGathered }

    /// The write() calls made on this transport's sockets for gathered packets; for tests and benchmarks.
    package var socketWrites: Int { Int(coaty_write_buffer_system_writes(writeBuffer)) }

    /// Whether libmosquitto's reads of the broker socket go through the network thread's buffer (false where
    /// libmosquitto's dynamic section was not understood: it then reads packet by packet, as without the buffer).
    package static var readsAreBuffered: Bool { libraryReadsBuffered }

    /// The read() calls the network thread's buffer has made on the current connection's socket (0 where reads are
    /// not buffered); for tests and benchmarks.
    package var socketReads: Int { socketReadCount.load(ordering: .relaxed) }
    fileprivate let socketReadCount = Atomic<Int>(0)

    /// Whether libmosquitto still has its wake-up pipe (see `LibraryWakePipe`): true until `connect`, and after it
    /// only where libmosquitto's layout was not recognised.
    var hasLibraryWakePipe: Bool { LibraryWakePipe.descriptors(of: handle) != nil }

    public func connect(
        _ options: MQTTConnectOptions, executor: ConnectionExecutor?,
        onMessage handler: @escaping @Sendable (MQTTInbound) -> Void
    ) throws(MQTTError) {
        try state.withLock { (state) throws(MQTTError) in
            precondition(state.phase == .idle, "MosquittoTransport connects once; make a new one to connect again")
            // Another transport's thread may still run the given executor's jobs; this one then keeps its own.
            let wakeEvent = wakeEvent
            let wake: @Sendable () -> Void = { notify(wakeEvent) }
            let executor =
                executor.flatMap { $0.attach(wake: wake) ? $0 : nil }
                ?? {
                    let own = ConnectionExecutor()
                    _ = own.attach(wake: wake)
                    return own
                }()
            state.executor = executor
            let session = NetworkSession(transport: self, options: options, executor: executor, deliver: handler)
            do throws(MQTTError) {
                try configure(options, context: Unmanaged.passUnretained(session).toOpaque())
            } catch {
                executor.detach()
                throw error
            }
            let context = Unmanaged.passRetained(session)
            var thread = pthread_t()
            let rc = pthread_create(&thread, nil, runNetworkThread, context.toOpaque())
            guard rc == 0 else {
                context.release()
                executor.detach()
                throw .library(code: MOSQ_ERR_ERRNO.rawValue, message: "cannot start the network thread: errno \(rc)")
            }
            pthread_detach(thread)
            state.phase = .running
        }
    }

    private func configure(_ options: MQTTConnectOptions, context: UnsafeMutableRawPointer) throws(MQTTError) {
        let keepAlive = options.keepAlive.components.seconds
        // libmosquitto 2.0 busy-loops with keepalive 0 (the wait before the next ping is always due).
        guard (5...65535).contains(keepAlive) else {
            throw .library(code: MOSQ_ERR_INVAL.rawValue, message: "keepalive of \(keepAlive) s is outside 5...65535 s")
        }
        guard (1...65535).contains(options.port) else {
            throw .library(code: MOSQ_ERR_INVAL.rawValue, message: "port \(options.port) is outside 1...65535")
        }
        for (field, value) in [
            ("client id", options.clientId), ("username", options.username), ("password", options.password),
        ] {
            guard let value, value.utf8.contains(0) else { continue }
            throw .library(code: MOSQ_ERR_INVAL.rawValue, message: "\(field) contains a NUL character")
        }
        if options.password != nil && options.username == nil {
            throw .library(code: MOSQ_ERR_INVAL.rawValue, message: "MQTT 3.1.1 sends a password only with a username")
        }

        try check(mosquitto_reinitialise(handle, options.clientId, true, context))
        LibraryWakePipe.close(in: handle)
        mosquitto_connect_callback_set(handle, receiveConnack)
        mosquitto_message_callback_set(handle, receiveMessage)
        mosquitto_publish_callback_set(handle, publicationWritten)
        try check(mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311))
        // Without it, a packet written behind one the broker has not acknowledged yet (a request after its
        // response subscription, a value after a value) waits for the broker's delayed ACK: 40 ms on Linux.
        try check(mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1))
        try check(mosquitto_threaded_set(handle, true))
        if let username = options.username {
            try check(mosquitto_username_pw_set(handle, username, options.password))
        }
        if let will = options.will {
            try Self.checkTopicName(will.topic)
            try Self.checkPayloadSize(will.payload)
            let rc = will.payload.withUnsafeBytes { payload in
                mosquitto_will_set(handle, will.topic, Int32(payload.count), payload.baseAddress, 0, will.retain)
            }
            try check(rc)
        }
        if let tls = options.tls {
            guard (tls.certFile == nil) == (tls.keyFile == nil) else {
                throw .tls("a client certificate needs its key file and vice versa")
            }
            let rc = mosquitto_tls_set(handle, tls.caFile, nil, tls.certFile, tls.keyFile, nil)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                let files = [tls.caFile, tls.certFile, tls.keyFile].compactMap { $0 }.joined(separator: ", ")
                throw .tls("cannot use \(files): \(MQTTError.message(rc))")
            }
            try check(mosquitto_tls_insecure_set(handle, tls.allowsHostnameMismatch))
        }
    }

    /// libmosquitto checks the topic as it publishes (UTF-8, control characters, wildcards, length), so the
    /// connected path leaves that to it and only guards against a NUL, which would cut the C string short. Offline,
    /// the same checks run here, so that a bad topic is reported as such rather than queued by the caller.
    public func publish(_ message: MQTTMessage) throws(MQTTError) {
        try Self.checkPayloadSize(message.payload)
        guard let executor = state.withLock({ $0.connected ? $0.executor : nil }) else {
            try Self.checkTopicName(message.topic)
            throw .notConnected
        }
        // libmosquitto is called without any lock of ours held: its callbacks (`publicationWritten`) take
        // `pendingWrites` under libmosquitto's own mutexes, so holding ours around a call into it would invert that
        // order. The id is noted afterwards; a report of the write that comes first is kept until then.
        var messageId: Int32 = 0
        let rc = message.topic.withCString { topic in
            guard strlen(topic) == message.topic.utf8.count else { return MOSQ_ERR_MALFORMED_UTF8.rawValue }
            return message.payload.withUnsafeBytes { payload in
                mosquitto_publish(
                    handle, &messageId, topic, Int32(payload.count), payload.baseAddress, 0, message.retain)
            }
        }
        if rc == MOSQ_ERR_SUCCESS.rawValue {
            pendingWrites.withLock { $0.append(messageId, message) }
        }
        switch rc {
        case MOSQ_ERR_INVAL.rawValue, MOSQ_ERR_MALFORMED_UTF8.rawValue: throw .invalidTopic(message.topic)
        default: try check(rc)
        }
        // A job on the network thread (a task answering an event) writes the packet at once, before the rest of the
        // task and the other jobs run: they would otherwise delay every answer by the time they take. Never from
        // inside one of libmosquitto's callbacks (a synchronous observer that publishes from `dispatch`): it holds
        // its callback mutex around `on_message` and takes it again for `on_publish` as it writes, so a write there
        // would deadlock; jobs run between reads, never inside one.
        // From another thread, inside `publishingTogether`, the packet waits for its end, to leave with the others in
        // one write(). Asked after the packet was queued: a `publishingTogether` that ends from then on writes it;
        // asked before, one that ended in between would have written the queue without it, and it would wait for the
        // network thread's next turn (up to a quarter of the keepalive).
        if !executor.isRunningJobOnCurrentThread, state.withLock({ $0.togetherPublishers > 0 }) { return }
        writeQueued(on: executor, gathering: false)
    }

    /// Holds back what is published while `body` runs, and writes it when `body` returns, in one write() (as many as
    /// the write buffer needs): libmosquitto 2.0 writes each packet with a write() of its own and has no call to
    /// write several at once, and on a connection with TCP_NODELAY each write was a segment of its own, with the
    /// kernel's whole send and (on loopback) receive path and a wake-up of the broker. `body` must not block or wait.
    /// Nested and concurrent callers share the wait; the last one to return writes. The network thread writes what is
    /// queued whenever it runs (an answer, a ping), batch or not.
    public func publishingTogether<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let serial = state.withLock { state -> Int? in
            guard state.connected else { return nil }
            state.togetherPublishers += 1
            return state.connectionSerial
        }
        defer {
            if let serial {
                let executor = state.withLock { state -> ConnectionExecutor? in
                    // A connection that ended meanwhile took its count with it.
                    guard state.connectionSerial == serial else { return nil }
                    state.togetherPublishers -= 1
                    return state.togetherPublishers == 0 && state.connected ? state.executor : nil
                }
                if let executor { writeQueued(on: executor, gathering: true) }
            }
        }
        return try body()
    }

    /// Writes what is queued, from the thread that published it: a job on the network thread at once; another thread
    /// while the network thread sleeps, rather than waking it for that, and it wakes it when the socket did not take
    /// everything (it then waits to write the rest). An awake network thread writes it before it sleeps.
    private func writeQueued(on executor: ConnectionExecutor, gathering: Bool) {
        if executor.isRunningJobOnCurrentThread {
            // A failed write leaves the packet queued; the network thread meets the error on its next write.
            _ = writeQueued(gathering: gathering)
        } else {
            executor.wakeIfSleeping { writeQueued(gathering: gathering) != MOSQ_ERR_SUCCESS.rawValue || wantsWrite }
        }
    }

    /// Writes the packets libmosquitto has queued; libmosquitto's result, or `MOSQ_ERR_ERRNO` (errno set) when writing
    /// what was gathered failed. `gathering` (a batch's end, the network thread's turn): gathered into as few
    /// write() calls as the write buffer allows. Without it (the one packet a caller just published: an answer, a
    /// value on its own), libmosquitto writes straight to the socket, which spares an answer the buffer's lock and
    /// copy; unless the buffer holds bytes, which must go first. Writes never overlap: other threads write only
    /// while the network thread sleeps, one at a time (`wakeIfSleeping`), so no gathering is under way meanwhile.
    fileprivate func writeQueued(gathering: Bool = true) -> Int32 {
        guard gathering || coaty_write_buffer_pending(writeBuffer) > 0 else { return mosquitto_loop_write(handle, 1) }
        coaty_write_gather_begin(writeBuffer)
        let rc = mosquitto_loop_write(handle, 1)
        guard coaty_write_gather_end() == 0 else { return MOSQ_ERR_ERRNO.rawValue }
        return rc
    }

    /// Whether anything waits to be written: packets libmosquitto has queued, or bytes of packets the socket did not
    /// take yet.
    fileprivate var wantsWrite: Bool { mosquitto_want_write(handle) || coaty_write_buffer_pending(writeBuffer) > 0 }

    public func subscribe(_ topicFilter: String) throws(MQTTError) {
        try subscribe([topicFilter])
    }

    /// One SUBSCRIBE packet for the filters not subscribed yet.
    public func subscribe(_ topicFilters: [String]) throws(MQTTError) {
        for filter in topicFilters { try Self.checkTopicFilter(filter) }
        try state.withLock { (state) throws(MQTTError) in
            // One lookup per filter: a requester's response topics come and go here 16 at a time.
            let new = state.subscriptions.insert(topicFilters)
            guard !new.isEmpty, state.connected else { return }
            let rc = withCStrings(new) { mosquitto_subscribe_multiple(handle, nil, $0, $1, 0, 0, nil) }
            do throws(MQTTError) {
                try checkSubscriptionChange(rc)
            } catch {
                state.subscriptions.remove(new)
                throw error
            }
            state.executor?.wakeIfSleeping()
        }
    }

    public func unsubscribe(_ topicFilter: String) throws(MQTTError) {
        try unsubscribe([topicFilter])
    }

    /// One UNSUBSCRIBE packet for the filters that are subscribed.
    public func unsubscribe(_ topicFilters: [String]) throws(MQTTError) {
        for filter in topicFilters { try Self.checkTopicFilter(filter) }
        try state.withLock { (state) throws(MQTTError) in
            // Each filter was inserted once, so `remove` takes it out of the list at once.
            let gone = state.subscriptions.remove(topicFilters)
            guard !gone.isEmpty, state.connected else { return }
            let rc = withCStrings(gone) { mosquitto_unsubscribe_multiple(handle, nil, $0, $1, nil) }
            do throws(MQTTError) {
                try checkSubscriptionChange(rc)
            } catch {
                state.subscriptions.insert(gone)
                throw error
            }
            state.executor?.wakeIfSleeping()
        }
    }

    public func disconnect(_ mode: MQTTDisconnectMode) async {
        await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
            let threadRunning = state.withLock { state in
                guard state.phase == .running else {
                    if state.phase == .idle { state.phase = .ended }
                    return false
                }
                state.stopWaiters.append(stopped)
                if state.stopMode == nil {
                    state.stopMode = mode
                    state.connected = false
                    stopConnection(state)
                }
                return true
            }
            if threadRunning {
                notify(wakeEvent)
            } else {
                stopped.resume()
            }
        }
        let firstToFinish = state.withLock { state in
            defer { state.phase = .disconnected }
            return state.phase != .disconnected
        }
        if firstToFinish {
            events.yield(.disconnected)
            events.finish()
        }
    }

    /// Ends the registered connection if `disconnect` asked for an abrupt stop; a clean one is done by the network
    /// thread (see `NetworkSession.disconnectCleanly`).
    fileprivate func stopConnection(_ state: borrowing State) {
        guard state.stopMode == .abrupt, let socket = state.socket else { return }
        shutdown(socket, Int32(SHUT_RDWR))
    }

    /// Errors of calls made on behalf of the caller; `.notConnected` covers losing the connection meanwhile.
    private func check(_ rc: Int32) throws(MQTTError) {
        switch rc {
        case MOSQ_ERR_SUCCESS.rawValue: return
        case MOSQ_ERR_NO_CONN.rawValue, MOSQ_ERR_CONN_LOST.rawValue: throw .notConnected
        default: throw .library(rc)
        }
    }

    /// A subscription change that meets a connection just lost takes effect with the next connect.
    private func checkSubscriptionChange(_ rc: Int32) throws(MQTTError) {
        guard rc != MOSQ_ERR_NO_CONN.rawValue, rc != MOSQ_ERR_CONN_LOST.rawValue else { return }
        try check(rc)
    }

    static func checkTopicName(_ topic: String) throws(MQTTError) {
        try checkTopicText(topic)
        guard !topic.utf8.contains(where: { $0 == .plus || $0 == .hash }) else { throw .invalidTopic(topic) }
    }

    /// Wildcards only as whole levels, `#` only as the last. One pass over the bytes in place, without splitting the
    /// filter into levels or iterating its UTF-8 view (which cost as much as the rest of the check): a request's
    /// response topics are checked here, a batch at a time.
    static func checkTopicFilter(_ filter: String) throws(MQTTError) {
        try checkTopicText(filter)
        var text = filter
        let isValid = text.withUTF8 { bytes in
            for index in bytes.indices where bytes[index] == .plus || bytes[index] == .hash {
                let previous = index == 0 ? UInt8.slash : bytes[index - 1]
                let next = index + 1 < bytes.count ? bytes[index + 1] : nil
                let isWholeLevel = previous == .slash && (next == nil || next == .slash)
                guard isWholeLevel, bytes[index] == .plus || next == nil else { return false }
            }
            return true
        }
        guard isValid else { throw .invalidTopic(filter) }
    }

    /// Length and characters as libmosquitto and the broker check them: no NUL, control characters or noncharacters.
    private static func checkTopicText(_ topic: String) throws(MQTTError) {
        let length = topic.utf8.count
        guard (1...65535).contains(length),
            topic.withCString({ mosquitto_validate_utf8($0, Int32(length)) }) == MOSQ_ERR_SUCCESS.rawValue
        else { throw .invalidTopic(topic) }
    }

    static func checkPayloadSize(_ payload: [UInt8]) throws(MQTTError) {
        guard payload.count <= MQTTConnectOptions.maximumPayload else { throw .payloadTooLarge(payload.count) }
    }
}

/// What the network thread works with; libmosquitto's callbacks receive it as their userdata.
private final class NetworkSession {
    /// A burst of values arrives in one read() of up to this many bytes (about 100 values of a thermal zone).
    static let readBufferCapacity = 16 * 1024
    /// The packets read from the buffer before the thread runs its jobs and writes again.
    static let packetsPerTurn = 256

    let transport: MosquittoTransport
    let options: MQTTConnectOptions
    let executor: ConnectionExecutor
    let deliver: @Sendable (MQTTInbound) -> Void
    /// The outcome of the current attempt's CONNACK, set on this thread by `receiveConnack`.
    var accepted = false
    /// Why the current attempt failed, in the words of the broker (a CONNACK refusal) or of the TLS library (from
    /// libmosquitto's log, its only report of TLS details); the first reason found wins.
    var failure: String?

    init(
        transport: MosquittoTransport, options: MQTTConnectOptions, executor: ConnectionExecutor,
        deliver: @escaping @Sendable (MQTTInbound) -> Void
    ) {
        self.transport = transport
        self.options = options
        self.executor = executor
        self.deliver = deliver
    }

    /// Connects, serves and reconnects until stopped or out of attempts; returns the callers of `disconnect`.
    func run() -> [CheckedContinuation<Void, Never>] {
        let policy = options.reconnect
        var attempt = 0
        while !isStopping {
            let reason = connectAndServe()
            if accepted { attempt = 0 }
            if isStopping { break }
            transport.events.yield(.connectionLost(reason: reason))
            if let maximum = policy.maximumAttempts, attempt >= maximum {
                transport.events.yield(.gaveUp(attempts: attempt))
                break
            }
            attempt += 1
            let delay = policy.delay(beforeAttempt: attempt)
            transport.events.yield(.reconnecting(attempt: attempt, delay: delay))
            let deadline = ContinuousClock.now + delay
            var runningJobs: [UnownedJob] = []
            while !isStopping, ContinuousClock.now < deadline {
                executor.runJobs(using: &runningJobs)
                _ = waitForWork(on: nil, timeout: Self.milliseconds(until: deadline))
            }
        }
        // Jobs that arrive from now on run elsewhere; the transport stays usable for `disconnect`.
        executor.detach()
        return transport.state.withLock { state in
            state.phase = .ended
            state.connected = false
            defer { state.stopWaiters = [] }
            return state.stopWaiters
        }
    }

    private var isStopping: Bool { transport.state.withLock { $0.stopMode != nil } }

    /// One connection from TCP connect to its end; returns why it ended.
    private func connectAndServe() -> String {
        accepted = false
        failure = nil
        let handle = transport.handle
        let keepAlive = Int32(options.keepAlive.components.seconds)
        // Until the broker accepts, libmosquitto's log is read for TLS failures (see `connectionLogged`).
        mosquitto_log_callback_set(handle, receiveLog)
        var host = options.host
        var port = options.port
        if let locator = options.locator {
            switch locator.current() {
            case .found(let foundHost, let foundPort):
                (host, port) = (foundHost, foundPort)
            case .none(let reason):
                return "no broker found: \(reason)"
            }
        }
        var rc = mosquitto_connect_async(handle, host, Int32(port), keepAlive)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { return failure ?? describe(rc) }

        let socket = dup(mosquitto_socket(handle))
        guard socket >= 0 else { return "cannot duplicate the socket: \(String(cString: strerror(errno)))" }
        // A buffer that cannot be had (memory is short) leaves libmosquitto reading the socket directly.
        if libraryReadsBuffered {
            _ = coaty_read_buffer_attach(mosquitto_socket(handle), Self.readBufferCapacity)
            transport.socketReadCount.store(0, ordering: .relaxed)
        }
        coaty_write_buffer_attach(transport.writeBuffer, mosquitto_socket(handle), socket)
        transport.state.withLock { state in
            state.socket = socket
            state.connectionSerial += 1
            state.togetherPublishers = 0
            transport.stopConnection(state)
        }
        rc = serve()
        // Before anything else can change errno, which `describe` may read.
        let reason = failure ?? describe(rc)
        if rc == MOSQ_ERR_SUCCESS.rawValue {
            // Still reading through the buffer: bytes it holds are the start of the next packet.
            disconnectCleanly()
        }
        // What the buffers still hold belongs to the connection that ended; the write buffer's bytes count as written,
        // as those in the socket's send buffer do.
        coaty_read_buffer_detach()
        coaty_write_buffer_attach(transport.writeBuffer, -1, -1)
        let unwritten = transport.pendingWrites.withLock { $0.removeAll() }
        if !unwritten.isEmpty {
            transport.events.yield(.unwritten(unwritten))
        }
        let isCleanStop = transport.state.withLock { state in
            state.connected = false
            state.socket = nil
            return state.stopMode == .clean
        }
        if isCleanStop {
            Self.closeGracefully(socket)
        } else {
            close(socket)
        }
        return reason
    }

    /// Runs jobs, writes what is queued, reads, and pings, until the connection fails (its error) or a clean stop
    /// is asked for (success).
    ///
    /// Until the broker accepts a TLS connection, libmosquitto's own `mosquitto_loop` does the reading and writing:
    /// libmosquitto 2.0 completes a TLS handshake only there. Everything else goes through the external-loop calls
    /// and `poll`, because `mosquitto_loop` waits with select(), which refuses a descriptor from 1024 on ("Invalid
    /// function arguments provided"): a process with many files open (a test process, a fleet simulation) could
    /// never connect again.
    private func serve() -> Int32 {
        let handle = transport.handle
        // Often enough for libmosquitto to ping before the broker's limit of 1.5 keepalive periods.
        let keepAliveCheck = Self.milliseconds(of: options.keepAlive / 4)
        var nextKeepAliveCheck = Self.coarseMilliseconds() + keepAliveCheck
        // `disconnect` sets the stop mode before it wakes the thread, so it is looked at only after a wake-up.
        var isWoken = true
        // A local, not a property: passed inout, a property's access would be checked at run time on every turn.
        var runningJobs: [UnownedJob] = []
        var rc = MOSQ_ERR_SUCCESS.rawValue
        while rc == MOSQ_ERR_SUCCESS.rawValue {
            if isWoken, let stopMode = transport.state.withLock({ $0.stopMode }) {
                if stopMode == .clean { return rc }
                // An abrupt stop shuts the socket down, which ends a connection by failing its next read; a TLS
                // handshake on it may never fail (see below), so the stop ends it here.
                if !accepted && options.tls != nil { return MOSQ_ERR_CONN_LOST.rawValue }
            }
            let socket = mosquitto_socket(handle)
            guard socket >= 0 else { return MOSQ_ERR_NO_CONN.rawValue }
            executor.runJobs(using: &runningJobs)
            // What the jobs and the last callbacks published goes out before the thread waits.
            if accepted && transport.wantsWrite {
                rc = transport.writeQueued()
                guard rc == MOSQ_ERR_SUCCESS.rawValue else { break }
            }
            // Packets left in the read buffer are read at once: poll() sees only the socket.
            let timeout =
                coaty_read_buffer_pending() > 0
                ? 0 : Int32(clamping: max(0, nextKeepAliveCheck - Self.coarseMilliseconds()) + 1)
            let ready: Int16
            (ready, isWoken) = waitForWork(on: socket, timeout: timeout)
            if !accepted && options.tls != nil {
                rc = mosquitto_loop(handle, 0, 1)
                // libmosquitto 2.0 takes OpenSSL's SSL_ERROR_SYSCALL in the handshake (a write to a socket whose
                // connect was refused or whose peer went away: EPIPE) for "try again" and returns success, so on a
                // socket that hung up or holds an error the handshake would be tried again and again for good, a
                // core busy and the stop never seen.
                if rc == MOSQ_ERR_SUCCESS.rawValue && ready & Int16(POLLHUP | POLLERR) != 0 {
                    failure = failure ?? ConnectionFailure.handshakeEnded(socketError: Self.pendingError(socket))
                    return MOSQ_ERR_CONN_LOST.rawValue
                }
                if rc == MOSQ_ERR_INVAL.rawValue && socket >= FD_SETSIZE {
                    failure =
                        "the socket's descriptor \(socket) is beyond the \(FD_SETSIZE) that libmosquitto's TLS handshake can wait on (select); the process has too many files open"
                }
                continue
            }
            rc = readAndWrite(ready)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { break }
            // libmosquitto's keepalive check (a ping when due; the end of a connection whose broker does not answer
            // it) takes a lock of libmosquitto's and reads the clock: once per `keepAliveCheck`, not every turn.
            let now = Self.coarseMilliseconds()
            if now >= nextKeepAliveCheck {
                rc = mosquitto_loop_misc(handle)
                nextKeepAliveCheck = now + keepAliveCheck
            }
        }
        return rc
    }

    /// Reads what arrived and writes what is left of a packet that did not fit into the socket's buffer before, as
    /// `ready` (the socket's poll events) says; libmosquitto's error, or success.
    ///
    /// `mosquitto_loop_read` reads one packet when nothing of QoS 1 or 2 is in flight; it is called again while the
    /// read buffer holds bytes, up to `packetsPerTurn` times, so that queued jobs and writes take their turn while a
    /// peer floods the connection (`serve` then polls without waiting, as poll() cannot see the buffered bytes).
    private func readAndWrite(_ ready: Int16) -> Int32 {
        let handle = transport.handle
        if ready & Int16(POLLIN | POLLHUP | POLLERR) != 0 || coaty_read_buffer_pending() > 0 {
            var packets = 0
            repeat {
                let rc = mosquitto_loop_read(handle, 1)
                guard rc == MOSQ_ERR_SUCCESS.rawValue else { return rc }
                packets += 1
            } while packets < Self.packetsPerTurn && coaty_read_buffer_pending() > 0
            if libraryReadsBuffered {
                transport.socketReadCount.store(Int(coaty_read_buffer_system_reads()), ordering: .relaxed)
            }
        }
        return ready & Int16(POLLOUT) != 0 ? transport.writeQueued() : MOSQ_ERR_SUCCESS.rawValue
    }

    /// Waits until `socket` is readable (or writable, while packets wait to be written), the wake event fires or
    /// `timeout` milliseconds pass; does not block when jobs were queued meanwhile. Returns the socket's ready events,
    /// and whether the wake event fired.
    private func waitForWork(on socket: Int32?, timeout: Int32) -> (ready: Int16, isWoken: Bool) {
        // A packet queued from now on wakes the thread, or is written by the thread that queued it.
        let (canSleep, wantsWrite) = executor.prepareToSleep { socket != nil && transport.wantsWrite }
        let writeEvent = wantsWrite ? Int16(POLLOUT) : 0
        // A tuple, not an array: its two elements lie side by side on the stack, and a turn allocates nothing.
        var descriptors = (
            pollfd(fd: transport.wakeEvent, events: Int16(POLLIN), revents: 0),
            pollfd(fd: socket ?? -1, events: Int16(POLLIN) | writeEvent, revents: 0)
        )
        let count = withUnsafeMutableBytes(of: &descriptors) { bytes in
            poll(bytes.bindMemory(to: pollfd.self).baseAddress, socket == nil ? 1 : 2, canSleep ? timeout : 0)
        }
        if canSleep { executor.didWake() }
        guard count > 0 else { return (0, false) }
        let isWoken = descriptors.0.revents != 0
        if isWoken {
            var counter: UInt64 = 0
            _ = read(transport.wakeEvent, &counter, MemoryLayout<UInt64>.size)
        }
        return (socket == nil ? 0 : descriptors.1.revents, isWoken)
    }

    /// The socket's pending error (SO_ERROR), taken from it; 0 if none.
    private static func pendingError(_ socket: Int32) -> Int32 {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(socket, SOL_SOCKET, SO_ERROR, &code, &length) == 0 ? code : 0
    }

    private static func milliseconds(until deadline: ContinuousClock.Instant) -> Int32 {
        Int32(clamping: milliseconds(of: deadline - .now) + 1)
    }

    /// Whole milliseconds of `duration`, rounded down; at least 0.
    private static func milliseconds(of duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// `CLOCK_MONOTONIC_COARSE` in milliseconds: read without a system call and at a few milliseconds' resolution,
    /// enough for the keepalive's seconds.
    private static func coarseMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    /// Sends everything queued, then DISCONNECT, on this thread.
    ///
    /// `mosquitto_disconnect` marks the client disconnected before its DISCONNECT is written, and libmosquitto 2.0
    /// treats any packet that arrives meanwhile (an UNSUBACK, a value) as a protocol error and closes the socket at
    /// once, dropping what is still queued: the Deadvertise of an agent that leaves. So the queue is written while
    /// the client is still active (reading as usual), and after `mosquitto_disconnect` this thread only writes.
    private func disconnectCleanly() {
        let handle = transport.handle
        let deadline = ContinuousClock.now + .seconds(2)
        while transport.wantsWrite, ContinuousClock.now < deadline {
            let ready = Self.pollBriefly(mosquitto_socket(handle), Int16(POLLIN | POLLOUT))
            guard readAndWrite(ready) == MOSQ_ERR_SUCCESS.rawValue else { return }
        }
        guard mosquitto_disconnect(handle) == MOSQ_ERR_SUCCESS.rawValue else { return }
        while transport.wantsWrite, ContinuousClock.now < deadline {
            guard Self.pollBriefly(mosquitto_socket(handle), Int16(POLLOUT)) >= 0,
                transport.writeQueued() == MOSQ_ERR_SUCCESS.rawValue
            else { return }
        }
    }

    /// Waits up to 100 ms for `events` on `socket`; returns the ready events, or -1 if the wait failed.
    private static func pollBriefly(_ socket: Int32, _ events: Int16) -> Int16 {
        var descriptor = pollfd(fd: socket, events: events, revents: 0)
        guard poll(&descriptor, 1, 100) >= 0 else { return -1 }
        return descriptor.revents
    }

    /// Closes the connection after a clean DISCONNECT so that the broker reads everything sent before it.
    ///
    /// libmosquitto closes its descriptor right after writing DISCONNECT; data the broker sent meanwhile (an
    /// UNSUBACK, a value) would still be unread here, and closing a socket with unread data sends a reset, which
    /// makes the broker drop what it has not read yet: the Deadvertise and the DISCONNECT. This descriptor keeps
    /// the connection open until the broker closes its side.
    private static func closeGracefully(_ socket: Int32) {
        shutdown(socket, Int32(SHUT_WR))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline {
            let ready = pollBriefly(socket, Int16(POLLIN))
            guard ready >= 0 else { break }
            guard ready != 0 else { continue }
            if read(socket, &buffer, buffer.count) <= 0 { break }
        }
        close(socket)
    }

    func connackReceived(_ code: Int32) {
        let handle = transport.handle
        // Formatting every packet's debug line for it would cost the connected path its speed.
        mosquitto_log_callback_set(handle, nil)
        guard code == 0 else {
            failure = ConnectionFailure.refusal(connack: code)
            return
        }
        accepted = true
        let connected = transport.state.withLock { state in
            guard state.stopMode == nil else { return false }
            state.connected = true
            // Queued ahead of anything published after `.connected` is seen.
            for filter in state.subscriptions {
                mosquitto_subscribe(handle, nil, filter, 0)
            }
            return true
        }
        if connected {
            transport.events.yield(.connected)
        }
    }
}

extension NetworkSession {
    /// A line of libmosquitto's log while connecting: TLS failures are reported only there.
    func connectionLogged(level: Int32, _ line: String) {
        guard failure == nil, level == MOSQ_LOG_ERR else { return }
        failure = ConnectionFailure.tls(
            logLine: line, host: options.host, verifyResult: { ConnectionFailure.verifyResult(of: transport.handle) })
    }

    /// What a libmosquitto result means for a connection; for `MOSQ_ERR_ERRNO` that of `errno`, so call it right after
    /// the failing call.
    func describe(_ rc: Int32) -> String {
        switch rc {
        case MOSQ_ERR_ERRNO.rawValue where errno == EPROTO && options.tls != nil && !accepted:
            ConnectionFailure.tlsSessionEnded(withClientCertificate: options.tls?.certFile != nil)
        case MOSQ_ERR_ERRNO.rawValue: ConnectionFailure.system(errno)
        case MOSQ_ERR_EAI.rawValue: "cannot resolve the host name \(options.host)"
        default: MQTTError.message(rc)
        }
    }
}

/// Wakes a thread waiting on `eventDescriptor`.
private func notify(_ eventDescriptor: Int32) {
    var one: UInt64 = 1
    _ = write(eventDescriptor, &one, MemoryLayout<UInt64>.size)
}

/// `mosquitto_lib_init` must run once per process before any client; a global is initialised exactly once.
private let libraryInitialization = mosquitto_lib_init()

/// Whether libmosquitto's read() now goes through `coaty_buffered_read`, decided once per process.
private let libraryReadsBuffered = coaty_mosquitto_buffer_reads() > 0
/// Whether libmosquitto's write() now goes through `coaty_gathered_write`, decided once per process.
private let libraryWritesGathered = coaty_mosquitto_gather_writes() > 0

// The C callbacks are global functions: a closure could inherit an actor isolation that libmosquitto's thread
// does not have.

private func runNetworkThread(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let context else { return nil }
    // Without a name of its own the thread shows the name of the one that started it (a pool thread's, cut to
    // "oot.default-qos") in top, perf and /proc.
    nameCurrentThread("mqtt network")
    // The session (and with it the transport) is released before `disconnect` returns, so that the caller can
    // release the transport at once.
    let stopWaiters = Unmanaged<NetworkSession>.fromOpaque(context).takeRetainedValue().run()
    for waiter in stopWaiters { waiter.resume() }
    return nil
}

private func publicationWritten(_: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ messageId: Int32) {
    guard let context else { return }
    Unmanaged<NetworkSession>.fromOpaque(context).takeUnretainedValue().transport.pendingWrites.withLock {
        $0.written(messageId)
    }
}

private func receiveConnack(_: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ code: Int32) {
    guard let context else { return }
    Unmanaged<NetworkSession>.fromOpaque(context).takeUnretainedValue().connackReceived(code)
}

private func receiveLog(
    _: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ level: Int32, _ line: UnsafePointer<CChar>?
) {
    guard let context, let line else { return }
    Unmanaged<NetworkSession>.fromOpaque(context).takeUnretainedValue().connectionLogged(
        level: level, String(cString: line))
}

/// The latency-critical path: copy out what libmosquitto frees after the callback, and hand it on.
///
/// A payload over the limit is not copied: libmosquitto has already read the whole packet into its own buffer (MQTT
/// 3.1.1 has no way to tell the broker a maximum packet size; that is a property of MQTT 5's CONNECT), which it frees
/// after this callback, so the agent holds it once, briefly, and never parses it.
private func receiveMessage(
    _: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ message: UnsafePointer<mosquitto_message>?
) {
    guard let context, let message = message?.pointee, let topic = message.topic else { return }
    let session = Unmanaged<NetworkSession>.fromOpaque(context).takeUnretainedValue()
    let size = Int(message.payloadlen)
    guard size <= session.options.maximumInboundPayload else {
        session.deliver(.oversized(topic: String(cString: topic), size: size))
        return
    }
    // One allocation and a memcpy: `[UInt8](UnsafeRawBufferPointer)` copied through the generic collection path.
    let payload = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
        guard let source = message.payload, size > 0 else {
            initialized = 0
            return
        }
        UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(start: source, count: size))
        initialized = size
    }
    session.deliver(.message(MQTTMessage(topic: String(cString: topic), payload: payload, retain: message.retain)))
}

/// QoS 0 publications between `mosquitto_publish` and libmosquitto's report that it wrote them to the socket
/// (`on_publish`, which it calls for QoS 0 once the whole packet is written).
///
/// The publishing thread notes a publication after `mosquitto_publish` returns, without holding this lock across the
/// call, so the network thread may report the write first: such ids wait in `writtenEarly` until they are noted.
/// The notes are kept in the order they were made, which is the order libmosquitto writes them in unless two
/// publishers noted theirs the other way round; so the written one is nearly always the oldest one still pending,
/// found without hashing (a dictionary by id cost a hash of the id on every note and every write). A publication
/// written out of that order leaves a gap; gaps are dropped once they are as many as the pending notes (and at
/// least 64), so that a note that stays pending (noted after its connection ended) holds no more than its own room.
struct PendingWrites {
    /// A publication noted, or the gap it left once written (id 0, an id libmosquitto never gives; no message).
    private struct Note {
        var messageId: Int32
        var message: MQTTMessage?

        static let gap = Note(messageId: 0, message: nil)
    }

    /// The notes in order, from `head` to `end`; the slots beyond `end` are gaps kept for reuse, so that a note and
    /// its write, the steady state, neither allocate nor shift the array.
    private var notes: [Note] = []
    private var head = 0
    private var end = 0
    /// The notes not written yet.
    private var pendingCount = 0
    /// Ids reported written before they were noted: a few at most, from publishers between the call and the note.
    private var writtenEarly: [Int32] = []

    /// The notes held, gaps included: at most twice the pending ones, or 64.
    var heldNotes: Int { end - head }

    mutating func append(_ messageId: Int32, _ message: MQTTMessage) {
        if !writtenEarly.isEmpty, let early = writtenEarly.firstIndex(of: messageId) {
            writtenEarly.remove(at: early)
            return
        }
        let note = Note(messageId: messageId, message: message)
        if end < notes.count {
            notes[end] = note
        } else {
            notes.append(note)
        }
        end += 1
        pendingCount += 1
    }

    mutating func written(_ messageId: Int32) {
        guard messageId != 0 else { return }
        var index = head
        while index < end && notes[index].messageId != messageId { index += 1 }
        guard index < end else {
            writtenEarly.append(messageId)
            return
        }
        notes[index] = .gap
        pendingCount -= 1
        if pendingCount == 0 {
            (head, end) = (0, 0)
        } else if index == head {
            while notes[head].messageId == 0 { head += 1 }
        }
        if end - head - pendingCount >= max(64, pendingCount) {
            dropGaps()
        }
    }

    /// Moves the pending notes to the front, in order.
    private mutating func dropGaps() {
        var kept = 0
        for index in head..<end where notes[index].messageId != 0 {
            if index != kept {
                notes[kept] = notes[index]
                notes[index] = .gap
            }
            kept += 1
        }
        (head, end) = (0, kept)
    }

    /// What was not written, in the order it was published; none are pending afterwards. A publication noted only
    /// after this (its publisher was still between `mosquitto_publish` and the note when the connection ended) is
    /// told with the next connection's end: a race of microseconds at a connection loss.
    mutating func removeAll() -> [MQTTMessage] {
        defer {
            notes = []
            (head, end, pendingCount) = (0, 0, 0)
            writtenEarly = []
        }
        return notes[head..<end].compactMap(\.message)
    }
}

extension MQTTError {
    fileprivate static func library(_ rc: Int32) -> MQTTError { .library(code: rc, message: message(rc)) }

    /// libmosquitto's text for `rc`; for `MOSQ_ERR_ERRNO` that of `errno`, so call it right after the failing call.
    fileprivate static func message(_ rc: Int32) -> String { String(cString: mosquitto_strerror(rc)) }
}

extension UInt8 {
    fileprivate static let plus = UInt8(ascii: "+")
    fileprivate static let hash = UInt8(ascii: "#")
    fileprivate static let slash = UInt8(ascii: "/")
}
