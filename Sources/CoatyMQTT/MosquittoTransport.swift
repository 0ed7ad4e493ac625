import CMosquitto
import Dispatch
import Glibc
import Synchronization

/// `MQTTTransport` over libmosquitto, with one network thread per connection.
///
/// The thread runs `mosquitto_loop` and reconnects by itself: libmosquitto's `mosquitto_loop_forever` keeps its
/// own schedule and retries failed TCP connects silently, so it can neither follow `MQTTReconnectPolicy` nor
/// report attempts.
/// The initial connect is not an attempt: when it fails or a connection is lost, attempts 1, 2, ... follow after
/// `delay(beforeAttempt:)`, and after `maximumAttempts` of them the transport gives up.
///
/// Subscriptions are remembered and sent again after every reconnect (the session is clean); `subscribe` and
/// `unsubscribe` work offline too. Call `disconnect` before releasing the transport: the network thread keeps it
/// alive until then.
public final class MosquittoTransport: MQTTTransport, @unchecked Sendable {
    public let connectionEvents: AsyncStream<MQTTConnectionEvent>
    fileprivate let events: AsyncStream<MQTTConnectionEvent>.Continuation
    /// Other threads use it only while `state.connected` (or, in `disconnect`, while a socket is registered);
    /// libmosquitto locks internally in threaded mode.
    fileprivate let handle: OpaquePointer
    fileprivate let state = Mutex(State())
    /// Cuts the wait between connection attempts short when `disconnect` is called.
    fileprivate let stopSignal = DispatchSemaphore(value: 0)

    fileprivate struct State {
        var phase = Phase.idle
        var connected = false
        var subscriptions: [String] = []
        var stopMode: MQTTDisconnectMode?
        /// A duplicate of the current connection's socket, for `disconnect(.abrupt)` to shut down from another
        /// thread: libmosquitto's own descriptor could be closed and reused by then; this one is closed only by us,
        /// under the lock.
        var socket: Int32?
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
        guard let handle = mosquitto_new(nil, true, nil) else { throw .library(MOSQ_ERR_ERRNO.rawValue) }
        self.handle = handle
        (connectionEvents, events) = AsyncStream.makeStream()
    }

    deinit {
        mosquitto_destroy(handle)
    }

