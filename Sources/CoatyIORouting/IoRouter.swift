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
        case discover(DiscoverRequest)
        case associationsCall(CallRequest)
        case rules(any IoRoutingRules)
        /// The data of a shared object the rules read; nil once it was deleted.
        case sharedData(name: String, data: JSONObject?)
        /// Back online: the nodes managed until now are alive only if managed again (resolved or advertised)
        /// before the census ends; an agent that reconnects after the router misses its Discover but advertises.
        case censusStarted
        case censusEnded
        case stop(CheckedContinuation<Void, Never>)
    }

    fileprivate struct Shared {
        var context: IoContext
        var rules: any IoRoutingRules
        /// The data of the shared objects the rules read, by name.
        var sharedData: JSONObject = [:]
        var associations: [IoAssociation] = []
        var managedNodeIds: [String] = []
        /// New nodes (or versions of nodes) refused for the `nodeLimit`.
        var refusedNodeCount = 0
        var triggers: AsyncStream<Trigger>.Continuation?
    }

    fileprivate let shared: Mutex<Shared>
    private let censusTimeout: Duration
    private let nodeLimit: RetentionLimit

    /// The default `nodeLimit`: 256 IO nodes of 16 MiB in all.
    public static let defaultNodeLimit = RetentionLimit(maximumCount: 256, maximumBytes: 16 * 1024 * 1024)

    /// - Parameters:
    ///   - context: the IO context to route; its `name` is the context name of the nodes.
    ///   - rules: which pairs to associate (`IoAssociationRules.all` routes every compatible pair).
    ///   - censusTimeout: after a reconnect, nodes that neither answer a Discover nor are advertised again within
    ///     this time are dropped, since their agents' wills may have gone out while the router was offline.
    ///   - nodeLimit: how many IO nodes (and bytes of them, as JSON) the router manages; a new node past it is
    ///     refused, counted in `coaty_edge_retention_refused_total{store="IO router <context>"}` and logged.
    public init(
        context: IoContext, rules: any IoRoutingRules = IoAssociationRules.all, censusTimeout: Duration = .seconds(3),
        nodeLimit: RetentionLimit = IoRouter.defaultNodeLimit
    ) {
        shared = Mutex(Shared(context: context, rules: rules))
        self.censusTimeout = censusTimeout
        self.nodeLimit = nodeLimit
    }

    public var context: IoContext { shared.withLock { $0.context } }
    public var associations: [IoAssociation] { shared.withLock { $0.associations } }
    public var managedNodeIds: [String] { shared.withLock { $0.managedNodeIds } }
    /// How many node advertisements the router refused because of its `nodeLimit`.
    public var refusedNodeCount: Int { shared.withLock { $0.refusedNodeCount } }

    /// Replaces the rules and re-evaluates; associations that do not change cause no traffic.
    public func setRules(_ rules: any IoRoutingRules) {
        let triggers = shared.withLock { shared in
            shared.rules = rules
            return shared.triggers
        }
        triggers?.yield(.rules(rules))
    }

    public func whileStarted(_ context: ControllerContext) async {
        let manager = context.communicationManager
        let (triggers, input) = AsyncStream.makeStream(of: Trigger.self)
        shared.withLock { shared in
            shared.context.parentObjectId = manager.identity.objectId
            shared.triggers = input
        }
        let contextName = self.context.name
        let logger = context.logger

        await withDiscardingTaskGroup { group in
            let nodeAdvertises = manager.observeAdvertise(coreType: .ioNode)
            let deadvertises = manager.observeDeadvertise()
            let updates = manager.observeUpdate(coreType: .ioContext)
            let discovers = manager.observeDiscover()
            let associationCalls = try? manager.observeCall(operation: IoRouter.associationsOperation)
            group.addTask {
                for await advertise in nodeAdvertises {
                    guard let node = try? IoNode(advertise.event.object), node.contextName == contextName else { continue }
                    input.yield(.managed(node))
                }
            }
            group.addTask {
                for await deadvertise in deadvertises { input.yield(.deadvertised(deadvertise.event.objectIds)) }
            }
            group.addTask {
                for await update in updates { input.yield(.update(update)) }
            }
            group.addTask {
                for await discover in discovers { input.yield(.discover(discover)) }
            }
            if let associationCalls {
                group.addTask {
                    for await call in associationCalls { input.yield(.associationsCall(call)) }
                }
            }
            group.addTask {
                for await state in manager.communicationStates() where state == .online {
                    input.yield(.censusStarted)
                    for await resolve in manager.publishDiscover(.coreTypes([.ioNode]), timeout: self.censusTimeout) {
                        guard let object = resolve.event.object, let node = try? IoNode(object), node.contextName == contextName
                        else { continue }
                        input.yield(.managed(node))
                    }
                    input.yield(.censusEnded)
                }
            }
            var evaluation = Evaluation(
                manager: manager, logger: logger, contextName: contextName, router: self,
                refusals: RetentionRefusals(store: "IO router \(contextName)", logger: logger))
            var followed: Set<String> = []
            func follow(_ names: Set<String>) {
                for name in names.subtracting(followed).sorted() {
                    group.addTask { await Self.follow(sharedObject: name, of: context.sharedObjects, into: input) }
                }
                followed.formUnion(names)
            }
            follow(rules.sharedObjectNames)
            await evaluation.advertiseContext()
            await evaluation.evaluate()
            for await trigger in triggers {
                if case .rules(let rules) = trigger { follow(rules.sharedObjectNames) }
                await evaluation.handle(trigger)
            }
        }
        shared.withLock { $0.triggers = nil }
    }

    /// Hands the data of a shared object the rules read to the evaluation, now and after every change (the last data
    /// stays while its host is away, so that a host restart does not churn the routing). Followed until the router
    /// stops, even if later rules no longer read it.
    private static func follow(
        sharedObject name: String, of sharedObjects: SharedObjects, into triggers: AsyncStream<Trigger>.Continuation
    ) async {
        for await data in sharedObjects.data(of: name) {
            triggers.yield(.sharedData(name: name, data: data.isEmpty ? nil : data))
        }
    }

    /// Disassociates every pair while the agent can still publish, as Coaty's routers do on stop.
    public func onStopping(_ context: ControllerContext) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let triggers = shared.withLock { $0.triggers }
            guard let triggers, case .enqueued = triggers.yield(.stop(continuation)) else {
                continuation.resume()
                return
            }
        }
    }

    fileprivate func update(_ change: (inout Shared) -> Void) {
        shared.withLock { change(&$0) }
    }

    fileprivate var rules: any IoRoutingRules { shared.withLock { $0.rules } }

    /// The router's state during one run of the manager, touched only by the evaluation loop.
    private struct Evaluation {
        let manager: CommunicationManager
        let logger: Logger
        let contextName: String
        let router: IoRouter
        let refusals: RetentionRefusals
        /// Managed nodes in the order they were first managed.
        var nodes: [IoNode] = []
        /// The bytes of each managed node as JSON, and their sum, for the router's `nodeLimit`.
        var nodeSizes: [String: Int] = [:]
        var nodeBytes = 0
        var sourceRoutes: [String: String] = [:]
        var associations: [IoAssociation] = []
        /// During a census: the nodes managed when it started, and those managed again since.
        var census: (before: Set<String>, alive: Set<String>)?

        init(manager: CommunicationManager, logger: Logger, contextName: String, router: IoRouter, refusals: RetentionRefusals) {
            self.manager = manager
            self.logger = logger
            self.contextName = contextName
            self.router = router
            self.refusals = refusals
        }

        mutating func handle(_ trigger: Trigger) async {
            switch trigger {
            case .managed(let node):
                census?.alive.insert(node.objectId)
                if node.ioSources.isEmpty && node.ioActors.isEmpty {
                    await unmanage([node.objectId])
                } else if manage(node) {
                    await evaluate()
                }
            case .deadvertised(let objectIds):
                await unmanage(objectIds)
            case .censusStarted:
                census = (Set(nodes.map(\.objectId)), [])
            case .censusEnded:
                guard let (before, alive) = census else { return }
                census = nil
                await unmanage(Array(before.subtracting(alive)))
            case .update(let request):
                await handleUpdate(request)
            case .discover(let request):
                await answer(request)
            case .associationsCall(let request):
                let context = router.context
                let list: [JSONValue] = associations.map { association in
                    var entry: JSONObject = [
                        "sourceId": .string(association.sourceId), "sourceName": .string(association.sourceName),
                        "actorId": .string(association.actorId), "actorName": .string(association.actorName),
                        "route": .string(association.route), "rule": .string(association.rule),
                    ]
                    entry.set("updateRate", ifPresent: association.updateRate.map(JSONValue.number))
                    return .object(entry)
                }
                try? await request.respond(ReturnEvent(.result([
                    "context": context.jsonValue, "router": .string(manager.identity.name), "associations": .array(list),
                ])))
            case .rules:
                await evaluate()
            case .sharedData(let name, let data):
                let changed = router.shared.withLock { shared in
                    guard shared.sharedData[name] != data.map(JSONValue.object) else { return false }
                    shared.sharedData[name] = data.map(JSONValue.object)
                    return true
                }
                if changed { await evaluate() }
            case .stop(let continuation):
                for association in associations {
                    await publish(association, route: nil)
                }
                associations = []
                router.update { $0.associations = [] }
                continuation.resume()
            }
        }

        /// Manages a new node or the new version of a managed one; false if that is past the router's `nodeLimit`.
        private mutating func manage(_ node: IoNode) -> Bool {
            let size = node.object.jsonValue.serializedBytes().count
            let previous = nodeSizes[node.objectId]
            guard router.nodeLimit.admits(count: nodes.count, bytes: nodeBytes, isNew: previous == nil, growth: size - (previous ?? 0))
            else {
                router.update { $0.refusedNodeCount += 1 }
                refusals.refuse {
                    "IO node \(node.name) (\(node.objectId), \(size) bytes): \(nodes.count) nodes with \(nodeBytes) bytes are managed"
                }
                return false
            }
            nodeSizes[node.objectId] = size
            nodeBytes += size - (previous ?? 0)
            if let index = nodes.firstIndex(where: { $0.objectId == node.objectId }) {
                let remaining = Set(node.ioSources.map(\.objectId))
                for source in nodes[index].ioSources where !remaining.contains(source.objectId) {
                    sourceRoutes[source.objectId] = nil
                }
                nodes[index] = node
            } else {
                nodes.append(node)
            }
            router.update { [nodes] in $0.managedNodeIds = nodes.map(\.objectId) }
            return true
        }

        private mutating func unmanage(_ objectIds: [String]) async {
            let removed = nodes.filter { objectIds.contains($0.objectId) }
            guard !removed.isEmpty else { return }
            for node in removed {
                for source in node.ioSources { sourceRoutes[source.objectId] = nil }
                nodeBytes -= nodeSizes.removeValue(forKey: node.objectId) ?? 0
            }
            nodes.removeAll { objectIds.contains($0.objectId) }
            router.update { [nodes] in $0.managedNodeIds = nodes.map(\.objectId) }
            await evaluate()
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
            if let expected = request.event.object[IoRouter.expectedVersionProperty], expected.intValue != currentVersion {
                let given = expected.intValue.map(String.init) ?? expected.serialized()
                logger.info("refused a stale update of IO context \(current.name): expected version \(given), current \(currentVersion)")
                try? await request.respond(CompleteEvent(
                    object: current.object,
                    privateData: ["refused": .string("stale version \(given); the current version is \(currentVersion)")]))
                return
            }
            guard var updated = try? IoContext(request.event.object) else { return }
            updated[IoRouter.expectedVersionProperty] = nil
            updated.parentObjectId = manager.identity.objectId
            updated[IoRouter.versionProperty] = .number(Double(currentVersion + 1))
            router.update { $0.context = updated }
            logger.info("IO context \(updated.name) changed to version \(currentVersion + 1) by \(request.sourceId)")
            await advertiseContext()
            await evaluate()
            try? await request.respond(CompleteEvent(object: updated.object))
        }

        private func answer(_ request: DiscoverRequest) async {
            let context = router.context
            let discover = request.event
            let matches =
                (discover.isDiscoveringTypes && discover.isCoreTypeCompatible(.ioContext))
                || (discover.isDiscoveringTypes && discover.isObjectTypeCompatible(context.object.objectType))
                || (discover.isDiscoveringObjectId && discover.objectId == context.objectId)
            guard matches else { return }
            try? await request.respond(ResolveEvent(object: context.object))
        }

        /// Coaty's rule evaluation: compatible pairs, the first matching rule, rates, then only the changes on the wire.
        mutating func evaluate() async {
            let (context, rules, sharedData) = router.shared.withLock { ($0.context, $0.rules, $0.sharedData) }
            var matched: [(source: IoSource, actor: IoActor, rate: Double?, rule: String)] = []
            var problems: Set<String> = []
            var seen = Set<[String]>()
            for sourceNode in nodes {
                for source in sourceNode.ioSources {
                    for actorNode in nodes {
                        for actor in actorNode.ioActors where source.isCompatible(with: actor) {
                            guard seen.insert([source.objectId, actor.objectId]).inserted else { continue }
                            let candidate = IoRoutingCandidate(
                                source: source, sourceNode: sourceNode, actor: actor, actorNode: actorNode, context: context,
                                shared: sharedData)
                            let result = rules.match(candidate)
                            problems.formUnion(result.problems)
                            guard let rule = result.rule else { continue }
                            matched.append((source, actor, maximum(source.updateRate, actor.updateRate), rule))
                        }
                    }
                }
            }
            for problem in problems.sorted() {
                logger.warning("routing rule failed, counted as false: \(problem)")
            }
            var cumulatedRates: [String: Double?] = [:]
            for pair in matched {
                cumulatedRates[pair.source.objectId] = maximum(cumulatedRates[pair.source.objectId] ?? nil, pair.rate)
            }

            var resolved: [[String]: (source: IoSource, actor: IoActor, rate: Double?, rule: String)] = [:]
            for pair in matched {
                resolved[[pair.source.objectId, pair.actor.objectId]] =
                    (pair.source, pair.actor, cumulatedRates[pair.source.objectId] ?? nil, pair.rule)
            }
            var kept: [IoAssociation] = []
            var changes: [(association: IoAssociation, route: String?)] = []
            for association in associations {
                let key = [association.sourceId, association.actorId]
                guard let target = resolved.removeValue(forKey: key) else {
                    changes.append((association, nil))
                    continue
                }
                var updated = association
                updated.rule = target.rule
                if target.rate != association.updateRate {
                    updated.updateRate = target.rate
                    changes.append((updated, updated.route))
                }
                kept.append(updated)
            }
            for pair in matched {
                guard let target = resolved.removeValue(forKey: [pair.source.objectId, pair.actor.objectId]) else { continue }
                let association = IoAssociation(
                    sourceId: pair.source.objectId, sourceName: pair.source.name, actorId: pair.actor.objectId,
                    actorName: pair.actor.name, route: route(for: target.source), updateRate: target.rate, rule: target.rule)
                changes.append((association, association.route))
                kept.append(association)
            }
            // The router's associations change before the Associates go out, so that whoever sees one on the wire
            // finds the router agreeing.
            associations = kept
            router.update { [kept] in $0.associations = kept }
            for (association, route) in changes {
                await publish(association, route: route)
            }
        }

        /// The route a source publishes on: its external route, or one in the router's namespace, cached.
        private mutating func route(for source: IoSource) -> String {
            if let route = sourceRoutes[source.objectId] { return route }
            let route = source.externalRoute ?? CoatyTopic.ioValueRoute(namespace: manager.options.namespace, sourceId: source.objectId)
            sourceRoutes[source.objectId] = route
            return route
        }

        private func publish(_ association: IoAssociation, route: String?) async {
            let event = AssociateEvent(
                ioContextName: contextName, ioSourceId: association.sourceId, ioActorId: association.actorId,
                associatingRoute: route, updateRate: route == nil ? nil : association.updateRate)
            do {
                try await manager.publishAssociate(event)
                if route == nil {
                    logger.info("disassociated \(association.sourceName) from \(association.actorName)")
                } else {
                    logger.info("associated \(association.sourceName) with \(association.actorName) by rule \(association.rule)")
                }
            } catch {
                logger.error("cannot publish Associate: \(error)")
            }
        }
    }
}

/// The larger of two optional rates; nil only when both are nil.
func maximum(_ a: Double?, _ b: Double?) -> Double? {
    switch (a, b) {
    case (let a?, let b?): max(a, b)
    case (let a?, nil): a
    case (nil, let b?): b
    case (nil, nil): nil
    }
}
