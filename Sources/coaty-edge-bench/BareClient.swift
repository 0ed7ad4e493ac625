import CMosquitto
import Dispatch

/// The baseline: a libmosquitto client used directly through the C API, with libmosquitto's own network thread
/// (`mosquitto_loop_start`). `onMessage` runs on that thread for every message, with the client's handle, so
/// that a handler can publish from the callback as a C program would.
final class BareClient: @unchecked Sendable {
    typealias MessageHandler = @Sendable (_ handle: OpaquePointer, _ message: UnsafePointer<mosquitto_message>) -> Void

    private let handle: OpaquePointer
    fileprivate let onMessage: MessageHandler
    /// Signalled for CONNACK and SUBACK, which the setup waits for one at a time.
    fileprivate let acknowledged = DispatchSemaphore(value: 0)
    /// Written on the network thread before `acknowledged` is signalled.
    fileprivate var connackCode: Int32 = -1
    private var isLooping = false

    init(clientId: String, onMessage: @escaping MessageHandler) throws(BenchmarkError) {
        guard libraryInitialization == MOSQ_ERR_SUCCESS.rawValue,
            let handle = mosquitto_new(clientId, true, nil)
        else { throw .mqtt("cannot create a libmosquitto client") }
        self.handle = handle
        self.onMessage = onMessage
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_callback_set(handle, bareConnackReceived)
        mosquitto_subscribe_callback_set(handle, bareSubackReceived)
        mosquitto_message_callback_set(handle, bareMessageReceived)
    }

    deinit {
        disconnect()
        mosquitto_destroy(handle)
    }

    /// Connects (TCP at once, CONNACK awaited) and starts the network thread.
    func connect(host: String, port: Int) throws(BenchmarkError) {
        try check(mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311), "protocol version")
        // As the agent's transport does.
        try check(mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")
        try check(mosquitto_connect(handle, host, Int32(port), 60), "connect to \(host):\(port)")
        try check(mosquitto_loop_start(handle), "start the network thread")
        isLooping = true
        guard acknowledged.wait(timeout: .now() + 10) == .success, connackCode == 0 else {
            throw .mqtt("the broker at \(host):\(port) did not accept the connection (code \(connackCode))")
        }
    }

    /// Subscribes at QoS 0 and waits for the SUBACK.
    func subscribe(_ filter: String) throws(BenchmarkError) {
        try check(mosquitto_subscribe(handle, nil, filter, 0), "subscribe \(filter)")
        guard acknowledged.wait(timeout: .now() + 10) == .success else { throw .mqtt("no SUBACK for \(filter)") }
    }

    /// Publishes at QoS 0; queued by libmosquitto and written by the network thread.
    func publish(_ topic: String, _ payload: [UInt8]) throws(BenchmarkError) {
        let rc = payload.withUnsafeBytes { bytes in
            mosquitto_publish(handle, nil, topic, Int32(bytes.count), bytes.baseAddress, 0, false)
        }
        try check(rc, "publish on \(topic)")
    }

    func disconnect() {
        guard isLooping else { return }
        isLooping = false
        mosquitto_disconnect(handle)
        mosquitto_loop_stop(handle, false)
    }

    private func check(_ rc: Int32, _ what: String) throws(BenchmarkError) {
        guard rc != MOSQ_ERR_SUCCESS.rawValue else { return }
        throw .mqtt("\(what): \(String(cString: mosquitto_strerror(rc)))")
    }
}

/// `mosquitto_lib_init` counts its calls; once per process is enough for the bare clients.
private let libraryInitialization = mosquitto_lib_init()

private func client(_ context: UnsafeMutableRawPointer?) -> BareClient? {
    context.map { Unmanaged<BareClient>.fromOpaque($0).takeUnretainedValue() }
}

private func bareConnackReceived(_: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ code: Int32) {
    guard let client = client(context) else { return }
    client.connackCode = code
    client.acknowledged.signal()
}

private func bareSubackReceived(
    _: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _: Int32, _: Int32, _: UnsafePointer<Int32>?
) {
    client(context)?.acknowledged.signal()
}

private func bareMessageReceived(
    _ handle: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ message: UnsafePointer<mosquitto_message>?
) {
    guard let handle, let message, let client = client(context) else { return }
    client.onMessage(handle, message)
}