    public func connect(_ options: MQTTConnectOptions, onMessage handler: @escaping @Sendable (MQTTMessage) -> Void)
        throws(MQTTError)
    {
        try state.withLock { (state) throws(MQTTError) in
            precondition(state.phase == .idle, "MosquittoTransport connects once; make a new one to connect again")
            let session = NetworkSession(transport: self, options: options, deliver: handler)
            try configure(options, context: Unmanaged.passUnretained(session).toOpaque())
            let context = Unmanaged.passRetained(session)
            var thread = pthread_t()
            let rc = pthread_create(&thread, nil, runNetworkThread, context.toOpaque())
            guard rc == 0 else {
                context.release()
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
        mosquitto_connect_callback_set(handle, receiveConnack)
        mosquitto_message_callback_set(handle, receiveMessage)
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
        guard state.withLock({ $0.connected }) else {
            try Self.checkTopicName(message.topic)
            throw .notConnected
        }
        let rc = message.topic.withCString { topic in
            guard strlen(topic) == message.topic.utf8.count else { return MOSQ_ERR_MALFORMED_UTF8.rawValue }
            return message.payload.withUnsafeBytes { payload in
                mosquitto_publish(handle, nil, topic, Int32(payload.count), payload.baseAddress, 0, message.retain)
            }
        }
        switch rc {
        case MOSQ_ERR_INVAL.rawValue, MOSQ_ERR_MALFORMED_UTF8.rawValue: throw .invalidTopic(message.topic)
        default: try check(rc)
        }
    }

    public func subscribe(_ topicFilter: String) throws(MQTTError) {
        try Self.checkTopicFilter(topicFilter)
        try state.withLock { (state) throws(MQTTError) in
            guard !state.subscriptions.contains(topicFilter) else { return }
            if state.connected {
                try checkSubscriptionChange(mosquitto_subscribe(handle, nil, topicFilter, 0))
            }
            state.subscriptions.append(topicFilter)
        }
    }

    public func unsubscribe(_ topicFilter: String) throws(MQTTError) {
        try Self.checkTopicFilter(topicFilter)
        try state.withLock { (state) throws(MQTTError) in
            guard let index = state.subscriptions.firstIndex(of: topicFilter) else { return }
            if state.connected {
                try checkSubscriptionChange(mosquitto_unsubscribe(handle, nil, topicFilter))
            }
            state.subscriptions.remove(at: index)
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
                stopSignal.signal()
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

    /// Ends the registered connection as `disconnect` asked. An abrupt stop shuts the socket down here; a clean
    /// one is done by the network thread (see `NetworkSession.disconnectCleanly`), which is woken by queueing a
    /// harmless UNSUBSCRIBE: libmosquitto wakes its loop for every queued packet and offers no other way.
    fileprivate func stopConnection(_ state: borrowing State) {
        guard state.socket != nil, let mode = state.stopMode else { return }
        switch mode {
        case .clean: mosquitto_unsubscribe(handle, nil, Self.wakeTopicFilter)
        case .abrupt: if let socket = state.socket { shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    /// Never subscribed; unsubscribing from it only wakes the network thread.
    static let wakeTopicFilter = "$coaty-edge/wake"

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

    static func checkTopicFilter(_ filter: String) throws(MQTTError) {
        try checkTopicText(filter)
        let levels = filter.utf8.split(separator: .slash, omittingEmptySubsequences: false)
        for (index, level) in levels.enumerated() {
            let wildcardAlone = level.count == 1
            if level.contains(.plus) && !wildcardAlone
                || level.contains(.hash) && !(wildcardAlone && index == levels.count - 1)
            {
                throw .invalidTopic(filter)
            }
        }
    }

    /// Length and characters as libmosquitto and the broker check them: no NUL, control characters or noncharacters.
    private static func checkTopicText(_ topic: String) throws(MQTTError) {
        let length = topic.utf8.count
        guard (1...65535).contains(length),
            topic.withCString({ mosquitto_validate_utf8($0, Int32(length)) }) == MOSQ_ERR_SUCCESS.rawValue
        else { throw .invalidTopic(topic) }
    }

    static func checkPayloadSize(_ payload: [UInt8]) throws(MQTTError) {
        // The largest remaining length MQTT can encode.
        guard payload.count <= 268_435_455 else { throw .payloadTooLarge(payload.count) }
    }
}

/// What the network thread works with; libmosquitto's callbacks receive it as their userdata.
private final class NetworkSession {
    let transport: MosquittoTransport
    let options: MQTTConnectOptions
    let deliver: @Sendable (MQTTMessage) -> Void
    /// The outcome of the current attempt's CONNACK, set on this thread by `receiveConnack`.
    var accepted = false
    var refusal: String?

    init(transport: MosquittoTransport, options: MQTTConnectOptions, deliver: @escaping @Sendable (MQTTMessage) -> Void)
    {
        self.transport = transport
        self.options = options
        self.deliver = deliver
    }

    /// Connects, serves and reconnects until stopped or out of attempts; returns the callers of `disconnect`.
    func run() -> [CheckedContinuation<Void, Never>] {
        let policy = options.reconnect
        var attempt = 0
        while !transport.state.withLock({ $0.stopMode != nil }) {
            let reason = connectAndServe()
            if accepted { attempt = 0 }
            if transport.state.withLock({ $0.stopMode != nil }) { break }
            transport.events.yield(.connectionLost(reason: reason))
            if let maximum = policy.maximumAttempts, attempt >= maximum {
                transport.events.yield(.gaveUp(attempts: attempt))
                break
            }
            attempt += 1
            let delay = policy.delay(beforeAttempt: attempt)
            transport.events.yield(.reconnecting(attempt: attempt, delay: delay))
            let (seconds, attoseconds) = delay.components
            _ = transport.stopSignal.wait(timeout: .now() + (Double(seconds) + Double(attoseconds) * 1e-18))
        }
        return transport.state.withLock { state in
            state.phase = .ended
            state.connected = false
            defer { state.stopWaiters = [] }
            return state.stopWaiters
        }
    }

    /// One connection from TCP connect to its end; returns why it ended.
    private func connectAndServe() -> String {
        accepted = false
        refusal = nil
        let handle = transport.handle
        let keepAlive = Int32(options.keepAlive.components.seconds)
        var rc = mosquitto_connect_async(handle, options.host, Int32(options.port), keepAlive)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { return MQTTError.message(rc) }

        let socket = dup(mosquitto_socket(handle))
        guard socket >= 0 else { return "cannot duplicate the socket: \(String(cString: strerror(errno)))" }
        transport.state.withLock { state in
            state.socket = socket
            transport.stopConnection(state)
        }
        // Wakes for traffic, for `publish` (libmosquitto's wake-up pipe) and before each keepalive ping is due.
        repeat {
            rc = mosquitto_loop(handle, keepAlive * 1000, 1)
        } while rc == MOSQ_ERR_SUCCESS.rawValue && !transport.state.withLock({ $0.stopMode == .clean })
        if rc == MOSQ_ERR_SUCCESS.rawValue {
            disconnectCleanly()
        }
        let reason = refusal ?? MQTTError.message(rc)
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

    /// Sends everything queued, then DISCONNECT, on this thread.
    ///
    /// `mosquitto_disconnect` marks the client disconnected before its DISCONNECT is written, and libmosquitto 2.0
    /// treats any packet that arrives meanwhile (an UNSUBACK, a value) as a protocol error and closes the socket at
    /// once, dropping what is still queued: the Deadvertise of an agent that leaves. So the queue is written while
    /// the client is still active (reading as usual), and after `mosquitto_disconnect` this thread only writes.
    private func disconnectCleanly() {
        let handle = transport.handle
        let deadline = ContinuousClock.now + .seconds(2)
        while mosquitto_want_write(handle), ContinuousClock.now < deadline {
            guard mosquitto_loop(handle, 100, 1) == MOSQ_ERR_SUCCESS.rawValue else { return }
        }
        guard mosquitto_disconnect(handle) == MOSQ_ERR_SUCCESS.rawValue else { return }
        while mosquitto_want_write(handle), ContinuousClock.now < deadline {
            var writable = pollfd(fd: mosquitto_socket(handle), events: Int16(POLLOUT), revents: 0)
            guard poll(&writable, 1, 100) >= 0, mosquitto_loop_write(handle, 1) == MOSQ_ERR_SUCCESS.rawValue else { return }
        }
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
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) >= 0 else { break }
            guard descriptor.revents != 0 else { continue }
            if read(socket, &buffer, buffer.count) <= 0 { break }
        }
        close(socket)
    }

    func connackReceived(_ code: Int32) {
        guard code == 0 else {
            refusal = String(cString: mosquitto_connack_string(code))
            return
        }
        accepted = true
        let handle = transport.handle
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

/// `mosquitto_lib_init` must run once per process before any client; a global is initialised exactly once.
private let libraryInitialization = mosquitto_lib_init()

// The C callbacks are global functions: a closure could inherit an actor isolation that libmosquitto's thread
// does not have.

private func runNetworkThread(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let context else { return nil }
    // The session (and with it the transport) is released before `disconnect` returns, so that the caller can
    // release the transport at once.
    let stopWaiters = Unmanaged<NetworkSession>.fromOpaque(context).takeRetainedValue().run()
    for waiter in stopWaiters { waiter.resume() }
    return nil
}

private func receiveConnack(_: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ code: Int32) {
    guard let context else { return }
    Unmanaged<NetworkSession>.fromOpaque(context).takeUnretainedValue().connackReceived(code)
}

/// The latency-critical path: copy out what libmosquitto frees after the callback, and hand it on.
private func receiveMessage(
    _: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ message: UnsafePointer<mosquitto_message>?
) {
    guard let context, let message = message?.pointee, let topic = message.topic else { return }
    let payload = [UInt8](UnsafeRawBufferPointer(start: message.payload, count: Int(message.payloadlen)))
    let session = Unmanaged<NetworkSession>.fromOpaque(context).takeUnretainedValue()
    session.deliver(MQTTMessage(topic: String(cString: topic), payload: payload, retain: message.retain))
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
