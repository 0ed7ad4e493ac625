import CoatyBrokerDiscovery
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoreMetrics
import Logging
import Synchronization

/// Speaks the Coaty protocol for one agent over one broker connection.
///
/// Publications and subscriptions made while offline (or before `start`) are kept and applied on the next
/// connect, in the protocol's order: subscriptions, then the agent's Identity and IoNode advertisements, then the
/// queued publications. The queue is bounded (`CommunicationOptions.offlineQueue`); what gives way, and every
/// other value of an own source that does not go out, is counted by reason (`droppedValues`) and logged.
/// Observations are `ObservationStream`s that end when the manager stops or the consumer stops iterating. The
/// manager answers Discover for its identity and IO nodes, keeps the association state of its own IO points, and
/// leaves a Deadvertise of its identity and nodes as MQTT last will.
public final class CommunicationManager: Sendable {
    public let identity: Identity
    public let options: CommunicationOptions
    public let ioNodeDefinitions: [IoNodeDefinition]
    /// Runs tasks on the connection's network thread: an observation consumed by a task that prefers it
    /// (`Task(executorPreference:)`) costs no thread wake per event, and what the task publishes is written as it
    /// publishes, before the rest of the task runs. For short, non-blocking handling of events, as in a C client's
    /// message callback; while the manager is stopped its jobs run on the global executor.
    public let connectionExecutor = ConnectionExecutor()

    let logger: Logger
    /// The topics of the events published: the namespace, and `identity.objectId` as the source level.
    private let eventTopics: EventTopics
    private let rawActorIds: Set<String>
    private let makeTransport: @Sendable () throws(MQTTError) -> any MQTTTransport
    let state: Mutex<State>
    let counters = StatisticsCounters()
    private let operatingStateBroadcast = CurrentValueBroadcast(OperatingState.stopped)
    private let communicationStateBroadcast = CurrentValueBroadcast(CommunicationState.offline)
    private let reconnectCounter = Counter(label: "coaty_edge_reconnects_total")
    let malformedCounter = Counter(label: "coaty_edge_messages_rejected_total", dimensions: [("reason", "malformed")])
    private let oversizedCounter = Counter(
        label: "coaty_edge_messages_rejected_total", dimensions: [("reason", "oversized")])
    private let rejectionLogBudget = LogBudget()
    let requestsRefusedCounter = Counter(label: "coaty_edge_requests_refused_total")
    let refusedRequestsLogBudget = LogBudget()
    private let connectionFailures = ConnectionFailureLog()
    /// Set by `stopReceiving` (and `stop`) until the next start: inbound messages are dropped, not handled.
    private let isDroppingInbound = Atomic(false)
    /// The inbound messages dropped since the stop began.
    private let droppedWhileStopping = Atomic(0)
    private let droppedWhileStoppingCounter = Counter(label: "coaty_edge_inbound_dropped_on_stop_total")
    /// Callers between taking the transport (while no Deadvertise was queued) and the end of their publication: the
    /// Deadvertise waits for them, so that it is the last publication.
    private let publishersInFlight = Atomic(0)
    private let associationRefusals: RetentionRefusals
    let drops: DroppedPublications
    /// Zero-loss delivery, source side (see `ZeroLossOptions`): its own lock, never held while calling the transport.
    let zeroLossSources = Mutex(ZeroLossSources())

    /// One observer of events with one routing key; `deliver` decides whether the event is its kind.
    struct EventObserver: Sendable {
        var id: Int
        var deliver: @Sendable (CoatyTopic, CoatyEvent) -> Void
        var finish: @Sendable () -> Void
    }

    /// The observer of one publication of a request, under its correlation id: the response type it waits for and
    /// the response topic it was given (see `ResponseSubscriptions`).
    struct ResponseObserver: Sendable {
        var responseType: CoatyEventType
        /// Yields a response that answers the request, or returns false (it is counted as rejected); ends the
        /// responses at `.end`.
        var receive: @Sendable (ResponseSignal) -> Bool
        var topicFilter: String
    }

    /// The key under which inbound events other than responses find their observers: the event type with its
    /// filter (`ADV:IoNode`, `DSC`, `CLL:switch`). Responses find theirs by correlation id (`responseObservers`).
    struct RoutingKey: Hashable {
        var eventType: CoatyEventType
        var filter: String?
    }

    /// A receiver of the values routed to an own IO actor.
    struct IoValueReceiver: Sendable {
        var id: Int
        var deliver: @Sendable (IoValue) -> Void
        /// Told why a payload on the actor's route was dropped (not JSON, for an actor of JSON values).
        var reject: (@Sendable (String) -> Void)?
        var hasRoom: (@Sendable () -> Bool)?
        var finish: @Sendable () -> Void
    }

    /// An own actor's receiver on an IO route, with whether it takes raw bytes.
    struct IoRouteReceiver: Sendable {
        var isRaw: Bool
        var deliver: @Sendable (IoValue) -> Void
        var reject: (@Sendable (String) -> Void)?
        /// Whether it takes a value now without losing one; nil: always (see `handleIoValues`).
        var hasRoom: (@Sendable () -> Bool)?
    }

    /// Who gets the messages on one IO route. The table of them is rebuilt whenever associations, value
    /// receivers or route monitors change, so that an inbound message finds its receivers with one lookup and
    /// without allocating.
    struct IoRouteDelivery: Sendable {
        var monitors: [ObservationStream<[UInt8]>.Continuation] = []
        /// The receivers of the own actors associated on the route; nil
        /// when no own actor is associated on it (a monitored route only).
        var receivers: [IoRouteReceiver]?
    }

    /// The deliveries by IO route. Every inbound message is looked up here first; most are events, whose topics
    /// are of other lengths than the routes' (an IoValue route is the same length for every source of a namespace), so
    /// the table counts its routes per topic length and hashes a topic only when a route of its length is there.
    struct IoRouteTable: ~Copyable {
        private var deliveries: [String: IoRouteDelivery] = [:]
        /// The number of routes per `lengthSlot` of their length.
        private var routesPerLengthSlot = [Int32](repeating: 0, count: 256)

        init() {}

        private static func lengthSlot(of route: String) -> Int {
            route.utf8.count & 255
        }

        /// The delivery of the route `topic`; nil if it is none of the routes.
        func delivery(on topic: String) -> IoRouteDelivery? {
            guard routesPerLengthSlot[Self.lengthSlot(of: topic)] > 0 else { return nil }
            return deliveries[topic]
        }

        /// Sets or (with nil) removes the delivery of `route`.
        mutating func setDelivery(_ delivery: IoRouteDelivery?, on route: String) {
            let hadRoute: Bool
            if let delivery {
                hadRoute = deliveries.updateValue(delivery, forKey: route) != nil
                if !hadRoute { routesPerLengthSlot[Self.lengthSlot(of: route)] += 1 }
            } else {
                hadRoute = deliveries.removeValue(forKey: route) != nil
                if hadRoute { routesPerLengthSlot[Self.lengthSlot(of: route)] -= 1 }
            }
        }
    }

