import CoatyCommunication
import CoatyJSON
import CoatyModel
import Logging
import Synchronization

/// Shared objects for one agent: small versioned key/value objects and messages that every agent on the broker can
/// read and change (setpoints, calibration offsets, modes). An agent hosts some of them and connects to any, its own
/// included; the protocol is in `SharedObjectWire`.
///
/// Every change goes to the host, which orders them: a change gets the next version or is refused, and every
/// connected client, the author included, learns of it from the host's advertisement. Each advertisement carries
/// the whole object, so a client that missed one (QoS 0, a reconnect) catches up with the next.
///
/// `run()` serves the objects while the communication manager is started (the container runs it).
public final class SharedObjects: Sendable {
    public let manager: CommunicationManager
    private let timing: Timing
    private let requestTimeout: Duration
    let logger: Logger
    private let state = Mutex(State())
    /// Wakes the expiry loop when an object with an expiry appears.
    private let expiryWake: AsyncStream<Void>.Continuation
    private let expiryWakes: AsyncStream<Void>
    /// Wakes the loop that asks again for the objects connections wait for.
    private let askWake: AsyncStream<Void>.Continuation
    private let askWakes: AsyncStream<Void>

    struct State: ~Copyable {
        /// By objectId.
        var hosted: [String: HostedSharedObject] = [:]
        /// Objects this agent hosted and deleted, newest last, so that late requests learn they are gone.
        var deletedIds: [String] = []
        var replicas: [Int: (replica: SharedReplica, events: ObservationStream<SharedObjectEvent>.Continuation)] = [:]
        /// Messages this agent sent, by message objectId, until their echo arrives or the wait ends.
        var echoes: [String: Echo] = [:]
        /// Connections being made, by replica id, waiting for a host's copy to bind them (`connect`).
        var bindingWaiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        /// When to ask again for an object that connections wait for, by name, and the wait after that.
        var asks: [String: (next: Duration, interval: Duration)] = [:]
        var nextId = 0

        /// Stops hosting an object and remembers it as deleted.
        mutating func forget(_ objectId: String) {
            hosted[objectId] = nil
            deletedIds.append(objectId)
            if deletedIds.count > SharedObjects.deletedIdsKept { deletedIds.removeFirst() }
        }
    }

    static let deletedIdsKept = 1024
    /// A waiting connection's object is asked for again after this, then after twice as long each time, up to
    /// `lastAskInterval`.
    static let firstAskInterval = Duration.seconds(1)
    static let lastAskInterval = Duration.seconds(60)

    enum Echo {
        case expected
        case arrived
        case awaited(CheckedContinuation<Bool, Never>)
    }

