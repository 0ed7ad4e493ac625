import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel
import CoatyRuntime

/// The figures through the agent's own stack: two communication managers that talk events and IoValues
/// (associated by an Associate published by hand), and three containers whose IO routing goes through an IoRouter.
final class Agents: Sendable {
    static let pingChannel = "coaty-edge-bench-ping"
    static let pongChannel = "coaty-edge-bench-pong"
    static let pooledPingChannel = "coaty-edge-bench-pooled-ping"
    static let pooledPongChannel = "coaty-edge-bench-pooled-pong"
    static let echoOperation = "coaty-edge.bench.echo"
    static let directContext = "coaty-edge-bench-direct"
    static let routedContext = "coaty-edge-bench-routed"
    /// The value type of coaty-edge's temperature sensors: the actor controller checks that values are numbers.
    static let valueType = EdgeValueType.temperature

    /// Agent A asks, agent B answers.
    let a: CommunicationManager
    let b: CommunicationManager
    let directSource: IoSource
    let directActor: IoActor
    let ping = ChannelEvent(
        channelId: pingChannel,
        content: .object(CoatyObject(coreType: .coatyObject, objectType: "coaty-edge.bench.Ping", name: "ping")))
    private let pongs: ObservationStream<ReceivedEvent<ChannelEvent>>
    private let pooledPongs: ObservationStream<ReceivedEvent<ChannelEvent>>

    let sourceAgent: Container
    let actorAgent: Container
    let routerAgent: Container
    let sources: IoSourceController<ContinuousClock>
    let actors: IoActorController
    let routedSource: IoSource
    let routedActor: IoActor

    private let responders: Task<Void, Never>
    let probe = DeliveryProbe()

    init(host: String, port: Int) async throws {
        let options = CommunicationOptions(host: host, port: port)
        // Strategy None: every value goes out at once, whatever the router's update rate.
        let directSource = IoSource(
            name: "Bench Direct Source", valueType: Self.valueType, updateStrategy: IoSourceBackpressureStrategy.none)
        let directActor = IoActor(name: "Bench Direct Actor", valueType: Self.valueType)
        let routedSource = IoSource(
            name: "Bench Routed Source", valueType: Self.valueType, updateStrategy: IoSourceBackpressureStrategy.none)
        let routedActor = IoActor(name: "Bench Routed Actor", valueType: Self.valueType)
        let sources = IoSourceController()
        let actors = IoActorController()
        (self.directSource, self.directActor, self.routedSource, self.routedActor) = (
            directSource, directActor, routedSource, routedActor
        )
        (self.sources, self.actors) = (sources, actors)
        let a = CommunicationManager(
            identity: Identity(name: "bench A"), options: options,
            ioNodes: [IoNodeDefinition(contextName: Self.directContext, ioSources: [directSource])])
        let b = CommunicationManager(
            identity: Identity(name: "bench B"), options: options,
            ioNodes: [IoNodeDefinition(contextName: Self.directContext, ioActors: [directActor])])
        (self.a, self.b) = (a, b)
        pongs = try a.observeChannel(Self.pongChannel)
        pooledPongs = try a.observeChannel(Self.pooledPongChannel)
        let pings = try b.observeChannel(Self.pingChannel)
        let pooledPings = try b.observeChannel(Self.pooledPingChannel)
        let calls = try b.observeCall(operation: Self.echoOperation)
        responders = Task {
            await withDiscardingTaskGroup { group in
                // B answers on its connection's thread, as the bare echoer answers in its callback.
                group.addTask(executorPreference: b.connectionExecutor) {
                    for await ping in pings {
                        try? await b.publishChannel(
                            ChannelEvent(channelId: Self.pongChannel, content: ping.event.content))
                    }
                }
                // And from a task on the global pool, woken for each ping, as the bare handoff echoer's thread.
                group.addTask(executorPreference: globalConcurrentExecutor) {
                    for await ping in pooledPings {
                        try? await b.publishChannel(
                            ChannelEvent(channelId: Self.pooledPongChannel, content: ping.event.content))
                    }
                }
                group.addTask(executorPreference: b.connectionExecutor) {
                    for await call in calls {
                        try? await call.respond(ReturnEvent(.result(call.event.parameters ?? .null)))
                    }
                }
            }
        }

        func configuration(_ name: String, _ nodes: [IoNodeDefinition]) -> Configuration {
            Configuration(identity: Identity(name: name), ioNodes: nodes, communication: options)
        }
        sourceAgent = try await Container.resolve(
            configuration: configuration(
                "bench source", [IoNodeDefinition(contextName: Self.routedContext, ioSources: [routedSource])]),
            controllers: [("Sources", sources)])
        actorAgent = try await Container.resolve(
            configuration: configuration(
                "bench actor", [IoNodeDefinition(contextName: Self.routedContext, ioActors: [routedActor])]),
            controllers: [("Actors", actors)])
        routerAgent = try await Container.resolve(
            configuration: configuration("bench router", []),
            controllers: [
                ("Router", IoRouter(context: IoContext(name: Self.routedContext), rules: IoAssociationRules.all))
            ])
    }