    struct State: ~Copyable {
        var operatingState = OperatingState.stopped
        var transport: (any MQTTTransport)?
        /// The mDNS browse that says where the broker is, while started with `mdnsServiceName`.
        var brokerDiscovery: MDNSBrokerDiscovery?
        var connectionTask: Task<Void, Never>?
        var isOnline = false
        var ioNodes: [IoNode] = []
        var routing: IoRoutingTable
        /// Topic filters with the number of observers that need each, renewed in the order they were first made.
        var subscriptions = SubscriptionList()
        var queue: PublicationQueue
        var isDraining = false
        /// Set when `stop` queues the Deadvertise: nothing is published after it, so publications are dropped.
        var hasLeft = false
        var nextObserverId = 0
        var eventObservers: [RoutingKey: [EventObserver]] = [:]
        /// Per observer, its routing key and topic filter.
        var observerSubscriptions: [Int: (key: RoutingKey, topicFilter: String)] = [:]
        /// The observers of requests' responses by correlation id: a table of their own, without ids or lists, as
        /// every request adds one (two for an Update published twice) and removes it again when it ends.
        var responseObservers: [String: ResponseObserver] = [:]
        var responseSubscriptions: ResponseSubscriptions
        /// Per own actor.
        var ioValueReceivers: [String: [IoValueReceiver]] = [:]
        var ioStateObservers: [String: [Int: ObservationStream<IoState>.Continuation]] = [:]
        /// `observeIoStates(of:)`: the points each one watches.
        var ioStatesObservers:
            [Int: (
                pointIds: Set<String>, continuation: ObservationStream<(pointId: String, state: IoState)>.Continuation
            )] = [:]
        var rawObservers:
            [Int: (filter: String, continuation: ObservationStream<(topic: String, payload: [UInt8])>.Continuation)] =
                [:]
        var routeMonitors: [String: [Int: ObservationStream<[UInt8]>.Continuation]] = [:]
        /// Derived from `routing`, `ioValueReceivers` and `routeMonitors` by `rebuildIoRoute`, route by route.
        var ioRoutes = IoRouteTable()
        /// Zero-loss delivery, actor side: per source associated with an own actor, where its sequence stands.
        var zeroLossInboxes: [String: ZeroLossInbox] = [:]
        /// The sources whose frame topics are subscribed.
        var zeroLossSubscribed: Set<String> = []
        /// Resends sync frames and acknowledgements every second while started.
        var zeroLossTask: Task<Void, Never>?

        init(routing: IoRoutingTable, queueLimits: OfflineQueueLimits, maximumPendingRequests: Int) {
            self.routing = routing
            queue = PublicationQueue(limits: queueLimits)
            responseSubscriptions = ResponseSubscriptions(maximumPending: maximumPendingRequests)
        }

        mutating func makeObserverId() -> Int {
            defer { nextObserverId += 1 }
            return nextObserverId
        }
    }

    /// - Parameter makeTransport: builds the connection for each start: libmosquitto unless a test passes
    ///   another transport.
    public init(
        identity: Identity, options: CommunicationOptions, ioNodes: [IoNodeDefinition] = [],
        logger: Logger = Logger(label: "coaty.communication"),
        makeTransport: @escaping @Sendable () throws(MQTTError) -> any MQTTTransport = { () throws(MQTTError) in
            try MosquittoTransport()
        }
    ) {
        self.identity = identity
        self.options = options
        // Nodes without sources and actors are dropped, as in Coaty JS.
        ioNodeDefinitions = ioNodes.filter { !$0.ioSources.isEmpty || !$0.ioActors.isEmpty }
        self.logger = logger
        associationRefusals = RetentionRefusals(store: "IO routing table", logger: logger)
        drops = DroppedPublications(
            sourceIds: ioNodeDefinitions.flatMap { $0.ioSources.map(\.objectId) }, logger: logger)
        eventTopics = EventTopics(namespace: options.namespace, sourceId: identity.objectId)
        rawActorIds = Set(ioNodeDefinitions.flatMap { $0.ioActors.filter(\.useRawIoValues).map(\.objectId) })
        self.makeTransport = makeTransport
        let routing = IoRoutingTable(
            sourceIds: ioNodeDefinitions.flatMap { $0.ioSources.map(\.objectId) },
            actorIds: ioNodeDefinitions.flatMap { $0.ioActors.map(\.objectId) })
        state = Mutex(
            State(
                routing: routing, queueLimits: options.offlineQueue,
                maximumPendingRequests: options.maximumPendingRequests))
    }

    // MARK: - States

    public var operatingState: OperatingState { operatingStateBroadcast.value }
    public var communicationState: CommunicationState { communicationStateBroadcast.value }

    /// The current operating state, then every change.
    public func operatingStates() -> ObservationStream<OperatingState> { operatingStateBroadcast.stream() }

    /// The current communication state, then every change.
    public func communicationStates() -> ObservationStream<CommunicationState> { communicationStateBroadcast.stream() }

    public var statistics: CommunicationStatistics {
        var statistics = counters.snapshot
        statistics.ioValuesDropped = ValueDropReason.allCases.reduce(0) { $0 + drops.count($1) }
        return statistics
    }

    /// The values of an own source dropped for `reason` since the manager was made.
    public func droppedValues(of sourceId: String, _ reason: ValueDropReason) -> Int {
        drops.count(of: sourceId, reason)
    }

    /// The values of all own sources dropped for `reason` since the manager was made.
    public func droppedValues(_ reason: ValueDropReason) -> Int {
        drops.count(reason)
    }

    /// The publications other than values (events, answers, raw messages) dropped for `reason`.
    public func droppedEvents(_ reason: ValueDropReason) -> Int {
        drops.eventCount(reason)
    }

    /// Counts values of an own source that its controller dropped before publishing them (not associated, or
    /// superseded by its strategy), in `coaty_edge_values_dropped_total{source, reason}`, without a log line.
    package func countDroppedValues(_ amount: Int = 1, of sourceId: String, _ reason: ValueDropReason) {
        drops.record(amount, of: sourceId, reason)
    }

    /// Why the last connection attempt failed ("TLS: certificate verify failed (unknown CA: ...)", "the broker
    /// refused the connection: not authorised (CONNACK 5)", "connection refused"); nil once connected, and until
    /// an attempt of this start failed.
    public var connectionFailure: String? { connectionFailures.lastReason }

    /// The IO nodes advertised in this run; their objectIds change on every start.
    public var ioNodes: [IoNode] { state.withLock { $0.ioNodes } }

    // MARK: - Start and stop