    /// - Parameters:
    ///   - manager: the communication manager whose agent hosts and reaches the shared objects.
    ///   - clock: the clock of expiry.
    ///   - requestTimeout: how long a Discover or a change waits for its host.
    ///   - logger: where the shared objects log what they host, change and fail to do.
    public init<C: Clock & Sendable>(
        manager: CommunicationManager, clock: C, requestTimeout: Duration = .seconds(3),
        logger: Logger = Logger(label: "coaty.shared")
    ) where C.Duration == Duration {
        self.manager = manager
        timing = Timing(clock)
        self.requestTimeout = requestTimeout
        self.logger = logger
        (expiryWakes, expiryWake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        (askWakes, askWake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    public convenience init(
        manager: CommunicationManager, requestTimeout: Duration = .seconds(3),
        logger: Logger = Logger(label: "coaty.shared")
    ) {
        self.init(manager: manager, clock: ContinuousClock(), requestTimeout: requestTimeout, logger: logger)
    }

    /// The objects this agent hosts now.
    public var hostedObjects: [SharedSnapshot] {
        state.withLock { $0.hosted.values.map(\.state.snapshot).sorted { $0.objectId < $1.objectId } }
    }

    // MARK: - Hosting

    /// Hosts an object unless this agent already hosts one of that name (whose snapshot it then returns).
    @discardableResult
    public func host(_ definition: SharedObjectDefinition) async throws(SharedObjectFailure) -> SharedSnapshot {
        try await hostedState(definition).snapshot
    }

    private func hostedState(_ definition: SharedObjectDefinition) async throws(SharedObjectFailure)
        -> SharedObjectState
    {
        guard CoatyName.isValid(definition.name) else { throw Self.invalidName(definition.name) }
        let created = state.withLock { state -> (isNew: Bool, HostedSharedObject) in
            if let existing = state.hosted.values.first(where: { $0.state.name == definition.name }) {
                return (false, existing)
            }
            let object = HostedSharedObject(
                state: SharedObjectState(
                    objectId: definition.objectId ?? CoatyUUID.random(), name: definition.name,
                    hostId: manager.identity.objectId,
                    data: definition.data, expiryMinutes: definition.expiryMinutes, isReadOnly: definition.isReadOnly),
                lastActivity: timing.now(), limits: definition.limits)
            state.hosted[object.state.objectId] = object
            return (true, object)
        }
        if created.isNew {
            logger.info("hosting shared object \(definition.name) (\(created.1.state.objectId))")
            if definition.expiryMinutes != nil { expiryWake.yield() }
            // Offline, coming online advertises it with the others.
            if manager.communicationState == .online { await advertise(created.1.state) }
        }
        return created.1.state.withoutChange
    }

    private func advertise(_ object: SharedObjectState) async {
        do {
            try await manager.publishAdvertise(AdvertiseEvent(object: object.object))
        } catch {
            logger.error("cannot advertise shared object \(object.name): \(error)")
        }
    }

    // MARK: - Connecting

    /// What `connect` does when no agent hosts an object of the name.
    public enum IfMissing: Sendable {
        /// Host a new, empty object.
        case create
        /// Fail with `unknownObject`.
        case fail
        /// Return a connection that is `waiting`, and connects when a host advertises the object or answers the
        /// Discover asked again after 1 s, then twice as long each time up to a minute.
        case wait
    }

    /// Connects to the shared object of this name: the connection's events start with a snapshot of its data (at
    /// once, unless it waits for a host), then report every change and message. It asks the hosts (a Discover) and
    /// goes on as soon as a host answers or advertises the object, else when the request timeout ends.
    public func connect(_ name: String, ifMissing: IfMissing = .create) async throws(SharedObjectFailure)
        -> SharedObjectConnection
    {
        guard CoatyName.isValid(name) else { throw Self.invalidName(name) }
        let (events, continuation) = ObservationStream.makeStream(of: SharedObjectEvent.self)
        let (id, local) = state.withLock { state in
            let id = state.nextId
            state.nextId += 1
            state.replicas[id] = (SharedReplica(name: name), continuation)
            return (id, state.hosted.values.first { $0.state.name == name }?.state)
        }
        let connection = SharedObjectConnection(id: id, name: name, events: events, objects: self)
        if let local {
            absorb(local.withoutChange, into: [id])
            return connection
        }
        if await discoverUntilBound(name, id: id) { return connection }
        switch ifMissing {
        case .create:
            do {
                absorb(try await hostedState(SharedObjectDefinition(name: name)), into: [id])
            } catch {
                disconnect(id)
                throw error
            }
        case .fail:
            disconnect(id)
            throw SharedObjectFailure(.unknownObject, "no agent hosts a shared object named \(name)")
        case .wait:
            let now = timing.now()
            state.withLock { state in
                if state.asks[name] == nil { state.asks[name] = (now + Self.firstAskInterval, Self.firstAskInterval) }
            }
            askWake.yield()
        }
        return connection
    }

    /// Asks the hosts for the object and hands the first answer to the replicas `ids` (nil: every replica of the
    /// object); false when nobody answered within `timeout` (the request timeout unless given).
    private func discover(_ name: String, for ids: [Int]?, timeout: Duration? = nil) async -> Bool {
        let event = SharedObjectWire.discover(name: name)
        for await resolve in manager.publishDiscover(event, timeout: timeout ?? requestTimeout) {
            guard let object = resolve.event.object, let received = SharedObjectState(object) else { continue }
            absorb(received, into: ids)
            return true
        }
        return false
    }

    /// `discover` for a new connection, which ends as well when a host's advertisement binds it meanwhile: a host
    /// that began to host after the Discover reached it never answers it. True when the connection is bound.
    private func discoverUntilBound(_ name: String, id: Int) async -> Bool {
        let answered = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.discover(name, for: [id]) }
            group.addTask { await self.bound(id) }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
        return answered || replica(id).map { $0.status != .waiting } ?? false
    }

    /// Waits until the replica `id` is bound to a host's copy (true), or the task is cancelled or the replica
    /// disconnected (false).
    private func bound(_ id: Int) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool? in
                    guard let entry = state.replicas[id], !Task.isCancelled else { return false }
                    guard entry.replica.status == .waiting else { return true }
                    state.bindingWaiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.bindingWaiters.removeValue(forKey: id) }?.resume(returning: false)
        }
    }

    private func absorb(_ received: SharedObjectState, into ids: [Int]? = nil) {
        updateReplicas(ids) { $0.absorb(received) }
    }

    /// Applies `change` to the replicas `ids` (all when nil) and hands on the events it makes of each.
    private func updateReplicas(_ ids: [Int]?, _ change: (inout SharedReplica) -> [SharedObjectEvent]) {
        let (deliveries, bound) = state.withLock { state in
            var deliveries: [(ObservationStream<SharedObjectEvent>.Continuation, [SharedObjectEvent])] = []
            var bound: [CheckedContinuation<Bool, Never>] = []
            for id in ids ?? Array(state.replicas.keys) {
                guard var entry = state.replicas[id] else { continue }
                let events = change(&entry.replica)
                state.replicas[id] = entry
                if !events.isEmpty { deliveries.append((entry.events, events)) }
                if entry.replica.status != .waiting, let waiter = state.bindingWaiters.removeValue(forKey: id) {
                    bound.append(waiter)
                }
            }
            return (deliveries, bound)
        }
        for waiter in bound { waiter.resume(returning: true) }
        for (continuation, events) in deliveries {
            for event in events {
                continuation.yield(event)
                if event == .deleted { continuation.finish() }
            }
        }
    }

    func disconnect(_ id: Int) {
        let (entry, waiter) = state.withLock {
            ($0.replicas.removeValue(forKey: id), $0.bindingWaiters.removeValue(forKey: id))
        }
        entry?.events.finish()
        waiter?.resume(returning: false)
    }

    func replica(_ id: Int) -> SharedReplica? {
        state.withLock { $0.replicas[id]?.replica }
    }

    // MARK: - Requests

    /// Sends a request to the host of the connection's object and returns the object as the host answered.
    func request(_ request: SharedObjectRequest, from id: Int) async throws(SharedObjectFailure) -> SharedObjectState {
        let (key, value) = (request.key, request.value)
        guard let replica = replica(id) else {
            throw SharedObjectFailure(.unavailable, key: key, value: value, "the connection was closed")
        }
        let current = try Self.available(replica, key: key, value: value)
        let responses: ResponseStream<CompleteEvent>
        do {
            responses = try manager.publishUpdate(
                request.update(of: current.objectId, name: current.name), timeout: requestTimeout)
        } catch {
            throw SharedObjectFailure(.malformed, key: key, value: value, error.description)
        }
        for await response in responses {
            let complete = response.event
            if let refusal = complete.privateData?["refused"]?.stringValue {
                let reason = complete.privateData?["reason"]?.stringValue.flatMap(
                    SharedObjectFailure.Reason.init(rawValue:))
                throw SharedObjectFailure(reason ?? .notAllowed, key: key, value: value, refusal)
            }
            guard let answered = SharedObjectState(complete.object) else { continue }
            if case .deleteObject = request { return answered }
            absorb(answered, into: [id])
            return answered
        }
        throw SharedObjectFailure(
            .noAnswer, key: key, value: value,
            "the host of shared object \(current.name) did not answer within \(requestTimeout)")
    }

    /// The state of a connected replica, or why operations on it fail.
    static func available(_ replica: SharedReplica, key: String?, value: JSONValue?) throws(SharedObjectFailure)
        -> SharedObjectState
    {
        switch (replica.status, replica.state) {
        case (.deleted, _):
            throw SharedObjectFailure(.deleted, key: key, value: value, "shared object \(replica.name) was deleted")
        case (.connected, let state?):
            return state
        default:
            throw SharedObjectFailure(
                .unavailable, key: key, value: value, "shared object \(replica.name) has no host now")
        }
    }

    /// Publishes a message to the connection's object and waits until the broker hands it back, as it hands it to
    /// every other connected client.
    func send(_ message: JSONValue, from id: Int) async throws(SharedObjectFailure) {
        guard let replica = replica(id) else {
            throw SharedObjectFailure(.unavailable, value: message, "the connection was closed")
        }
        let current = try Self.available(replica, key: nil, value: message)
        let size = message.serializedBytes().count
        let limit = SharedObjectLimits().maximumValueBytes
        guard size <= limit else {
            throw SharedObjectFailure(
                .tooLarge, value: message, "the message has \(size) bytes; at most \(limit) are allowed")
        }
        let object = SharedMessageObject(objectName: current.name, objectId: current.objectId, message: message).object
        let messageId = object.objectId
        state.withLock { $0.echoes[messageId] = .expected }
        do {
            try await manager.publishChannel(
                ChannelEvent(channelId: SharedObjectWire.channelId, content: .object(object)))
        } catch {
            endEcho(messageId, echoed: false)
            throw SharedObjectFailure(.malformed, value: message, error.description)
        }
        let echoed = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.awaitEcho(messageId) }
            group.addTask { [requestTimeout] in
                try? await Task.sleep(for: requestTimeout)
                self.endEcho(messageId, echoed: false)
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
        guard echoed else {
            throw SharedObjectFailure(
                .noAnswer, value: message, "the broker did not deliver the message within \(requestTimeout)")
        }
    }

    private func awaitEcho(_ messageId: String) async -> Bool {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool? in
                switch state.echoes[messageId] {
                case .expected:
                    state.echoes[messageId] = .awaited(continuation)
                    return nil
                case .arrived:
                    state.echoes[messageId] = nil
                    return true
                case .awaited, nil:
                    return false
                }
            }
            if let resumeNow { continuation.resume(returning: resumeNow) }
        }
    }

    /// The echo of a sent message arrived (or the wait for it ended).
    private func endEcho(_ messageId: String, echoed: Bool) {
        let waiting = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            switch state.echoes[messageId] {
            case .awaited(let continuation):
                state.echoes[messageId] = nil
                return continuation
            case .expected:
                if echoed { state.echoes[messageId] = .arrived } else { state.echoes[messageId] = nil }
                return nil
            case .arrived, nil:
                if !echoed { state.echoes[messageId] = nil }
                return nil
            }
        }
        waiting?.resume(returning: echoed)
    }

    // MARK: - Serving

    /// Hosts and follows shared objects until the manager stops or the task is cancelled: answers Discovers and
    /// change requests for the hosted objects, expires them, and keeps the connections up to date.
    ///
    /// `whenObserving` is called as soon as it observes the events of shared objects (or failed to). A client that
    /// serves only for one operation waits for it before connecting or sending: a message's echo, which `send`
    /// awaits, or a change advertised just after connecting would otherwise be missed while not yet subscribed.
    public func run(whenObserving: @Sendable () -> Void = {}) async {
        let advertises: ObservationStream<ReceivedEvent<AdvertiseEvent>>
        let updates: ObservationStream<UpdateRequest>
        let messages: ObservationStream<ReceivedEvent<ChannelEvent>>
        do {
            advertises = try manager.observeAdvertise(objectType: SharedObjectWire.objectType)
            updates = try manager.observeUpdate(objectType: SharedObjectWire.objectType)
            messages = try manager.observeChannel(SharedObjectWire.channelId)
        } catch {
            logger.critical("cannot observe shared objects: \(error)")
            whenObserving()
            return
        }
        let deadvertises = manager.observeDeadvertise()
        let discovers = manager.observeDiscover()
        let states = manager.communicationStates()
        whenObserving()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await advertise in advertises {
                    guard let received = SharedObjectState(advertise.event.object) else { continue }
                    self.absorb(received)
                }
            }
            group.addTask {
                for await deadvertise in deadvertises { self.deadvertised(deadvertise.event.objectIds) }
            }
            group.addTask {
                // One at a time, so that versions are given and advertised in order.
                for await update in updates { await self.handle(update) }
            }
            group.addTask {
                for await discover in discovers { await self.answer(discover) }
            }
            group.addTask {
                for await message in messages { self.received(message) }
            }
            group.addTask {
                for await state in states where state == .online { await self.cameOnline() }
            }
            group.addTask { await self.expire() }
            group.addTask { await self.askWhileWaiting() }
        }
    }

    /// Asks again for the objects that connections wait for, after 1 s, then twice as long each time up to a
    /// minute, and listens for answers until the next time: a host whose advertisement went out before this agent
    /// observed advertisements (both starting at once), or whose answer came after the first Discover's timeout (a
    /// loaded machine), is found all the same. Nothing is asked while no connection waits.
    private func askWhileWaiting() async {
        var wakes = askWakes.makeAsyncIterator()
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                let now = timing.now()
                let (due, next) = state.withLock { state -> ([(name: String, listen: Duration)], Duration?) in
                    let waiting = Set(
                        state.replicas.values.filter { $0.replica.status == .waiting }.map(\.replica.name))
                    state.asks = state.asks.filter { waiting.contains($0.key) }
                    var due: [(name: String, listen: Duration)] = []
                    for (name, ask) in state.asks where ask.next <= now {
                        state.asks[name] = (now + ask.interval, min(ask.interval * 2, Self.lastAskInterval))
                        due.append((name, ask.interval))
                    }
                    return (due, state.asks.values.map(\.next).min())
                }
                for ask in due {
                    group.addTask {
                        _ = await self.discover(ask.name, for: nil, timeout: max(self.requestTimeout, ask.listen))
                    }
                }
                if let next {
                    // A connection that starts to wait meanwhile is asked for at most a second late.
                    let wait = min(next - timing.now(), .seconds(1))
                    if wait > .zero { do { try await timing.sleep(wait) } catch { return } }
                } else if await wakes.next() == nil {
                    return
                }
            }
        }
    }

    private func deadvertised(_ objectIds: [String]) {
        updateReplicas(nil) { $0.deadvertised(objectIds) }
    }

    private func received(_ message: ReceivedEvent<ChannelEvent>) {
        for object in message.event.objects {
            guard let sent = SharedMessageObject(object) else { continue }
            let continuations = state.withLock { state in
                state.hosted[sent.objectId]?.lastActivity = timing.now()
                return state.replicas.values.filter { $0.replica.accepts(messageTo: sent.objectId) }.map(\.events)
            }
            let delivered = SharedObjectEvent.message(SharedMessage(message: sent.message, senderId: message.sourceId))
            for continuation in continuations { continuation.yield(delivered) }
            if message.sourceId == manager.identity.objectId { endEcho(object.objectId, echoed: true) }
        }
    }

    /// Back online: the hosted objects are advertised again (others may have missed changes or the host's
    /// return), and each connection asks again, since its host may have gone while this agent was away.
    private func cameOnline() async {
        let (hosted, connected, heard) = state.withLock { state in
            let current = state.replicas.filter { $0.value.replica.status != .deleted }
            return (
                Array(state.hosted.values.map(\.state.withoutChange)),
                Dictionary(grouping: current.keys) { current[$0]?.replica.name ?? "" },
                current.mapValues(\.replica.timesHeard)
            )
        }
        for object in hosted { await advertise(object) }
        await withDiscardingTaskGroup { group in
            for (name, ids) in connected {
                group.addTask {
                    guard !(await self.discover(name, for: ids)) else { return }
                    for id in ids {
                        self.updateReplicas([id]) { $0.unanswered(heardBefore: heard[id] ?? 0) }
                    }
                }
            }
        }
    }

    private func answer(_ request: DiscoverRequest) async {
        let matching = state.withLock { state in
            state.hosted.values.map(\.state.withoutChange).filter { request.event.matches($0.object) }
        }
        for object in matching {
            try? await request.respond(ResolveEvent(object: object.object))
        }
    }

    private func handle(_ request: UpdateRequest) async {
        let object = request.event.object
        enum Action {
            case changed(SharedObjectState)
            case deleted(SharedObjectState)
            case refused(CoatyObject, SharedObjectFailure.Reason, String)
        }
        let action = state.withLock { state -> Action? in
            guard var hosted = state.hosted[object.objectId] else {
                guard state.deletedIds.contains(object.objectId) else { return nil }
                var answer = object
                answer["request"] = nil
                return .refused(answer, .deleted, "shared object \(object.name) was deleted")
            }
            let parsed: SharedObjectRequest
            do {
                parsed = try SharedObjectRequest(updating: object)
            } catch {
                return .refused(hosted.state.withoutChange.object, .malformed, "malformed request: \(error)")
            }
            switch hosted.apply(parsed, from: request.sourceId, at: timing.now()) {
            case .changed:
                state.hosted[object.objectId] = hosted
                return .changed(hosted.state)
            case .deleted:
                state.forget(object.objectId)
                return .deleted(hosted.state.withoutChange)
            case .refused(let reason, let message):
                return .refused(hosted.state.withoutChange.object, reason, message)
            }
        }
        switch action {
        case nil:
            return
        case .changed(let changed):
            logger.debug("shared object \(changed.name) version \(changed.version) by \(request.sourceId)")
            await advertise(changed)
            try? await request.respond(CompleteEvent(object: changed.object))
        case .deleted(let deleted):
            logger.info("shared object \(deleted.name) deleted by \(request.sourceId)")
            try? await request.respond(CompleteEvent(object: deleted.object))
            await manager.publishDeadvertise(DeadvertiseEvent(objectIds: [deleted.objectId]))
        case .refused(let answer, let reason, let message):
            logger.info("refused a request for shared object \(object.name) from \(request.sourceId): \(message)")
            try? await request.respond(
                CompleteEvent(
                    object: answer, privateData: ["refused": .string(message), "reason": .string(reason.rawValue)]))
        }
    }

    /// Deletes hosted objects that have been inactive for longer than their expiry.
    private func expire() async {
        var wakes = expiryWakes.makeAsyncIterator()
        while !Task.isCancelled {
            let next = state.withLock { $0.hosted.values.compactMap(\.expiryDeadline).min() }
            if let next {
                let wait = next - timing.now()
                if wait > .zero {
                    do { try await timing.sleep(min(wait, .seconds(1))) } catch { return }
                    continue
                }
            } else {
                guard await wakes.next() != nil else { return }
                continue
            }
            let now = timing.now()
            let expired = state.withLock { state in
                let expired = state.hosted.values.filter { $0.expiryDeadline.map { $0 <= now } ?? false }.map(\.state)
                for object in expired { state.forget(object.objectId) }
                return expired
            }
            for object in expired {
                logger.info(
                    "shared object \(object.name) expired after \(object.expiryMinutes ?? 0) minutes without activity")
                await manager.publishDeadvertise(DeadvertiseEvent(objectIds: [object.objectId]))
            }
        }
    }

    /// The failure of a name that is not a valid Coaty name.
    package static func invalidName(_ name: String) -> SharedObjectFailure {
        SharedObjectFailure(
            .malformed, "\"\(name)\" is not a valid shared object name: non-empty, without '+', '#' or '/'")
    }
}

