import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatyRuntime
import CoatySharedObjects
import Logging
import Synchronization

/// One association a router made.
public struct IoAssociation: Sendable, Hashable {
    public var sourceId: String
    public var sourceName: String
    public var actorId: String
    public var actorName: String
    /// The value type of the source and the actor.
    public var valueType: String
    /// The agents whose nodes hold the source and the actor (the nodes' `parentObjectId`), if the nodes name them.
    public var sourceAgentId: String?
    public var actorAgentId: String?
    public var route: String
    /// Milliseconds, the most any matched pair of the source asks for; nil when none asks.
    public var updateRate: Double?
    /// The rule that matched the pair.
    public var rule: String
}

/// Routes the IO sources and actors of one IO context: it manages the IO nodes agents advertise for the context,
/// associates the pairs its rules accept, and re-evaluates when nodes come and go, when the context changes
/// through an Update, and when its rules change. It also owns the shared IoContext: any agent can read it with
/// Discover and change it with Update; each accepted change raises the context's `contextVersion`. As a Coaty JS
/// router does, it accepts every Update (the last writer wins) unless the Update asks for the optimistic check by
/// carrying `expectedContextVersion`: then it is refused unless the context is still at that version.
public final class IoRouter: Controller {
    /// The context member that counts accepted changes.
    public static let versionProperty = "contextVersion"
    /// The Update member by which a requester asks for the change only if the context is still at that version; the
    /// router never keeps it in the context.
    public static let expectedVersionProperty = "expectedContextVersion"
    /// The operation a running router answers with its context and associations (for `coaty-edge rules show`).
    public static let associationsOperation = "coaty-edge.router.associations"

    enum Trigger: Sendable {
        case managed(IoNode)
        case deadvertised([String])
        case update(UpdateRequest)
        case rules(any IoRoutingRules)
        /// The data of a shared object the rules read; nil once it was deleted.
        case sharedData(name: String, data: JSONObject?)
        /// Back online: the nodes managed until now are alive only if managed again (resolved or advertised)
        /// before the census ends; an agent that reconnects after the router misses its Discover but advertises, and
        /// one that misses the Discover or answers late is asked again (`CensusRounds`).
        case censusStarted
        case censusEnded
        /// `onStopping` waits in `Shared.stopWaiters`.
        case stop
    }