    /// Starts every agent and returns once events and values flow on every path.
    func start() async throws {
        a.start()
        b.start()
        for container in [sourceAgent, actorAgent, routerAgent] { container.start() }
        try await settle(a)
        try await settle(b)

        let route = CoatyTopic.ioValueRoute(namespace: a.options.namespace, sourceId: directSource.objectId)
        try await a.publishAssociate(
            AssociateEvent(
                ioContextName: Self.directContext, ioSourceId: directSource.objectId, ioActorId: directActor.objectId,
                associatingRoute: route, updateRate: nil))
        try await waitUntil("the direct association") {
            a.ioState(of: directSource.objectId).hasAssociations && b.ioState(of: directActor.objectId).hasAssociations
        }
        try await waitUntil("the routed association", within: .seconds(20)) {
            sources.isAssociated(routedSource) && actors.isAssociated(routedActor)
        }
        // The actors' route subscriptions reach the broker a little after the association.
        try await prime(
            "the direct route", publish: { try self.publishDirect(0) }, values: try b.observeIoValue(of: directActor))
        try await prime(
            "the routed route", publish: { try self.publishRouted(0) }, values: actors.values(of: routedActor))
    }

    func stop() async {
        responders.cancel()
        for container in [routerAgent, sourceAgent, actorAgent] { await container.shutdown() }
        await a.stop()
        await b.stop()
    }

    func publishDirect(_ value: Double) throws(BenchmarkError) {
        let isPublished: Bool
        do {
            isPublished = try a.publishIoValue(.json(.number(value)), of: directSource)
        } catch {
            throw .agent("publishIoValue: \(error)")
        }
        guard isPublished else { throw .agent("the direct source is not associated") }
    }

    func publishRouted(_ value: Double) throws(BenchmarkError) {
        let isPublished: Bool
        do {
            isPublished = try sources.publish(.number(value), from: routedSource)
        } catch {
            throw .agent("IoSourceController.publish: \(error)")
        }
        guard isPublished else { throw .agent("the routed source is not associated") }
    }

    // MARK: - Round trips

    /// A Channel event from A, answered by B with a Channel event that A observes: the headline round trip, as it
    /// puts the same packets on the wire as the bare pair (one publication each way on subscriptions made
    /// beforehand), so that what it adds is the agent's own work. A's loop and B's responder run on their
    /// connections' threads (`connectionExecutor`), where the bare pair's pinger and echoer handle messages too.
    func channelRoundTrips(_ count: Int) async throws -> [UInt64] {
        try await withDeadline("Channel round trips") { [self] in
            try await withTaskExecutorPreference(a.connectionExecutor) {
                try await channelRoundTrips(count, ping: ping, answers: pongs)
            }
        }
    }

    /// The same with A's loop and B's responder as tasks on the global pool: each event wakes a pool thread.
    func pooledChannelRoundTrips(_ count: Int) async throws -> [UInt64] {
        let ping = ChannelEvent(channelId: Self.pooledPingChannel, content: ping.content)
        return try await withDeadline("Channel round trips on the pool") { [self] in
            try await withTaskExecutorPreference(globalConcurrentExecutor) {
                try await channelRoundTrips(count, ping: ping, answers: pooledPongs)
            }
        }
    }