/// The clock of a `SharedObjects`, without making the type generic over it.
struct Timing: Sendable {
    /// Time since the service was made.
    let now: @Sendable () -> Duration
    let sleep: @Sendable (Duration) async throws -> Void

    init<C: Clock & Sendable>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        now = { origin.duration(to: clock.now) }
        sleep = { duration in try await clock.sleep(for: duration) }
    }
}

/// A shared object as an agent hosts it from its start (configuration) or creates it.
public struct SharedObjectDefinition: Sendable, Hashable {
    public var name: String
    /// A fixed objectId; a fresh one when nil.
    public var objectId: String?
    public var data: JSONObject
    public var expiryMinutes: Double?
    public var isReadOnly: Bool
    public var limits: SharedObjectLimits

    public init(
        name: String, objectId: String? = nil, data: JSONObject = [:], expiryMinutes: Double? = nil,
        isReadOnly: Bool = false,
        limits: SharedObjectLimits = SharedObjectLimits()
    ) {
        self.name = name
        self.objectId = objectId
        self.data = data
        self.expiryMinutes = expiryMinutes
        self.isReadOnly = isReadOnly
        self.limits = limits
    }
}

extension SharedObjectState {
    /// The object without the change that led to it: what a Resolve or a re-advertisement carries.
    var withoutChange: SharedObjectState {
        var copy = self
        copy.change = nil
        return copy
    }
}
