import CoatyCommunication
import CoatyModel
import CoatyMQTT
import CoatySharedObjects
import Logging
import Synchronization

/// Feeds arbitrary bytes into a started communication manager as if the broker had delivered them, through the
/// same handler the real transport calls: topic parsing, payload decoding, validation, Discover answers,
/// Associate handling and IoValue delivery all run. Used by the fuzzer and by the corpus regression test.
public final class InboundFuzzHarness: Sendable {
    public let manager: CommunicationManager
    private let transport: CapturingTransport

    /// The agent owns a JSON source, a raw source, a JSON actor and a raw actor in context "ctx", so that
    /// Associate and IoValue inputs reach real state.
    public init() {
        let transport = CapturingTransport()
        self.transport = transport
        manager = CommunicationManager(
            identity: Identity(objectId: "00000000-0000-4000-8000-000000000001", name: "fuzz"),
            // Below the fuzzer's input size (4096 bytes), so that it reaches the oversized path too; above every seed.
            options: CommunicationOptions(maximumInboundPayload: 3072),
            ioNodes: [
                IoNodeDefinition(
                    contextName: "ctx",
                    ioSources: [
                        IoSource(objectId: "s1", name: "s1", valueType: "t"),
                        IoSource(objectId: "s2", name: "s2", valueType: "r", useRawIoValues: true),
                    ],
                    ioActors: [
                        IoActor(objectId: "a1", name: "a1", valueType: "t"),
                        IoActor(objectId: "a2", name: "a2", valueType: "r", useRawIoValues: true),
                    ])
            ],
            // Rejections are counted; logging each one would only slow the fuzzer down.
            logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }),
            makeTransport: { transport })
        manager.start()
    }

    /// Returns once the manager processed its connection, so that answers go out instead of queueing up.
    public func waitUntilOnline() async {
        for await state in manager.communicationStates() where state == .online { return }
    }

    /// The first line is the topic, the rest the payload.
    public func feed(_ bytes: [UInt8]) {
        let newline = bytes.firstIndex(of: 0x0A) ?? bytes.endIndex
        let topic = String(decoding: bytes[..<newline], as: UTF8.self)
        let payload = newline < bytes.endIndex ? Array(bytes[(newline + 1)...]) : []
        transport.deliver(MQTTMessage(topic: topic, payload: payload))
        readSharedObjects(topic: topic, payload: payload)
    }

    /// What a shared objects service reads of an Advertise, Resolve, Update or Complete: the object as shared
    /// object state, and an Update's request. The service itself runs asynchronously, so it is fed here directly,
    /// where a crash points at its input.
    private func readSharedObjects(topic: String, payload: [UInt8]) {
        guard case .success(.event(_, let event)) = CoatyCodec.decode(topic: topic, payload: payload) else { return }
        let object: CoatyObject? =
            switch event {
            case .advertise(let advertise): advertise.object
            case .resolve(let resolve): resolve.object
            case .update(let update): update.object
            case .complete(let complete): complete.object
            default: nil
            }
        guard let object else { return }
        _ = SharedObjectState(object)
        _ = try? SharedObjectRequest(updating: object)
    }

    public var published: Int { transport.publishedCount }
}

/// A transport that is always connected and only counts what is published.
final class CapturingTransport: MQTTTransport, Sendable {
    let connectionEvents: AsyncStream<MQTTConnectionEvent>
    private let events: AsyncStream<MQTTConnectionEvent>.Continuation
    /// A struct, not a tuple: a closure in a tuple kept in a generic container is re-wrapped in reabstraction
    /// thunks each time the tuple is written back, until calling it exhausts the stack.
    private struct State {
        var handler: (@Sendable (MQTTInbound) -> Void)?
        var maximumInboundPayload = MQTTConnectOptions.maximumPayload
        var published = 0
    }

    private let state = Mutex(State())

    init() {
        (connectionEvents, events) = AsyncStream.makeStream(of: MQTTConnectionEvent.self)
    }

    func connect(
        _ options: MQTTConnectOptions, executor: ConnectionExecutor?,
        onMessage handler: @escaping @Sendable (MQTTInbound) -> Void
    ) {
        state.withLock { state in
            state.handler = handler
            state.maximumInboundPayload = options.maximumInboundPayload
        }
        events.yield(.connected)
    }

    /// As the real transport does: a payload over the limit is reported by its size only.
    func deliver(_ message: MQTTMessage) {
        let (handler, limit) = state.withLock { ($0.handler, $0.maximumInboundPayload) }
        let size = message.payload.count
        handler?(size > limit ? .oversized(topic: message.topic, size: size) : .message(message))
    }

    var publishedCount: Int { state.withLock { $0.published } }

    func publish(_ message: MQTTMessage) throws(MQTTError) { state.withLock { $0.published += 1 } }
    func subscribe(_ topicFilter: String) throws(MQTTError) {}
    func unsubscribe(_ topicFilter: String) throws(MQTTError) {}
    func disconnect(_ mode: MQTTDisconnectMode) async {
        events.yield(.disconnected)
        events.finish()
    }
}