    private func channelRoundTrips(
        _ count: Int, ping: ChannelEvent, answers: ObservationStream<ReceivedEvent<ChannelEvent>>
    ) async throws -> [UInt64] {
        var answers = answers.makeAsyncIterator()
        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let start = monotonicNanoseconds()
            try await a.publishChannel(ping)
            guard await answers.next() != nil else { throw BenchmarkError.timeout("a Channel answer") }
            samples.append(monotonicNanoseconds() - start)
        }
        return samples
    }

    /// A Call from A, answered by B with a Return: Coaty's remote operation call. Each call has a response topic of
    /// its own, subscribed ahead (see `ResponseSubscriptions`). The round trip ends when the Return reaches A's
    /// loop, as the Channel's ends with its answer; ending the response stream comes after it.
    func callRoundTrips(_ count: Int) async throws -> [UInt64] {
        let call = CallEvent(operation: Self.echoOperation, parameters: ["value": 21.5])
        return try await withDeadline("Call/Return round trips") { [self] in
            try await withTaskExecutorPreference(a.connectionExecutor) { try await callRoundTrips(count, call) }
        }
    }

    private func callRoundTrips(_ count: Int, _ call: CallEvent) async throws -> [UInt64] {
        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let start = monotonicNanoseconds()
            var answered: UInt64?
            for await _ in try a.publishCall(call) {
                answered = monotonicNanoseconds()
                break
            }
            guard let answered else { throw BenchmarkError.timeout("a Return") }
            samples.append(answered - start)
        }
        return samples
    }

    // MARK: - One-way values

    /// From `publishIoValue` on A to B's `observeIoValue`.
    func directValues(_ count: Int) async throws -> [UInt64] {
        try await oneWay(count, "direct IoValues", values: try b.observeIoValue(of: directActor)) {
            try self.publishDirect($0)
        }
    }

    /// From `IoSourceController.publish` on the source agent to the actor agent's `IoActorController.values(of:)`.
    func routedValues(_ count: Int) async throws -> [UInt64] {
        try await oneWay(count, "routed IoValues", values: actors.values(of: routedActor)) {
            try self.publishRouted($0)
        }
    }

    /// Publishes the numbers 1, 2, ... one at a time and waits for each at the receiver (skipping a replayed one).
    private func oneWay(
        _ count: Int, _ what: String, values: ObservationStream<IoValue>,
        publish: @escaping @Sendable (Double) throws -> Void
    ) async throws -> [UInt64] {
        try await withDeadline(what) {
            var arrivals = values.makeAsyncIterator()
            var samples: [UInt64] = []
            samples.reserveCapacity(count)
            for index in 1...count {
                let expected = IoValue.json(.number(Double(index)))
                let start = monotonicNanoseconds()
                try publish(Double(index))
                while true {
                    guard let value = await arrivals.next() else { throw BenchmarkError.timeout("a value") }
                    if value == expected { break }
                }
                samples.append(monotonicNanoseconds() - start)
            }
            return samples
        }
    }

    // MARK: - Throughput

    func floodDirect(_ count: Int, window: Int) async throws -> ThroughputRound {
        try await flood(count, window: window, values: try b.observeIoValue(of: directActor), on: b.connectionExecutor)
        {
            () throws(BenchmarkError) in try self.publishDirect(21.5)
        }
    }

    func floodRouted(_ count: Int, window: Int) async throws -> ThroughputRound {
        try await flood(
            count, window: window, values: actors.values(of: routedActor),
            on: actorAgent.communicationManager.connectionExecutor
        ) {
            () throws(BenchmarkError) in try self.publishRouted(21.5)
        }
    }

    /// Counts what arrives on `values` while the flood runs; the stream ends (and stops costing) afterwards.
    private func flood(
        _ count: Int, window: Int, values: ObservationStream<IoValue>, on executor: any TaskExecutor,
        publish: @escaping @Sendable () throws(BenchmarkError) -> Void
    ) async throws -> ThroughputRound {
        let probe = probe
        // The replayed latest value (actor controller) arrives before the flood starts and is not counted.
        // The receiver counts on the connection's thread, as the bare receiver counts in its callback.
        let receiver = Task(executorPreference: executor) {
            for await _ in values { probe.delivered() }
        }
        defer { receiver.cancel() }
        try await Task.sleep(for: .milliseconds(20))
        return try await onOwnThread { () throws(BenchmarkError) in
            try probe.flood(count: count, window: window) { _ throws(BenchmarkError) in try publish() }
        }
    }

    /// Publishes every 20 ms until a value arrives: the route is in place at the broker.
    private func prime(
        _ what: String, publish: @escaping @Sendable () throws -> Void, values: ObservationStream<IoValue>
    ) async throws {
        try await withDeadline("\(what) to carry values", .seconds(10)) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in values { return }
                }
                group.addTask {
                    while true {
                        try publish()
                        try await Task.sleep(for: .milliseconds(20))
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }
}

/// Returns once the broker has applied the subscriptions the manager made so far: the broker handles a
/// connection's packets in order, so the echo of a publication made now comes after them.
func settle(_ manager: CommunicationManager) async throws {
    let channel = "coaty-edge-bench-settle-" + CoatyUUID.random()
    let echoes = try manager.observeChannel(channel)
    try await waitUntil("\(manager.identity.name) to be online") { manager.communicationState == .online }
    try await withDeadline("the echo of a settle publication", .seconds(10)) {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in echoes { return }
            }
            group.addTask {
                while true {
                    try await manager.publishChannel(ChannelEvent(channelId: channel, content: .objects([])))
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }
}