    fileprivate struct Shared {
        /// The nodes, rules, context and associations; the evaluation loop changes it in bounded slices, so that
        /// readers (`rules show`, Discover, the getters) wait at most one slice.
        var evaluation: IoRouterEvaluation
        /// New nodes (or versions of nodes) refused for the `nodeLimit`.
        var refusedNodeCount = 0
        /// During a census: the nodes managed when it started, and those managed again since.
        var census: (before: Set<String>, alive: Set<String>)?
        var triggers: ObservationStream<Trigger>.Continuation?
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    fileprivate let shared: Mutex<Shared>
    private let censusTimeout: Duration
    private let nodeLimit: RetentionLimit

    /// The default `nodeLimit`: 4096 IO nodes of 16 MiB in all, room for a fleet of 1,000 agents with 10,000 IO
    /// points in one context (about 3 MiB of nodes), four times over.
    public static let defaultNodeLimit = RetentionLimit(maximumCount: 4096, maximumBytes: 16 * 1024 * 1024)

    /// How long the evaluation works before it looks at new events again.
    static let evaluationSlice = Duration.milliseconds(10)

    /// - Parameters:
    ///   - context: the IO context to route; its `name` is the context name of the nodes.
    ///   - rules: which pairs to associate (`IoAssociationRules.all` routes every compatible pair).
    ///   - censusTimeout: after a reconnect, nodes that neither answer a Discover nor are advertised again within
    ///     this time are asked again (see `CensusRounds`: 3 + 6 + 12 s by default) and then dropped, since their
    ///     agents' wills may have gone out while the router was offline.
    ///   - nodeLimit: how many IO nodes (and bytes of them, as JSON) the router manages; a new node past it is
    ///     refused, counted in `coaty_edge_retention_refused_total{store="IO router <context>"}` and logged.
    public init(
        context: IoContext, rules: any IoRoutingRules = IoAssociationRules.all, censusTimeout: Duration = .seconds(3),
        nodeLimit: RetentionLimit = IoRouter.defaultNodeLimit
    ) {
        shared = Mutex(Shared(evaluation: IoRouterEvaluation(context: context, rules: rules, namespace: "")))
        self.censusTimeout = censusTimeout
        self.nodeLimit = nodeLimit
    }

    public var context: IoContext { shared.withLock { $0.evaluation.context } }
    public var associations: [IoAssociation] { shared.withLock { $0.evaluation.associations } }
    public var managedNodeIds: [String] { shared.withLock { $0.evaluation.managedNodeIds } }
    /// How many node advertisements the router refused because of its `nodeLimit`.
    public var refusedNodeCount: Int { shared.withLock { $0.refusedNodeCount } }

    /// Replaces the rules and re-evaluates; associations that do not change cause no traffic.
    public func setRules(_ rules: any IoRoutingRules) {
        let triggers = shared.withLock { shared in
            shared.evaluation.setRules(rules)
            return shared.triggers
        }
        triggers?.yield(.rules(rules))
    }

    public func whileStarted(_ context: ControllerContext) async {
        let manager = context.communicationManager
        let (triggers, input) = ObservationStream.makeStream(of: Trigger.self)
        let contextName = shared.withLock { shared in
            var ioContext = shared.evaluation.context
            ioContext.parentObjectId = manager.identity.objectId
            shared.evaluation = IoRouterEvaluation(
                context: ioContext, rules: shared.evaluation.rules, sharedData: shared.evaluation.sharedData,
                namespace: manager.options.namespace, maximumMatches: shared.evaluation.maximumMatches)
            shared.triggers = input
            return ioContext.name
        }
        let logger = context.logger

        await withDiscardingTaskGroup { group in
            let nodeAdvertises = manager.observeAdvertise(coreType: .ioNode)
            let deadvertises = manager.observeDeadvertise()
            let updates = manager.observeUpdate(coreType: .ioContext)
            let discovers = manager.observeDiscover()
            let associationCalls = try? manager.observeCall(operation: IoRouter.associationsOperation)
            group.addTask {
                for await advertise in nodeAdvertises {
                    guard let node = try? IoNode(advertise.event.object), node.contextName == contextName else {
                        continue
                    }
                    input.yield(.managed(node))
                }
            }
            group.addTask {
                for await deadvertise in deadvertises { input.yield(.deadvertised(deadvertise.event.objectIds)) }
            }
            group.addTask {
                for await update in updates { input.yield(.update(update)) }
            }
            // Discovers and `rules show` are answered from what the router has decided so far, whatever it is busy with.
            group.addTask {
                for await discover in discovers { await self.answer(discover) }
            }
            if let associationCalls {
                group.addTask {
                    for await call in associationCalls {
                        await self.answer(call, router: manager.identity.name, routerId: manager.identity.objectId)
                    }
                }
            }
            group.addTask {
                // A reconnect during a census starts it afresh: the nodes are asked on the new connection at once.
                var census: Task<Void, Never>?
                for await state in manager.communicationStates() where state == .online {
                    census?.cancel()
                    await census?.value
                    census = Task { await self.takeCensus(of: contextName, manager: manager, into: input) }
                }
                census?.cancel()
            }
            var evaluation = Evaluation(
                manager: manager, logger: logger, router: self,
                refusals: RetentionRefusals(store: "IO router \(contextName)", logger: logger))
            var followed: Set<String> = []
            func follow(_ names: Set<String>) {
                for name in names.subtracting(followed).sorted() {
                    group.addTask { await Self.follow(sharedObject: name, of: context.sharedObjects, into: input) }
                }
                followed.formUnion(names)
            }
            follow(shared.withLock { $0.evaluation.rules.sharedObjectNames })
            await evaluation.advertiseContext()
            await evaluation.run(triggers) { rules in follow(rules.sharedObjectNames) }
        }
        let waiters = shared.withLock { shared in
            shared.triggers = nil
            defer { shared.stopWaiters = [] }
            return shared.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// After a reconnect: Discovers the context's nodes, again while nodes managed before have not been heard of (see
    /// `CensusRounds`); the answers to all Discovers are taken until the next census or the stop, so that a node
    /// answering later than the census is managed all the same. A census cancelled for a newer one ends without
    /// dropping anything.
    private func takeCensus(
        of contextName: String, manager: CommunicationManager, into input: ObservationStream<Trigger>.Continuation
    ) async {
        input.yield(.censusStarted)
        let isComplete: @Sendable () -> Bool = { [self] in
            // Until the evaluation has taken the census's start, every node counts as not heard of; one that was
            // deadvertised meanwhile is not waited for.
            self.shared.withLock { shared in
                shared.census.map { census in
                    census.before.subtracting(census.alive).allSatisfy { !shared.evaluation.isManaged($0) }
                } ?? false
            }
        }
        let ended: () -> Void = { input.yield(.censusEnded) }
        await CensusRounds.run(firstWait: censusTimeout, isComplete: isComplete, ended: ended) {
            for await resolve in manager.publishDiscover(.coreTypes([.ioNode])) {
                guard let object = resolve.event.object, let node = try? IoNode(object), node.contextName == contextName
                else { continue }
                input.yield(.managed(node))
            }
        }
    }

    /// Hands the data of a shared object the rules read to the evaluation, now and after every change (the last data
    /// stays while its host is away, so that a host restart does not churn the routing). Followed until the router
    /// stops, even if later rules no longer read it.
    private static func follow(
        sharedObject name: String, of sharedObjects: SharedObjects,
        into triggers: ObservationStream<Trigger>.Continuation
    ) async {
        for await data in sharedObjects.data(of: name) {
            triggers.yield(.sharedData(name: name, data: data.isEmpty ? nil : data))
        }
    }

    /// Disassociates every pair while the agent can still publish, as Coaty's routers do on stop.
    public func onStopping(_ context: ControllerContext) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let triggers = shared.withLock { shared in
                if shared.triggers != nil { shared.stopWaiters.append(continuation) }
                return shared.triggers
            }
            guard let triggers else {
                continuation.resume()
                return
            }
            triggers.yield(.stop)
        }
    }

    private func answer(_ request: DiscoverRequest) async {
        let context = self.context
        let discover = request.event
        let matches =
            (discover.isDiscoveringTypes && discover.isCoreTypeCompatible(.ioContext))
            || (discover.isDiscoveringTypes && discover.isObjectTypeCompatible(context.object.objectType))
            || (discover.isDiscoveringObjectId && discover.objectId == context.objectId)
        guard matches else { return }
        try? await request.respond(ResolveEvent(object: context.object))
    }

    /// `coaty-edge rules show`: the context and the associations the router made, those the Call asks for, in pages
    /// that stay below `IoAssociationReport.maximumAnswerBytes` (see `IoAssociationQuery`). Only the copy of the
    /// associations is taken under the lock: the filters and the page are made outside it, while the evaluation goes on.
    private func answer(_ request: CallRequest, router: String, routerId: String) async {
        let query: IoAssociationQuery
        do {
            query = try IoAssociationQuery(parameters: request.event.parameters)
        } catch {
            try? await request.respond(
                ReturnEvent(ReturnEvent.invalidParameters, executionInfo: .object(["reason": .string("\(error)")])))
            return
        }
        let (context, current) = shared.withLock { ($0.evaluation.context, $0.evaluation.associationsOfRevision()) }
        let (associations, revision) = current
        guard query.isAddressed(to: routerId, context: context.name) else { return }
        let answer = IoAssociationReport.answer(
            query, associations: associations, context: context.jsonValue, router: router, revision: revision)
        try? await request.respond(ReturnEvent(.result(.object(answer))))
    }

    /// The router's event loop during one run of the manager: it takes every event that is waiting before it
    /// evaluates (a burst of advertisements is one evaluation), evaluates in slices with a look at new events after
    /// each, and publishes the Associates once nothing is left to evaluate.
    private struct Evaluation {
        let manager: CommunicationManager
        let logger: Logger
        let router: IoRouter
        let refusals: RetentionRefusals
        /// The bytes of each managed node as JSON, and their sum, for the router's `nodeLimit`.
        var nodeSizes: [String: Int] = [:]
        var nodeBytes = 0
        /// Accepted context Updates, completed once the Associates of their change are out.
        var pendingCompletions: [(request: UpdateRequest, context: IoContext)] = []
        /// Matched pairs refused for the evaluation's `maximumMatches` that were counted and logged.
        var pairsRefused = 0

        init(manager: CommunicationManager, logger: Logger, router: IoRouter, refusals: RetentionRefusals) {
            self.manager = manager
            self.logger = logger
            self.router = router
            self.refusals = refusals
        }

        mutating func run(_ triggers: ObservationStream<Trigger>, onRules: (any IoRoutingRules) -> Void) async {
            var iterator = triggers.makeAsyncIterator()
            while true {
                let (isWorking, isSettled) = router.shared.withLock { shared in
                    (
                        shared.evaluation.hasPendingWork,
                        !shared.evaluation.hasUnresolvedChanges && pendingCompletions.isEmpty
                    )
                }
                if !isWorking && isSettled {
                    guard let trigger = await iterator.next() else { return }
                    if case .rules(let rules) = trigger { onRules(rules) }
                    guard await handle(trigger) else { return }
                    continue
                }
                if let trigger = iterator.nextIfBuffered() {
                    if case .rules(let rules) = trigger { onRules(rules) }
                    guard await handle(trigger) else { return }
                    continue
                }
                if isWorking {
                    let deadline = ContinuousClock.now + IoRouter.evaluationSlice
                    while router.shared.withLock({ $0.evaluation.evaluate(budget: 32) })
                        && ContinuousClock.now < deadline
                    {}
                    await Task.yield()
                    continue
                }
                await publishChanges()
            }
        }

        /// Handles one event; false after the stop.
        mutating func handle(_ trigger: Trigger) async -> Bool {
            switch trigger {
            case .managed(let node):
                router.shared.withLock { _ = $0.census?.alive.insert(node.objectId) }
                let (sources, actors) = (node.ioSources, node.ioActors)
                if sources.isEmpty && actors.isEmpty {
                    unmanage([node.objectId])
                } else {
                    manage(node, sources: sources, actors: actors)
                }
            case .deadvertised(let objectIds):
                unmanage(objectIds)
            case .censusStarted:
                router.shared.withLock { $0.census = (Set($0.evaluation.managedNodeIds), []) }
            case .censusEnded:
                guard
                    let (before, alive) = router.shared.withLock({ shared in
                        defer { shared.census = nil }
                        return shared.census
                    })
                else { return true }
                unmanage(Array(before.subtracting(alive)))
            case .update(let request):
                await handleUpdate(request)
            case .rules:
                break
            case .sharedData(let name, let data):
                router.shared.withLock { shared in
                    var sharedData = shared.evaluation.sharedData
                    guard sharedData[name] != data.map(JSONValue.object) else { return }
                    sharedData[name] = data.map(JSONValue.object)
                    shared.evaluation.setSharedData(sharedData)
                }
            case .stop:
                for (request, context) in pendingCompletions {
                    try? await request.respond(CompleteEvent(object: context.object))
                }
                pendingCompletions = []
                await publish(router.shared.withLock { $0.evaluation.disassociateAll() })
                let waiters = router.shared.withLock { shared in
                    defer { shared.stopWaiters = [] }
                    return shared.stopWaiters
                }
                for waiter in waiters { waiter.resume() }
                return false
            }
            return true
        }

        /// Manages a new node or the new version of a managed one, unless that is past the router's `nodeLimit`.
        private mutating func manage(_ node: IoNode, sources: [IoSource], actors: [IoActor]) {
            let size = node.object.jsonValue.serializedBytes().count
            let previous = nodeSizes[node.objectId]
            let count = nodeSizes.count
            guard
                nodeLimit.admits(count: count, bytes: nodeBytes, isNew: previous == nil, growth: size - (previous ?? 0))
            else {
                router.shared.withLock { $0.refusedNodeCount += 1 }
                refusals.refuse {
                    "IO node \(node.name) (\(node.objectId), \(size) bytes): \(count) nodes with \(nodeBytes) bytes are managed"
                }
                return
            }
            nodeSizes[node.objectId] = size
            nodeBytes += size - (previous ?? 0)
            router.shared.withLock { $0.evaluation.manage(node, sources: sources, actors: actors) }
        }

        private var nodeLimit: RetentionLimit { router.nodeLimit }

        private mutating func unmanage(_ objectIds: [String]) {
            for objectId in objectIds {
                nodeBytes -= nodeSizes.removeValue(forKey: objectId) ?? 0
            }
            router.shared.withLock { _ = $0.evaluation.unmanage(objectIds) }
        }

        func advertiseContext() async {
            let context = router.context
            do {
                try await manager.publishAdvertise(AdvertiseEvent(object: context.object))
            } catch {
                logger.error("cannot advertise IO context \(context.name): \(error)")
            }
        }

        private mutating func handleUpdate(_ request: UpdateRequest) async {
            let current = router.context
            guard request.event.object.objectId == current.objectId else { return }
            let currentVersion = current[IoRouter.versionProperty]?.intValue ?? 0
            if let expected = request.event.object[IoRouter.expectedVersionProperty],
                expected.intValue != currentVersion
            {
                let given = expected.intValue.map(String.init) ?? expected.serialized()
                logger.info(
                    "refused a stale update of IO context \(current.name): expected version \(given), current \(currentVersion)"
                )
                try? await request.respond(
                    CompleteEvent(
                        object: current.object,
                        privateData: [
                            "refused": .string("stale version \(given); the current version is \(currentVersion)")
                        ]))
                return
            }
            guard var updated = try? IoContext(request.event.object) else { return }
            updated[IoRouter.expectedVersionProperty] = nil
            updated.parentObjectId = manager.identity.objectId
            updated[IoRouter.versionProperty] = .number(Double(currentVersion + 1))
            router.shared.withLock { [updated] in $0.evaluation.setContext(updated) }
            logger.info("IO context \(updated.name) changed to version \(currentVersion + 1) by \(request.sourceId)")
            await advertiseContext()
            pendingCompletions.append((request, updated))
        }

        /// Coaty's Act step once the evaluation is done: the Associates of what changed, then the Completes of the
        /// context Updates that caused them.
        private mutating func publishChanges() async {
            // New rules (set from another task) may have marked pairs since the loop looked: then those come first.
            guard
                let (changes, problems, statistics, maximum) = router.shared.withLock({ shared in
                    shared.evaluation.hasPendingWork
                        ? nil
                        : (
                            shared.evaluation.resolve(), shared.evaluation.takeProblems(), shared.evaluation.statistics,
                            shared.evaluation.maximumMatches
                        )
                })
            else { return }
            for _ in pairsRefused..<max(pairsRefused, statistics.pairsRefused) {
                refusals.refuse { "a matched pair: \(maximum) pairs are matched" }
            }
            pairsRefused = max(pairsRefused, statistics.pairsRefused)
            for problem in problems.problems {
                logger.warning("routing rule failed, counted as false: \(problem)")
            }
            if problems.leftOut > 0 {
                logger.warning("routing rules failed for \(problems.leftOut) more reasons, counted as false")
            }
            await publish(changes)
            for (request, context) in pendingCompletions {
                try? await request.respond(CompleteEvent(object: context.object))
            }
            pendingCompletions = []
        }

        /// More Associates at once than this are logged in one line (and each at debug level).
        static let changesLoggedOneByOne = 50

        /// Publishes the Associates in order, with a line each, or one line for a fleet's worth.
        private func publish(_ changes: [IoRouterEvaluation.Change]) async {
            let isLoggedOneByOne = changes.count <= Self.changesLoggedOneByOne
            if !isLoggedOneByOne {
                let associated = changes.count { $0.route != nil }
                logger.info(
                    "associated \(associated) pairs and disassociated \(changes.count - associated) (each at debug level)"
                )
            }
            for change in changes {
                await publish(change, logged: isLoggedOneByOne)
            }
        }

        private func publish(_ change: IoRouterEvaluation.Change, logged: Bool) async {
            let association = change.association
            let event = AssociateEvent(
                ioContextName: router.context.name, ioSourceId: association.sourceId, ioActorId: association.actorId,
                associatingRoute: change.route, updateRate: change.route == nil ? nil : association.updateRate)
            do {
                try await manager.publishAssociate(event)
                let level: Logger.Level = logged ? .info : .debug
                if change.route == nil {
                    logger.log(level: level, "disassociated \(association.sourceName) from \(association.actorName)")
                } else {
                    logger.log(
                        level: level,
                        "associated \(association.sourceName) with \(association.actorName) by rule \(association.rule)"
                    )
                }
            } catch {
                logger.error("cannot publish Associate: \(error)")
            }
        }
    }
}