    /// Connects and joins: subscriptions, Identity and IoNode advertisements, then queued publications.
    /// Returns at once; the connection comes up in the background (see `communicationStates()`).
    public func start() {
        let nodes = ioNodeDefinitions.map { $0.makeNode(parentObjectId: identity.objectId) }
        let transport: any MQTTTransport
        do {
            transport = try makeTransport()
        } catch {
            logger.critical("cannot create the MQTT client: \(error)")
            return
        }
        var brokerDiscovery: MDNSBrokerDiscovery?
        if let serviceName = options.mdnsServiceName {
            do {
                let logger = logger
                // With TLS the certificate names the host, so connect by the announced host name (needs nss-mdns).
                brokerDiscovery = try MDNSBrokerDiscovery(
                    serviceName: serviceName, connectsByHostName: options.tls != nil, onChange: { logger.info("\($0)") }
                )
            } catch {
                logger.critical("cannot look for the broker by mDNS: \(error)")
                return
            }
        }
        let started = state.withLock { state -> Bool in
            guard state.operatingState == .stopped else { return false }
            state.operatingState = .started
            state.ioNodes = nodes
            state.transport = transport
            state.brokerDiscovery = brokerDiscovery
            for node in nodes {
                addSubscription(
                    CoatyTopic.subscriptionFilter(
                        namespace: subscriptionNamespace, eventType: .associate, filter: node.contextName),
                    in: &state)
            }
            addSubscription(
                CoatyTopic.subscriptionFilter(namespace: subscriptionNamespace, eventType: .discover), in: &state)
            if options.zeroLoss != nil {
                for node in ioNodeDefinitions {
                    for source in node.ioSources {
                        addSubscription(ZeroLossFrame.acknowledgementTopic(of: source.objectId), in: &state)
                    }
                }
            }
            return true
        }
        guard started else {
            brokerDiscovery?.stop()
            return
        }
        startZeroLoss()
        connectionFailures.reset()
        isDroppingInbound.store(false, ordering: .relaxed)
        operatingStateBroadcast.send(.started)

        var connectOptions = MQTTConnectOptions(
            host: options.host, port: options.port, clientId: clientId, keepAlive: options.keepAlive,
            username: options.username, password: options.password, tls: options.tls,
            will: unjoinMessage(nodes: nodes), reconnect: options.reconnect,
            maximumInboundPayload: options.maximumInboundPayload)
        connectOptions.locator = brokerDiscovery?.locator
        do {
            try transport.connect(connectOptions, executor: connectionExecutor) { [weak self] inbound in
                self?.receive(inbound)
            }
        } catch {
            logger.error("cannot connect to \(brokerAddress): \(error)")
        }
        // On the network thread: the join follows the CONNACK without a thread wake.
        let task = Task(executorPreference: connectionExecutor) { [weak self] in
            for await event in transport.connectionEvents {
                guard let self else { return }
                await self.handle(event, on: transport)
            }
        }
        state.withLock { $0.connectionTask = task }
    }

    /// Stops handling inbound messages: from now on they are dropped and counted (`stop` logs how many), so that a
    /// stop does not wait for a backlog of values or requests, and nothing answers a request any more. `stop` does it
    /// too; an agent that stops calls it first, before its controllers' last publications. Until the next `start`.
    package func stopReceiving() {
        isDroppingInbound.store(true, ordering: .relaxed)
    }

    /// Leaves: drops inbound messages from now on, publishes the Deadvertise of the identity and IO nodes as the last
    /// publication (later ones are dropped), disconnects (so the broker drops the will; if the Deadvertise could not
    /// be sent, the socket is closed so the will tells the others), ends all observations and forgets deferred
    /// publications and subscriptions.
    public func stop() async {
        stopReceiving()
        let leaving = state.withLock {
            state -> (any MQTTTransport, Task<Void, Never>?, [IoNode], MDNSBrokerDiscovery?)? in
            guard state.operatingState == .started, let transport = state.transport else { return nil }
            state.operatingState = .stopped
            state.hasLeft = true
            return (transport, state.connectionTask, state.ioNodes, state.brokerDiscovery)
        }
        guard let (transport, connectionTask, nodes, brokerDiscovery) = leaving else { return }
        operatingStateBroadcast.send(.stopped)
        state.withLock { $0.zeroLossTask }?.cancel()

        // A publication that took the transport before `hasLeft` was set goes out before the Deadvertise: it takes
        // microseconds, a queue drained meanwhile a little longer.
        let deadline = ContinuousClock.now + .seconds(1)
        while publishersInFlight.load(ordering: .acquiring) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .microseconds(100))
        }
        _ = state.withLock { $0.queue.append(QueuedPublication(message: unjoinMessage(nodes: nodes), kind: .join)) }
        drain(leaving: true)
        let (isUnjoinSent, unsent) = state.withLock { state in
            state.isOnline && state.queue.isEmpty ? (true, []) : (false, state.queue.removeAll())
        }
        drops.drop(unsent, .stop, because: "the agent stopped while offline")
        logger.debug(
            "leaving: Deadvertise \(isUnjoinSent ? "sent" : "queued"), disconnecting \(isUnjoinSent ? "cleanly" : "abruptly")"
        )
        let dropped = droppedWhileStopping.exchange(0, ordering: .relaxed)
        if dropped > 0 {
            logger.notice("dropped \(dropped) inbound messages that arrived while the agent stopped")
        }
        await transport.disconnect(isUnjoinSent ? .clean : .abrupt)
        await connectionTask?.value
        brokerDiscovery?.stop()

        let ended = state.withLock { state in
            let ended = (
                events: state.eventObservers.values.flatMap { $0 },
                responses: state.responseObservers.values.map(\.receive),
                ioValues: state.ioValueReceivers.values.flatMap { $0 },
                ioStates: state.ioStateObservers.values.flatMap(\.values),
                ioStatesOfMany: state.ioStatesObservers.values.map { $0 },
                raw: state.rawObservers.values.map(\.continuation),
                routeMonitors: state.routeMonitors.values.flatMap(\.values)
            )
            state = State(
                routing: IoRoutingTable(
                    sourceIds: ioNodeDefinitions.flatMap { $0.ioSources.map(\.objectId) },
                    actorIds: ioNodeDefinitions.flatMap { $0.ioActors.map(\.objectId) }),
                queueLimits: options.offlineQueue, maximumPendingRequests: options.maximumPendingRequests)
            return ended
        }
        communicationStateBroadcast.send(.offline)
        for continuation in ended.ioStates {
            continuation.yield(IoState(hasAssociations: false))
            continuation.finish()
        }
        for (pointIds, continuation) in ended.ioStatesOfMany {
            for pointId in pointIds { continuation.yield((pointId, IoState(hasAssociations: false))) }
            continuation.finish()
        }
        ended.ioValues.forEach { $0.finish() }
        ended.events.forEach { $0.finish() }
        ended.responses.forEach { _ = $0(.end) }
        ended.raw.forEach { $0.finish() }
        ended.routeMonitors.forEach { $0.finish() }
    }

    /// The broker for logs: `host:port`, or with mDNS the service looked for and the broker it found last.
    public var brokerAddress: String {
        guard options.mdnsServiceName != nil else { return options.brokerDescription }
        let chosen = state.withLock { $0.brokerDiscovery?.chosenBroker }
        return options.brokerDescription + (chosen.map { " at \($0.address):\($0.port)" } ?? "")
    }

    /// The MQTT client id Coaty agents use: "Coaty" and the first 18 hex digits of the identity's objectId.
    public var clientId: String {
        "Coaty" + String(identity.objectId.filter { $0 != "-" }.prefix(18))
    }

    var subscriptionNamespace: String? {
        options.shouldEnableCrossNamespacing ? nil : options.namespace
    }

    func topic(_ eventType: CoatyEventType, filter: String? = nil, correlationId: String? = nil) -> String {
        eventTopics.topic(eventType, filter: filter, correlationId: correlationId)
    }

    private func unjoinMessage(nodes: [IoNode]) -> MQTTMessage {
        let event = DeadvertiseEvent(objectIds: [identity.objectId] + nodes.map(\.objectId))
        return MQTTMessage(topic: topic(.deadvertise), payload: event.serializedBytes())
    }

    private func joinMessages(nodes: [IoNode]) -> [MQTTMessage] {
        ([identity.object] + nodes.map(\.object)).map { object in
            MQTTMessage(
                topic: topic(.advertise, filter: object.coreType.rawValue),
                payload: AdvertiseEvent(object: object).serializedBytes())
        }
    }

    // MARK: - Connection

    private func handle(_ event: MQTTConnectionEvent, on transport: any MQTTTransport) async {
        switch event {
        case .connected:
            // One step under the lock: a subscription given up meanwhile is not renewed from a stale list, and with
            // the join events at the front of the queue, whatever is published from now on (an answer, a value, an
            // observer of the online state) queues behind them instead of going out before the agent has
            // advertised itself.
            state.withLock { state in
                state.isOnline = true
                for filter in state.subscriptions {
                    do {
                        try transport.subscribe(filter)
                    } catch {
                        logger.warning("cannot subscribe \(filter): \(error)")
                    }
                }
                state.queue.prependJoin(joinMessages(nodes: state.ioNodes))
            }
            communicationStateBroadcast.send(.online)
            drain()
            resumeZeroLoss()
            let failedAttempts = connectionFailures.reset()
            let after = failedAttempts > 0 ? " after \(failedAttempts) failed attempts" : ""
            logger.info("online as \(identity.name) (\(identity.objectId)) at \(brokerAddress)\(after)")
        case .connectionLost(let reason):
            let wasOnline = state.withLock { state in
                defer { state.isOnline = false }
                removeSubscriptions(state.responseSubscriptions.releaseEnded(), in: &state)
                return state.isOnline
            }
            zeroLossConnectionLost()
            if wasOnline {
                counters.reconnects.add(1)
                reconnectCounter.increment()
                logger.warning("connection to the broker lost: \(reason)")
            } else {
                logConnectFailure(reason)
            }
            communicationStateBroadcast.send(.offline)
        case .reconnecting(let attempt, let delay):
            logger.debug("reconnecting: attempt \(attempt) in \(delay)")
            communicationStateBroadcast.send(.reconnecting(attempt: attempt))
        case .gaveUp(let attempts):
            let reason = connectionFailures.lastReason.map { ": \($0)" } ?? ""
            logger.error("gave up connecting to the broker at \(brokerAddress) after \(attempts) attempts\(reason)")
            state.withLock { $0.isOnline = false }
            communicationStateBroadcast.send(.offline)
        case .disconnected:
            state.withLock { $0.isOnline = false }
        case .unwritten(let messages):
            countUnwritten(messages)
        }
    }

    /// Publications that libmosquitto had queued but not written when the connection ended: QoS 0 has no resend,
    /// so they are lost, and counted (values per source by their route).
    private func countUnwritten(_ messages: [MQTTMessage]) {
        let (sourcesByRoute, hasLeft) = state.withLock { state in
            let sourceIds = ioNodeDefinitions.flatMap { $0.ioSources.map(\.objectId) }
            let routes = sourceIds.compactMap { id in state.routing.route(ofSource: id).map { ($0, id) } }
            return (Dictionary(routes, uniquingKeysWith: { first, _ in first }), state.hasLeft)
        }
        let joinTopics = Set(state.withLock { joinMessages(nodes: $0.ioNodes) }.map(\.topic))
        let publications = messages.map { message in
            let kind: PublicationKind =
                if let sourceId = sourcesByRoute[message.topic] {
                    .value(sourceId: sourceId)
                } else if joinTopics.contains(message.topic) || message.topic == topic(.deadvertise) { .join } else {
                    .event
                }
            return QueuedPublication(message: message, kind: kind)
        }
        drops.drop(
            publications, hasLeft ? .stop : .connectionLost,
            because: "the connection ended before they were written to it")
    }

    /// A failed attempt to connect, logged by the budget of `ConnectionFailureLog`.
    private func logConnectFailure(_ reason: String) {
        let broker = brokerAddress
        switch connectionFailures.failed(reason) {
        case .failing(let reason, let unlogged)?:
            let quiet = unlogged > 0 ? " (\(unlogged) failed attempts not logged before)" : ""
            logger.warning("cannot connect to the broker at \(broker): \(reason)\(quiet)")
        case .stillFailing(let reason, let attempts)?:
            logger.warning(
                "still cannot connect to the broker at \(broker): \(reason) (\(attempts) failed attempts since the last message)"
            )
        case nil:
            logger.debug("cannot connect to the broker at \(broker): \(reason)")
        }
    }

    // MARK: - Publishing

    /// Sends at once when online with nothing queued, and queues otherwise (FIFO within the bound, drained on
    /// connect).
    func enqueue(_ messages: [MQTTMessage], kind: PublicationKind = .event) {
        guard let transport = transportForSending(messages, kind: kind) else { return }
        defer { publishersInFlight.wrappingSubtract(1, ordering: .releasing) }
        for (index, message) in messages.enumerated() {
            let rest = messages[(index + 1)...].lazy.map { QueuedPublication(message: $0, kind: kind) }
            guard send(QueuedPublication(message: message, kind: kind), on: transport, keepingOnFailure: rest) else {
                return
            }
        }
    }

    /// Runs `body`, which publishes several events or values (a turn of sensor reads), so that what it publishes
    /// leaves together, in as few TCP segments as fit, when it returns (see `MQTTTransport.publishingTogether`).
    /// `body` must not block or wait: the connection's other packets wait for it too.
    package func publishingTogether<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard let transport = state.withLock({ $0.isOnline ? $0.transport : nil }) else { return try body() }
        return try transport.publishingTogether(body)
    }

    /// `enqueue` of one message, without an array: values and most events are one publication.
    func enqueue(_ message: MQTTMessage, kind: PublicationKind = .event) {
        guard let transport = transportForSending(CollectionOfOne(message), kind: kind) else { return }
        defer { publishersInFlight.wrappingSubtract(1, ordering: .releasing) }
        send(QueuedPublication(message: message, kind: kind), on: transport, keepingOnFailure: EmptyCollection())
    }

    /// The transport if the messages can go out now (the caller is then a publisher in flight until it is done);
    /// otherwise they are queued (what gives way to the bound is counted), or dropped and counted after the
    /// Deadvertise.
    private func transportForSending(_ messages: some Collection<MQTTMessage>, kind: PublicationKind) -> (
        any MQTTTransport
    )? {
        var dropped: [QueuedPublication] = []
        var hasLeft = false
        let transport = state.withLock { state -> (any MQTTTransport)? in
            guard !state.hasLeft else {
                hasLeft = true
                return nil
            }
            guard state.isOnline, state.queue.isEmpty, !state.isDraining, let transport = state.transport else {
                for message in messages {
                    dropped += state.queue.append(QueuedPublication(message: message, kind: kind))
                }
                return nil
            }
            // Under the lock that `stop` sets `hasLeft` with, so that it sees this publisher.
            publishersInFlight.wrappingAdd(1, ordering: .relaxed)
            return transport
        }
        if hasLeft {
            drops.drop(
                messages.map { QueuedPublication(message: $0, kind: kind) }, .stop,
                because: "published after the agent left")
        } else if !dropped.isEmpty {
            dropOverflow(dropped)
        }
        return transport
    }

    /// Counts and logs what gave way to the offline queue's bound.
    private func dropOverflow(_ dropped: [QueuedPublication]) {
        let limits = options.offlineQueue
        drops.drop(
            dropped, .offlineQueueFull,
            because: "the offline queue is full (\(limits.maximumMessages) messages or \(limits.maximumBytes) bytes); "
                + "the \(limits.dropPolicy.rawValue) give way")
    }

    /// Publishes; when the connection just dropped, queues the message and the ones after it for the next connect
    /// and returns false.
    @discardableResult
    private func send(
        _ publication: QueuedPublication, on transport: any MQTTTransport,
        keepingOnFailure rest: some Collection<QueuedPublication>
    ) -> Bool {
        do {
            try transport.publish(publication.message)
            counters.messagesPublished.add(1)
        } catch .notConnected {
            let dropped = state.withLock { state in state.queue.prepend([publication] + rest) }
            dropOverflow(dropped)
            return false
        } catch {
            drops.drop([publication], .payloadRejected, because: "\(error)")
        }
        return true
    }

    /// Sends the queued publications in order until the queue is empty or the connection fails. After the
    /// Deadvertise was queued, only `stop` drains (`leaving`).
    func drain(leaving: Bool = false) {
        while true {
            let next = state.withLock { state -> (any MQTTTransport, [QueuedPublication])? in
                guard state.isOnline, let transport = state.transport, !state.queue.isEmpty, leaving || !state.hasLeft
                else {
                    state.isDraining = false
                    return nil
                }
                state.isDraining = true
                publishersInFlight.wrappingAdd(1, ordering: .relaxed)
                return (transport, state.queue.removeAll())
            }
            guard let (transport, batch) = next else { return }
            defer { publishersInFlight.wrappingSubtract(1, ordering: .releasing) }
            for (index, publication) in batch.enumerated() {
                do {
                    try transport.publish(publication.message)
                    counters.messagesPublished.add(1)
                } catch .notConnected {
                    let dropped = state.withLock { state in
                        state.isDraining = false
                        return state.queue.prepend(batch[index...])
                    }
                    dropOverflow(dropped)
                    return
                } catch {
                    drops.drop([publication], .payloadRejected, because: "\(error)")
                }
            }
        }
    }

    // MARK: - Subscriptions and observers

    func addSubscription(_ filter: String, in state: inout State) {
        addSubscriptions([filter], in: &state)
    }

    /// Counts a need for each filter; those needed for the first time are subscribed together (one packet).
    func addSubscriptions(_ filters: [String], in state: inout State) {
        let new = state.subscriptions.add(filters)
        guard !new.isEmpty else { return }
        if state.isOnline, let transport = state.transport {
            do {
                try transport.subscribe(new)
            } catch {
                logger.warning("cannot subscribe \(new.joined(separator: ", ")) now, will on reconnect: \(error)")
            }
        }
    }

    func removeSubscription(_ filter: String, in state: inout State) {
        removeSubscriptions([filter], in: &state)
    }

    /// Takes back a need for each filter; those no longer needed are unsubscribed together (one packet).
    func removeSubscriptions(_ filters: [String], in state: inout State) {
        let gone = state.subscriptions.remove(filters)
        guard !gone.isEmpty else { return }
        // Offline too: the transport remembers its subscriptions and would otherwise renew this one on the next
        // connect (a timed-out request's response topic, a cancelled observation), for good.
        try? state.transport?.unsubscribe(gone)
    }

    /// Registers an observer and the subscription it needs; returns its id for `removeObserver`.
    func addObserver(
        _ eventType: CoatyEventType, filter: String? = nil,
        deliver: @escaping @Sendable (CoatyTopic, CoatyEvent) -> Void, finish: @escaping @Sendable () -> Void
    ) -> Int {
        let key = RoutingKey(eventType: eventType, filter: filter)
        let topicFilter = CoatyTopic.subscriptionFilter(
            namespace: subscriptionNamespace, eventType: eventType, filter: filter)
        return state.withLock { state in
            let id = state.makeObserverId()
            state.eventObservers[key, default: []].append(EventObserver(id: id, deliver: deliver, finish: finish))
            state.observerSubscriptions[id] = (key, topicFilter)
            addSubscription(topicFilter, in: &state)
            return id
        }
    }

    /// The correlation ids of one request's publications (an Update of an application object type is published
    /// twice), and whether `keepResponseTopics` is due once the request is published. Two named fields rather than
    /// an array: a Call registers one with every call.
    struct RequestObservers {
        var first: String
        var second: String?
        var needsUpkeep: Bool
    }

    /// Registers `receive` for the responses to a request on topics of `responseSubscriptions`; nil (and nothing
    /// registered) when `maximumPendingRequests` would be passed.
    func addResponseObservers(
        of responseType: CoatyEventType, isPublishedTwice: Bool,
        receive: @escaping @Sendable (ResponseSignal) -> Bool
    ) -> RequestObservers? {
        let namespace = subscriptionNamespace
        return state.withLock { state in
            guard
                let taken = state.responseSubscriptions.take(
                    isPublishedTwice ? 2 : 1, of: responseType,
                    filter: { correlationId in
                        CoatyTopic.subscriptionFilter(
                            namespace: namespace, eventType: responseType, correlationId: correlationId)
                    })
            else { return nil }
            addSubscriptions(taken.subscribeBefore, in: &state)
            func register(_ topic: ResponseSubscriptions.ResponseTopic) -> String {
                state.responseObservers[topic.correlationId] = ResponseObserver(
                    responseType: responseType, receive: receive, topicFilter: topic.topicFilter)
                return topic.correlationId
            }
            return RequestObservers(
                first: register(taken.first), second: taken.second.map(register), needsUpkeep: taken.needsUpkeep)
        }
    }

    /// The request of these correlation ids ended: their observers go, their response topics are given back.
    func removeResponseObservers(_ first: String, _ second: String?) {
        state.withLock { state in
            func remove(_ correlationId: String) {
                guard let observer = state.responseObservers.removeValue(forKey: correlationId) else { return }
                removeSubscriptions(
                    state.responseSubscriptions.release(observer.topicFilter, isOnline: state.isOnline), in: &state)
            }
            remove(first)
            if let second { remove(second) }
        }
    }

    /// Runs `keepResponseTopics` as a job of the connection's thread: in its next turn, after it has written the
    /// request just published, so that the request does not wait for the upkeep's work and packets.
    func scheduleResponseUpkeep() {
        Task(executorPreference: connectionExecutor) { [weak self] in self?.keepResponseTopics() }
    }

    /// Subscribes fresh spare response topics and gives up the ended ones (`ResponseSubscriptions.upkeep`).
    func keepResponseTopics() {
        let namespace = subscriptionNamespace
        state.withLock { state in
            let upkeep = state.responseSubscriptions.upkeep { responseType, correlationId in
                CoatyTopic.subscriptionFilter(
                    namespace: namespace, eventType: responseType, correlationId: correlationId)
            }
            addSubscriptions(upkeep.subscribe, in: &state)
            removeSubscriptions(upkeep.unsubscribe, in: &state)
        }
    }

    func removeObserver(_ id: Int) {
        state.withLock { state in
            guard let (key, topicFilter) = state.observerSubscriptions.removeValue(forKey: id) else { return }
            if let index = state.eventObservers.index(forKey: key) {
                state.eventObservers.values[index].removeAll { $0.id == id }
                if state.eventObservers.values[index].isEmpty { state.eventObservers.remove(at: index) }
            }
            removeSubscription(topicFilter, in: &state)
        }
    }

    /// A stream of the events that `extract` picks from those arriving under the routing key.
    func observe<Element: Sendable>(
        _ eventType: CoatyEventType, filter: String? = nil,
        extract: @escaping @Sendable (CoatyTopic, CoatyEvent) -> Element?
    ) -> ObservationStream<Element> {
        let (stream, continuation) = ObservationStream.makeStream(of: Element.self)
        let id = addObserver(
            eventType, filter: filter,
            deliver: { topic, event in
                if let element = extract(topic, event) { continuation.yield(element) }
            },
            finish: continuation.finish)
        continuation.onTermination { [weak self] in self?.removeObserver(id) }
        return stream
    }

    func publish(_ event: CoatyEvent, correlationId: String? = nil) {
        let payload = event.serializedBytes()
        let (filter, secondFilter) = event.topicFilter
        let message = MQTTMessage(
            topic: topic(event.eventType, filter: filter, correlationId: correlationId), payload: payload)
        guard let secondFilter else {
            enqueue(message)
            return
        }
        enqueue([
            message,
            MQTTMessage(
                topic: topic(event.eventType, filter: secondFilter, correlationId: correlationId), payload: payload),
        ])
    }

    func incrementRejectedResponses() {
        counters.responsesRejected.add(1)
    }

    // MARK: - Inbound

    /// Called on the transport's network thread for every message.
    private func receive(_ inbound: MQTTInbound) {
        guard !isDroppingInbound.load(ordering: .relaxed) else {
            droppedWhileStopping.add(1)
            droppedWhileStoppingCounter.increment()
            return
        }
        let message: MQTTMessage
        switch inbound {
        case .message(let received):
            message = received
        case .oversized(let topic, let size):
            counters.messagesOversized.add(1)
            let reason = "larger than the limit of \(options.maximumInboundPayload) bytes"
            // The actors on the route count it too, as a value they could not take.
            let receivers = state.withLock { $0.ioRoutes.delivery(on: topic)?.receivers } ?? []
            for receiver in receivers {
                receiver.reject?("a value of \(size) bytes, \(reason)")
            }
            reject(counting: oversizedCounter) { "dropped a message of \(size) bytes on \(topic): \(reason)" }
            return
        }
        if deliverOnIoRoute(message) { return }
        if options.zeroLoss != nil, let (sourceId, isValueTopic) = ZeroLossFrame.parseTopic(message.topic) {
            receiveZeroLoss(message, of: sourceId, isValueTopic: isValueTopic)
            return
        }
        switch CoatyCodec.decode(topic: message.topic, payload: message.payload) {
        case .success(.event(let topic, let event)):
            counters.messagesReceived.add(1)
            dispatch(topic, event)
        case .success(.raw(let topic, let payload)):
            counters.messagesReceived.add(1)
            deliverRaw(topic: topic, payload: payload)
        case .success(.ioValue):
            break  // a route this agent no longer listens to
        case .failure(let rejection):
            reject(counting: malformedCounter) { "dropped a malformed message: \(rejection)" }
        }
    }

    /// Counts a dropped message and logs why, within the budget (malformed and oversized messages share it).
    func reject(counting counter: Counter, _ warning: () -> Logger.Message) {
        counters.messagesRejected.add(1)
        counter.increment()
        guard case .log(let suppressed) = rejectionLogBudget.admit() else { return }
        if suppressed > 0 {
            logger.warning("\(suppressed) more malformed or oversized messages were dropped without a log line")
        }
        logger.warning(warning())
    }

    private func dispatch(_ topic: CoatyTopic, _ event: CoatyEvent) {
        switch event {
        case .discover(let discover):
            answerDiscover(discover, topic: topic)
        case .associate(let associate):
            applyAssociate(associate)
        default:
            break
        }
        if topic.eventType.isResponse {
            deliverResponse(topic, event)
            return
        }
        let key = RoutingKey(eventType: topic.eventType, filter: topic.filter)
        let observers = state.withLock { $0.eventObservers[key] } ?? []
        for observer in observers {
            observer.deliver(topic, event)
        }
    }

    /// Resolves Discovers of the identity (by core type Identity or by its objectId) and of the IO nodes
    /// (by core type IoNode), as every Coaty agent does.
    private func answerDiscover(_ discover: DiscoverEvent, topic: CoatyTopic) {
        guard let correlationId = topic.correlationId else { return }
        var answers: [CoatyObject] = []
        if (discover.isDiscoveringTypes && discover.isCoreTypeCompatible(.identity))
            || (discover.isDiscoveringObjectId && discover.objectId == identity.objectId)
        {
            answers.append(identity.object)
        }
        if discover.isDiscoveringTypes && discover.isCoreTypeCompatible(.ioNode) {
            answers += state.withLock { $0.ioNodes.map(\.object) }
        }
        for object in answers {
            publish(.resolve(ResolveEvent(object: object)), correlationId: correlationId)
        }
    }

    private func deliverRaw(topic: String, payload: [UInt8]) {
        let matching = state.withLock { state in
            state.rawObservers.values.filter { CoatyName.topic(topic, matches: $0.filter) }.map(\.continuation)
        }
        for continuation in matching {
            continuation.yield((topic, payload))
        }
    }

    // MARK: - IO state and values

    private func applyAssociate(_ event: AssociateEvent) {
        var newZeroLoss: [String] = []
        var deliveryToMany: [(ObservationStream<(pointId: String, state: IoState)>.Continuation, String, IoState)] = []
        let (delivery, isRefused) = state.withLock {
            state -> ([(ObservationStream<IoState>.Continuation, IoState)], Bool) in
            guard state.ioNodes.contains(where: { $0.contextName == event.ioContextName }) else { return ([], false) }
            let effects = state.routing.apply(event)
            for route in effects.subscribeRoutes { addSubscription(route, in: &state) }
            for route in effects.unsubscribeRoutes { removeSubscription(route, in: &state) }
            for route in effects.actorChangedRoutes { rebuildIoRoute(route, in: &state) }
            if options.zeroLoss != nil { newZeroLoss = updateZeroLossSubscriptions(in: &state) }
            let delivery = effects.states.flatMap { pointId, ioState in
                (state.ioStateObservers[pointId]?.values).map { $0.map { ($0, ioState) } } ?? []
            }
            for (pointId, ioState) in effects.states {
                for observer in state.ioStatesObservers.values where observer.pointIds.contains(pointId) {
                    deliveryToMany.append((observer.continuation, pointId, ioState))
                }
            }
            return (delivery, effects.isRefused)
        }
        for (continuation, ioState) in delivery {
            continuation.yield(ioState)
        }
        for (continuation, pointId, ioState) in deliveryToMany {
            continuation.yield((pointId, ioState))
        }
        acknowledgeZeroLoss(newZeroLoss, isResume: true)
        if options.zeroLoss != nil, state.withLock({ $0.routing.isOwnSource(event.ioSourceId) }) {
            syncZeroLoss(sourceIds: [event.ioSourceId])
        }
        if isRefused {
            associationRefusals.refuse {
                "the association of source \(event.ioSourceId) with actor \(event.ioActorId): "
                    + "an own IO point has \(IoRoutingTable.maximumAssociations) associations"
            }
        }
    }

    /// The delivery of one route, from `routing`, `ioValueReceivers` and `routeMonitors`; rebuilt alone for each route
    /// whose monitors, own actors or their receivers changed: rebuilding all of them for a monitor of every route
    /// (`observe` of a large fleet) or for each of many own actors as it is associated made both quadratic.
    private func rebuildIoRoute(_ route: String, in state: inout State) {
        let monitors = state.routeMonitors[route].map { Array($0.values) } ?? []
        var receivers: [IoRouteReceiver]?
        if let actorIds = state.routing.actorsByRoute[route] {
            receivers = self.receivers(of: actorIds.keys, in: state)
        }
        state.ioRoutes.setDelivery(
            monitors.isEmpty && receivers == nil ? nil : IoRouteDelivery(monitors: monitors, receivers: receivers),
            on: route)
    }

    private func receivers(of actorIds: some Sequence<String>, in state: borrowing State) -> [IoRouteReceiver] {
        actorIds.flatMap { actorId in
            let isRaw = rawActorIds.contains(actorId)
            return (state.ioValueReceivers[actorId] ?? []).map {
                IoRouteReceiver(isRaw: isRaw, deliver: $0.deliver, reject: $0.reject, hasRoom: $0.hasRoom)
            }
        }
    }

    /// Hands a message on an IO route to its monitors and to the actors associated on it; false if the topic is
    /// no IO route of this agent's actors.
    private func deliverOnIoRoute(_ message: MQTTMessage) -> Bool {
        let hasZeroLoss = options.zeroLoss != nil
        let (delivery, isPlainCopy) = state.withLock { state -> (IoRouteDelivery?, Bool) in
            guard let delivery = state.ioRoutes.delivery(on: message.topic) else { return (nil, false) }
            return (delivery, hasZeroLoss && isPlainCopyOfZeroLossSource(route: message.topic, in: &state))
        }
        guard let delivery else { return false }
        for monitor in delivery.monitors {
            monitor.yield(message.payload)
        }
        guard let receivers = delivery.receivers else { return false }
        // Its frame was delivered (or will be, in order).
        if isPlainCopy { return true }
        deliver(message, to: receivers)
        return true
    }

    /// Hands a value on `message.topic` (an IO route) to the own actors associated on it.
    func deliver(
        _ message: MQTTMessage,
        to receivers: [IoRouteReceiver]
    ) {
        counters.ioValuesReceived.add(1)
        var json: JSONValue?
        var parseError: JSONParseError?
        for receiver in receivers {
            let deliver = receiver.deliver
            if receiver.isRaw {
                deliver(.raw(message.payload))
                continue
            }
            if json == nil && parseError == nil {
                do {
                    json = try JSONValue(parsing: message.payload)
                } catch {
                    parseError = error
                }
            }
            if let json {
                deliver(.json(json))
            } else if let parseError {
                // The actor's own state and count show it too, not only the agent's log.
                receiver.reject?("not JSON: \(parseError)")
            }
        }
        if let parseError {
            reject(counting: malformedCounter) {
                "dropped an IO value on \(message.topic) that is not JSON: \(parseError)"
            }
        }
    }

    /// Every payload published on an IO route, as bytes, for a monitor that takes no part in the routing (such as
    /// `coaty-edge observe`, which learns routes from Associate events of other agents' routers). Coaty's IoValue
    /// routes are protocol topics, which `observeRaw` refuses; this subscribes exactly one route (no wildcards),
    /// keeps it across reconnects, and does not affect the IO state of the agent's own points.
    public func observeIoRoute(_ route: String) throws(CoatyError) -> ObservationStream<[UInt8]> {
        guard CoatyName.isValidPublicationTopic(route) else { throw .invalidIoRoute(route) }
        let (stream, continuation) = ObservationStream.makeStream(of: [UInt8].self)
        let id = state.withLock { state in
            let id = state.makeObserverId()
            state.routeMonitors[route, default: [:]][id] = continuation
            addSubscription(route, in: &state)
            rebuildIoRoute(route, in: &state)
            return id
        }
        continuation.onTermination { [weak self] in
            guard let self else { return }
            state.withLock { state in
                guard state.routeMonitors[route]?.removeValue(forKey: id) != nil else { return }
                if state.routeMonitors[route]?.isEmpty == true { state.routeMonitors[route] = nil }
                removeSubscription(route, in: &state)
                rebuildIoRoute(route, in: &state)
            }
        }
        return stream
    }

    /// Publishes a value of an own IO source on its associated route; returns false (and drops the value) while
    /// the source is not associated.
    @discardableResult
    public func publishIoValue(_ value: IoValue, of source: IoSource) throws(CoatyError) -> Bool {
        let sourceId = source.objectId
        switch value {
        case .raw: guard source.useRawIoValues else { throw .ioValueFormatMismatch(sourceId: sourceId) }
        case .json: guard !source.useRawIoValues else { throw .ioValueFormatMismatch(sourceId: sourceId) }
        }
        return publishIoValue(value, ofSourceWithId: sourceId)
    }

    /// `publishIoValue(_:of:)` for a caller that has checked the value's format against the source's
    /// `useRawIoValues` already (the IoSourceController, per value): each of those and the `objectId` is a lookup in
    /// the source's JSON.
    package func publishIoValue(_ value: IoValue, ofSourceWithId sourceId: String) -> Bool {
        guard let route = state.withLock({ $0.routing.route(ofSource: sourceId) }) else {
            drops.record(of: sourceId, .noAssociation)
            return false
        }
        counters.ioValuesPublished.add(1)
        let payload = value.payload
        // The frame before the plain copy: an actor agent that takes frames ignores a plain copy that follows one.
        if options.zeroLoss != nil { keepForZeroLoss(payload, of: sourceId) }
        enqueue(MQTTMessage(topic: route, payload: payload), kind: .value(sourceId: sourceId))
        return true
    }

    /// The values routed to an own IO actor, JSON or raw as the actor declares.
    public func observeIoValue(of actor: IoActor) throws(CoatyError) -> ObservationStream<IoValue> {
        let (stream, continuation) = ObservationStream.makeStream(of: IoValue.self)
        let id = try addIoValueReceiver(
            of: actor, deliver: { continuation.yield($0) }, reject: nil, hasRoom: nil, finish: continuation.finish)
        continuation.onTermination { [weak self] in self?.removeIoValueReceiver(id, of: actor) }
        return stream
    }

    /// Hands the values routed to an own IO actor to `handler` while `body` runs, on the network thread as they
    /// arrive: `handler` must not block or wait. For a controller that keeps state per actor and hands values
    /// on itself (the IoActorController): an `observeIoValue` stream would add a task hop per value.
    /// `rejected`, on the same thread, learns why a payload on the actor's route was dropped. `hasRoom`, on the same
    /// thread, says whether `handler` would take a value now without dropping one (its queue is not full): with
    /// zero-loss delivery a value whose route has a receiver without room is held back, not acknowledged, and sent
    /// again by the source once there is room; other values are handed on regardless.
    package func handleIoValues<T>(
        of actor: IoActor, isolation: isolated (any Actor)? = #isolation,
        _ handler: @escaping @Sendable (IoValue) -> Void, rejected: (@Sendable (String) -> Void)? = nil,
        hasRoom: (@Sendable () -> Bool)? = nil, while body: () async -> T
    ) async throws(CoatyError) -> T {
        let id = try addIoValueReceiver(of: actor, deliver: handler, reject: rejected, hasRoom: hasRoom, finish: {})
        defer { removeIoValueReceiver(id, of: actor) }
        return await body()
    }

    private func addIoValueReceiver(
        of actor: IoActor, deliver: @escaping @Sendable (IoValue) -> Void, reject: (@Sendable (String) -> Void)?,
        hasRoom: (@Sendable () -> Bool)?, finish: @escaping @Sendable () -> Void
    ) throws(CoatyError) -> Int {
        try state.withLock { state throws(CoatyError) in
            guard state.routing.isOwnActor(actor.objectId) else { throw .unknownIoPoint(actor.objectId) }
            let id = state.makeObserverId()
            state.ioValueReceivers[actor.objectId, default: []].append(
                IoValueReceiver(id: id, deliver: deliver, reject: reject, hasRoom: hasRoom, finish: finish))
            for route in state.routing.routes(ofActor: actor.objectId) { rebuildIoRoute(route, in: &state) }
            return id
        }
    }

    private func removeIoValueReceiver(_ id: Int, of actor: IoActor) {
        state.withLock { state in
            guard let index = state.ioValueReceivers[actor.objectId]?.firstIndex(where: { $0.id == id }) else { return }
            state.ioValueReceivers[actor.objectId]?.remove(at: index)
            if state.ioValueReceivers[actor.objectId]?.isEmpty == true { state.ioValueReceivers[actor.objectId] = nil }
            for route in state.routing.routes(ofActor: actor.objectId) { rebuildIoRoute(route, in: &state) }
        }
    }

    /// The association state of an own IO source or actor: the current state, then every Associate that
    /// concerns it (not only changes, as in Coaty JS). Ends with a not-associated state when the manager stops.
    public func observeIoState(of pointId: String) throws(CoatyError) -> ObservationStream<IoState> {
        let isOwn = state.withLock { $0.routing.isOwnSource(pointId) || $0.routing.isOwnActor(pointId) }
        guard isOwn else { throw .unknownIoPoint(pointId) }
        let (stream, continuation) = ObservationStream.makeStream(of: IoState.self)
        let id = state.withLock { state in
            let id = state.makeObserverId()
            state.ioStateObservers[pointId, default: [:]][id] = continuation
            continuation.yield(state.routing.initialState(of: pointId))
            return id
        }
        continuation.onTermination { [weak self] in
            self?.state.withLock { state in
                state.ioStateObservers[pointId]?[id] = nil
                if state.ioStateObservers[pointId]?.isEmpty == true { state.ioStateObservers[pointId] = nil }
            }
        }
        return stream
    }

    /// `observeIoState(of:)` for many own IO points in one stream, each state with its point: the current state of
    /// each, then every Associate that concerns one of them, in order. For a controller with many points, which would
    /// otherwise need a stream and a task per point.
    package func observeIoStates(of pointIds: [String]) throws(CoatyError) -> ObservationStream<
        (pointId: String, state: IoState)
    > {
        let (stream, continuation) = ObservationStream.makeStream(of: (pointId: String, state: IoState).self)
        let id = try state.withLock { state throws(CoatyError) in
            for pointId in pointIds where !state.routing.isOwnSource(pointId) && !state.routing.isOwnActor(pointId) {
                throw .unknownIoPoint(pointId)
            }
            let id = state.makeObserverId()
            state.ioStatesObservers[id] = (Set(pointIds), continuation)
            for pointId in pointIds { continuation.yield((pointId, state.routing.initialState(of: pointId))) }
            return id
        }
        continuation.onTermination { [weak self] in
            _ = self?.state.withLock { $0.ioStatesObservers.removeValue(forKey: id) }
        }
        return stream
    }

    /// The association state of an own IO point now.
    public func ioState(of pointId: String) -> IoState {
        state.withLock { $0.routing.initialState(of: pointId) }
    }

    // MARK: - Raw

    /// Publishes bytes on an application topic outside the Coaty protocol.
    public func publishRaw(topic: String, payload: [UInt8], retain: Bool = false) throws(CoatyError) {
        guard CoatyName.isValidPublicationTopic(topic), !CoatyTopic.isCoatyTopic(topic) else {
            throw .invalidRawTopic(topic)
        }
        enqueue(MQTTMessage(topic: topic, payload: payload, retain: retain))
    }

    /// Messages on application topics matching an MQTT filter (wildcards allowed); never Coaty events.
    public func observeRaw(filter: String) throws(CoatyError) -> ObservationStream<(topic: String, payload: [UInt8])> {
        guard CoatyName.isValidSubscriptionFilter(filter), !CoatyTopic.isCoatyTopic(filter) else {
            throw .invalidRawTopic(filter)
        }
        let (stream, continuation) = ObservationStream.makeStream(of: (topic: String, payload: [UInt8]).self)
        let id = state.withLock { state in
            let id = state.makeObserverId()
            state.rawObservers[id] = (filter, continuation)
            addSubscription(filter, in: &state)
            return id
        }
        continuation.onTermination { [weak self] in
            guard let self else { return }
            state.withLock { state in
                guard state.rawObservers.removeValue(forKey: id) != nil else { return }
                removeSubscription(filter, in: &state)
            }
        }
        return stream
    }
}

/// The manager's counters: atomics, since they change with every message and the manager's lock guards its
/// tables.
final class StatisticsCounters: Sendable {
    let messagesReceived = Atomic(0)
    let messagesPublished = Atomic(0)
    let messagesRejected = Atomic(0)
    let messagesOversized = Atomic(0)
    let responsesRejected = Atomic(0)
    let requestsRefused = Atomic(0)
    let ioValuesPublished = Atomic(0)
    let ioValuesReceived = Atomic(0)
    let reconnects = Atomic(0)

    var snapshot: CommunicationStatistics {
        CommunicationStatistics(
            messagesReceived: messagesReceived.value, messagesPublished: messagesPublished.value,
            messagesRejected: messagesRejected.value, messagesOversized: messagesOversized.value,
            responsesRejected: responsesRejected.value, requestsRefused: requestsRefused.value,
            ioValuesPublished: ioValuesPublished.value, ioValuesReceived: ioValuesReceived.value,
            reconnects: reconnects.value)
    }
}

extension Atomic<Int> {
    /// Counters only count: no other memory depends on them.
    func add(_ amount: Int) {
        wrappingAdd(amount, ordering: .relaxed)
    }

    var value: Int { load(ordering: .relaxed) }
}
