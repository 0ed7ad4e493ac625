import CoatyJSON
import CoatyModel

/// What an IoRouter knows and decides, without I/O: the managed IO nodes (each decoded once, when it is managed),
/// an index of their sources and actors by compatibility, the pairs the rules matched, and the associations.
///
/// The outcome is that of Coaty's rule evaluation over every compatible pair of every managed node (see
/// `IoRouter`), but an event costs only the pairs it can change: a new, changed or gone node marks the pairs of its
/// own sources and actors, a change of the context, the rules or the shared data marks every pair. Marked pairs are
/// evaluated in slices (`evaluate(budget:)`), so that the router can do other work in between; once none is left,
/// `resolve(route:)` turns what changed into the Associates to publish.
///
/// Each pair of a source id and an actor id is evaluated once, for the first compatible occurrence of the two in the
/// router's order (nodes in the order they were first managed, points in their node's order), as the full
/// evaluation does; new associations are appended in that order.
package struct IoRouterEvaluation: Sendable {
    /// A source's or actor's place in the router's order.
    struct Position: Comparable, Sendable {
        var node: Int
        var point: Int

        static func < (lhs: Position, rhs: Position) -> Bool {
            (lhs.node, lhs.point) < (rhs.node, rhs.point)
        }
    }

    /// Sources and actors pair only within one compatibility (`IoPoint.isCompatible(with:)`).
    struct Compatibility: Hashable, Sendable {
        var valueType: String
        var useRawIoValues: Bool

        init(_ point: some IoPoint) {
            valueType = point.valueType
            useRawIoValues = point.useRawIoValues
        }
    }

    /// Where a source or actor id occurs: in which node, at which index of the node's sources or actors.
    struct Occurrence: Sendable {
        var nodeId: String
        var position: Position
        var compatibility: Compatibility
    }

    struct ManagedNode: Sendable {
        var node: IoNode
        /// The node's place in the router's order: when it was first managed.
        var order: Int
        var sources: [IoSource]
        var actors: [IoActor]
    }

    struct PairKey: Hashable, Sendable {
        var sourceId: String
        var actorId: String
    }

    /// A pair a rule matched.
    struct Match: Sendable {
        var rule: String
        /// The larger of the source's and the actor's rate.
        var rate: Double?
        /// The pair's place in the order of the full evaluation, for the order of new associations.
        var order: (source: Position, actor: Position)
    }

    struct Entry: Sendable {
        /// Position in the list of associations: kept ones stay, new ones are appended.
        var sequence: Int
        var association: IoAssociation
    }

    /// One Associate to publish: a route associates, nil disassociates.
    public struct Change: Sendable, Equatable {
        public var association: IoAssociation
        public var route: String?
    }

    /// Counts for tests and the fuzzer.
    public struct Statistics: Sendable {
        /// Rule evaluations of a pair so far.
        public var pairsEvaluated = 0
        /// Conditions that failed to evaluate (each counted as false).
        public var conditionsFailed = 0
        /// Pairs a rule matched that were not kept, since `maximumMatches` pairs were matched already.
        public var pairsRefused = 0
    }

    /// The default `maximumMatches`: room for a fleet of 10,000 IO points, each source routed to three actors.
    public static let defaultMaximumMatches = 32_768

    /// How many matched pairs (and so associations) the evaluation keeps: nodes that pair every source with every
    /// actor would otherwise grow memory with the square of the points. Past it a matched pair is left unassociated
    /// and counted in `statistics.pairsRefused`.
    public let maximumMatches: Int

    public private(set) var context: IoContext
    public private(set) var rules: any IoRoutingRules
    public private(set) var sharedData: JSONObject
    public private(set) var statistics = Statistics()
    private let namespace: String

    private var nodes: [String: ManagedNode] = [:]
    private var nextNodeOrder = 0
    private var sourceOccurrences: [String: [Occurrence]] = [:]
    private var actorOccurrences: [String: [Occurrence]] = [:]
    /// Per compatibility, the ids of its sources and actors with their number of occurrences.
    private var sourcesByCompatibility: [Compatibility: [String: Int]] = [:]
    private var actorsByCompatibility: [Compatibility: [String: Int]] = [:]

    private var matches: [PairKey: Match] = [:]
    private var matchedActors: [String: Set<String>] = [:]
    private var matchedSources: [String: Set<String>] = [:]

    /// Ids whose pairs are to be evaluated again, in the order they were marked; a marked source covers all its pairs.
    private var pendingSources: [String] = []
    private var pendingSourceSet: Set<String> = []
    private var pendingActors: [String] = []
    private var pendingActorSet: Set<String> = []
    /// Within one pass (until nothing is marked): when each source had its pairs evaluated and when each actor was
    /// last marked, on one clock, so that an actor's pairs skip the sources evaluated after it was marked.
    private var clock = 0
    private var sourceEvaluatedAt: [String: Int] = [:]
    private var actorMarkedAt: [String: Int] = [:]
    /// Sources whose matches may have changed since the last `resolve`.
    private var affectedSources: Set<String> = []
    /// Condition failures since the last `resolve`, for the router to log once each; at most `problemLimit`.
    private var problems: Set<String> = []
    private var problemsLeftOut = 0
    static let problemLimit = 100

    private var entries: [PairKey: Entry] = [:]
    private var associatedActors: [String: Set<String>] = [:]
    private var nextSequence = 0
    private var sourceRoutes: [String: String] = [:]

    /// - Parameters:
    ///   - namespace: the router's namespace, for the routes it makes for sources without an external route.
    ///   - maximumMatches: how many matched pairs it keeps (see `maximumMatches`).
    public init(
        context: IoContext, rules: any IoRoutingRules, sharedData: JSONObject = [:], namespace: String,
        maximumMatches: Int = IoRouterEvaluation.defaultMaximumMatches
    ) {
        self.maximumMatches = maximumMatches
        self.context = context
        self.rules = rules
        self.sharedData = sharedData
        self.namespace = namespace
    }

    // MARK: - Events

    /// The managed node ids in the router's order.
    public var managedNodeIds: [String] {
        nodes.values.sorted { $0.order < $1.order }.map(\.node.objectId)
    }

    public var managedNodeCount: Int { nodes.count }

    public func isManaged(_ nodeId: String) -> Bool { nodes[nodeId] != nil }

    /// Manages a new node, or the new version of a managed one (which keeps its place): its pairs are marked.
    public mutating func manage(_ node: IoNode) {
        manage(node, sources: node.ioSources, actors: node.ioActors)
    }

    /// `manage(_:)` with the node's sources and actors decoded already (`IoNode.ioSources`, `IoNode.ioActors`), so
    /// that a router that looked at them decodes the node only once.
    public mutating func manage(_ node: IoNode, sources: [IoSource], actors: [IoActor]) {
        let order: Int
        if let previous = nodes[node.objectId] {
            order = previous.order
            removeOccurrences(of: previous)
            let remaining = Set(sources.map(\.objectId))
            for source in previous.sources where !remaining.contains(source.objectId) {
                sourceRoutes[source.objectId] = nil
            }
        } else {
            order = nextNodeOrder
            nextNodeOrder += 1
        }
        let managed = ManagedNode(node: node, order: order, sources: sources, actors: actors)
        nodes[node.objectId] = managed
        for (index, source) in managed.sources.enumerated() {
            let occurrence = Occurrence(
                nodeId: node.objectId, position: Position(node: order, point: index),
                compatibility: Compatibility(source))
            Self.insert(
                occurrence, of: source.objectId, into: &sourceOccurrences, byCompatibility: &sourcesByCompatibility)
            markSource(source.objectId)
        }
        for (index, actor) in managed.actors.enumerated() {
            let occurrence = Occurrence(
                nodeId: node.objectId, position: Position(node: order, point: index),
                compatibility: Compatibility(actor))
            Self.insert(
                occurrence, of: actor.objectId, into: &actorOccurrences, byCompatibility: &actorsByCompatibility)
            markActor(actor.objectId)
        }
    }

    /// Stops managing the nodes; their pairs are marked. False if none of them was managed.
    @discardableResult
    public mutating func unmanage(_ nodeIds: some Sequence<String>) -> Bool {
        var removedAny = false
        for nodeId in nodeIds {
            guard let node = nodes.removeValue(forKey: nodeId) else { continue }
            removedAny = true
            removeOccurrences(of: node)
            for source in node.sources { sourceRoutes[source.objectId] = nil }
        }
        return removedAny
    }

    public mutating func setContext(_ context: IoContext) {
        self.context = context
        markAll()
    }

    public mutating func setRules(_ rules: any IoRoutingRules) {
        self.rules = rules
        markAll()
    }

    public mutating func setSharedData(_ data: JSONObject) {
        sharedData = data
        markAll()
    }

    private mutating func removeOccurrences(of node: ManagedNode) {
        for source in node.sources {
            Self.remove(
                nodeId: node.node.objectId, of: source.objectId, from: &sourceOccurrences,
                byCompatibility: &sourcesByCompatibility)
            markSource(source.objectId)
        }
        for actor in node.actors {
            Self.remove(
                nodeId: node.node.objectId, of: actor.objectId, from: &actorOccurrences,
                byCompatibility: &actorsByCompatibility)
            markActor(actor.objectId)
        }
    }

    private static func insert(
        _ occurrence: Occurrence, of id: String, into occurrences: inout [String: [Occurrence]],
        byCompatibility: inout [Compatibility: [String: Int]]
    ) {
        var list = occurrences[id, default: []]
        let index = list.firstIndex { occurrence.position < $0.position } ?? list.endIndex
        list.insert(occurrence, at: index)
        occurrences[id] = list
        byCompatibility[occurrence.compatibility, default: [:]][id, default: 0] += 1
    }

    private static func remove(
        nodeId: String, of id: String, from occurrences: inout [String: [Occurrence]],
        byCompatibility: inout [Compatibility: [String: Int]]
    ) {
        guard var list = occurrences[id] else { return }
        for occurrence in list where occurrence.nodeId == nodeId {
            let compatibility = occurrence.compatibility
            let count = (byCompatibility[compatibility]?[id] ?? 1) - 1
            byCompatibility[compatibility]?[id] = count > 0 ? count : nil
            if byCompatibility[compatibility]?.isEmpty == true { byCompatibility[compatibility] = nil }
        }
        list.removeAll { $0.nodeId == nodeId }
        occurrences[id] = list.isEmpty ? nil : list
    }

    private mutating func markSource(_ id: String) {
        guard pendingSourceSet.insert(id).inserted else { return }
        pendingSources.append(id)
    }

    private mutating func markActor(_ id: String) {
        clock += 1
        actorMarkedAt[id] = clock
        guard pendingActorSet.insert(id).inserted else { return }
        pendingActors.append(id)
    }

    /// Every pair: each has a source, so marking every source (present or matched) covers them.
    private mutating func markAll() {
        pendingActors = []
        pendingActorSet = []
        actorMarkedAt = [:]
        for id in sourceOccurrences.keys { markSource(id) }
        for id in matchedActors.keys { markSource(id) }
    }

    // MARK: - Evaluation

    /// Whether marked pairs wait for `evaluate(budget:)`.
    public var hasPendingWork: Bool { !pendingSources.isEmpty || !pendingActors.isEmpty }

    /// Whether `resolve(route:)` may have changes to publish.
    public var hasUnresolvedChanges: Bool { !affectedSources.isEmpty }

    /// Evaluates marked pairs until about `budget` rule evaluations are done (a source or actor is evaluated with
    /// all its pairs, so a slice may exceed the budget by one point's pairs); returns whether work remains.
    @discardableResult
    public mutating func evaluate(budget: Int = .max) -> Bool {
        let start = statistics.pairsEvaluated
        var sourceIndex = 0
        var actorIndex = 0
        while statistics.pairsEvaluated - start < budget {
            if sourceIndex < pendingSources.count {
                let id = pendingSources[sourceIndex]
                sourceIndex += 1
                pendingSourceSet.remove(id)
                evaluatePairs(ofSource: id)
            } else if actorIndex < pendingActors.count {
                let id = pendingActors[actorIndex]
                actorIndex += 1
                pendingActorSet.remove(id)
                evaluatePairs(ofActor: id)
            } else {
                break
            }
        }
        pendingSources.removeFirst(sourceIndex)
        pendingActors.removeFirst(actorIndex)
        if !hasPendingWork {
            sourceEvaluatedAt = [:]
            actorMarkedAt = [:]
        }
        return hasPendingWork
    }

    private mutating func evaluatePairs(ofSource sourceId: String) {
        let partners = Self.partners(
            of: sourceOccurrences[sourceId] ?? [], in: actorsByCompatibility, matched: matchedActors[sourceId] ?? [])
        for actorId in partners {
            evaluate(PairKey(sourceId: sourceId, actorId: actorId))
        }
        affectedSources.insert(sourceId)
        clock += 1
        sourceEvaluatedAt[sourceId] = clock
    }

    private mutating func evaluatePairs(ofActor actorId: String) {
        let partners = Self.partners(
            of: actorOccurrences[actorId] ?? [], in: sourcesByCompatibility, matched: matchedSources[actorId] ?? [])
        // A marked source's pairs are evaluated with it, and so were those of a source evaluated since the actor was marked.
        let markedAt = actorMarkedAt[actorId] ?? 0
        for sourceId in partners
        where !pendingSourceSet.contains(sourceId) && (sourceEvaluatedAt[sourceId] ?? -1) < markedAt {
            evaluate(PairKey(sourceId: sourceId, actorId: actorId))
        }
    }

    /// The ids a point pairs with: those of its compatibilities, and those it was matched with (which may be gone).
    private static func partners(
        of occurrences: [Occurrence], in byCompatibility: [Compatibility: [String: Int]], matched: Set<String>
    ) -> [String] {
        var partners: [String] = []
        var seen: Set<String> = []
        let single = occurrences.count == 1
        for occurrence in occurrences {
            for id in (byCompatibility[occurrence.compatibility] ?? [:]).keys where single || seen.insert(id).inserted {
                partners.append(id)
            }
        }
        let current = single ? (byCompatibility[occurrences[0].compatibility] ?? [:]) : [:]
        for id in matched where single ? current[id] == nil : seen.insert(id).inserted {
            partners.append(id)
        }
        return partners
    }

    /// The first compatible occurrences of the pair in the router's order, as the full evaluation meets them.
    private func firstCompatibleOccurrences(of key: PairKey) -> (source: Occurrence, actor: Occurrence)? {
        guard let sources = sourceOccurrences[key.sourceId], let actors = actorOccurrences[key.actorId] else {
            return nil
        }
        for source in sources {
            if let actor = actors.first(where: { $0.compatibility == source.compatibility }) { return (source, actor) }
        }
        return nil
    }

    private mutating func evaluate(_ key: PairKey) {
        affectedSources.insert(key.sourceId)
        guard let (sourceAt, actorAt) = firstCompatibleOccurrences(of: key),
            let sourceNode = nodes[sourceAt.nodeId], let actorNode = nodes[actorAt.nodeId]
        else {
            removeMatch(key)
            return
        }
        let source = sourceNode.sources[sourceAt.position.point]
        let actor = actorNode.actors[actorAt.position.point]
        let result = rules.match(
            IoRoutingCandidate(
                source: source, sourceNode: sourceNode.node, actor: actor, actorNode: actorNode.node, context: context,
                shared: sharedData))
        statistics.pairsEvaluated += 1
        statistics.conditionsFailed += result.problems.count
        for problem in result.problems where !problems.contains(problem) {
            if problems.count < Self.problemLimit {
                problems.insert(problem)
            } else {
                problemsLeftOut += 1
            }
        }
        guard let rule = result.rule else {
            removeMatch(key)
            return
        }
        guard matches[key] != nil || matches.count < maximumMatches else {
            statistics.pairsRefused += 1
            return
        }
        matches[key] = Match(
            rule: rule, rate: maximum(source.updateRate, actor.updateRate), order: (sourceAt.position, actorAt.position)
        )
        matchedActors[key.sourceId, default: []].insert(key.actorId)
        matchedSources[key.actorId, default: []].insert(key.sourceId)
    }

    private mutating func removeMatch(_ key: PairKey) {
        guard matches.removeValue(forKey: key) != nil else { return }
        matchedActors[key.sourceId]?.remove(key.actorId)
        if matchedActors[key.sourceId]?.isEmpty == true { matchedActors[key.sourceId] = nil }
        matchedSources[key.actorId]?.remove(key.sourceId)
        if matchedSources[key.actorId]?.isEmpty == true { matchedSources[key.actorId] = nil }
    }

    // MARK: - Associations

    /// The associations in Coaty's order: those kept in their places, new ones after them.
    public var associations: [IoAssociation] {
        entries.values.sorted { $0.sequence < $1.sequence }.map(\.association)
    }

    public var associationCount: Int { entries.count }

    /// Counts the changes of the associations (each `resolve` that changed any, each `disassociateAll`), so that a
    /// reader of them in parts (`rules show` page by page) can tell whether all parts come from the same state.
    public private(set) var revision = 0
    /// `associations` as of a revision: the readers of large sets (`rules show` page by page) sort them once per change.
    private var associationsCache: (revision: Int, associations: [IoAssociation])?

    /// `associations`, sorted once per revision.
    public mutating func associationsOfRevision() -> (associations: [IoAssociation], revision: Int) {
        if let cache = associationsCache, cache.revision == revision { return (cache.associations, revision) }
        let sorted = associations
        associationsCache = (revision, sorted)
        return (sorted, revision)
    }

    /// The conditions that failed to evaluate since the last call (each counted as false), in order, and how many
    /// more there were.
    public mutating func takeProblems() -> (problems: [String], leftOut: Int) {
        defer {
            problems = []
            problemsLeftOut = 0
        }
        return (problems.sorted(), problemsLeftOut)
    }

    /// Once no marked pair is left: the associations become what the rules matched, and the Associates that makes
    /// necessary, in Coaty's order. A pair no longer matched is disassociated and a pair whose source's rate (the
    /// most of its matched pairs) changed is associated again, in the order of the associations; new pairs follow
    /// in the order of the full evaluation. Only the sources whose pairs were evaluated are looked at.
    public mutating func resolve() -> [Change] {
        precondition(!hasPendingWork, "resolve with pairs still to evaluate")
        let sources = affectedSources
        affectedSources = []
        var rates: [String: Double?] = [:]
        for sourceId in sources {
            var rate: Double?
            for actorId in matchedActors[sourceId] ?? [] {
                rate = maximum(rate, matches[PairKey(sourceId: sourceId, actorId: actorId)]?.rate ?? nil)
            }
            rates[sourceId] = rate
        }
        var existing: [(key: PairKey, entry: Entry)] = []
        for sourceId in sources {
            for actorId in associatedActors[sourceId] ?? [] {
                let key = PairKey(sourceId: sourceId, actorId: actorId)
                if let entry = entries[key] { existing.append((key, entry)) }
            }
        }
        existing.sort { $0.entry.sequence < $1.entry.sequence }
        var changes: [Change] = []
        // A rule that changed for a kept association is no Associate, but a change of what `rules show` reads.
        var isChanged = false
        for (key, entry) in existing {
            guard let match = matches[key] else {
                entries[key] = nil
                associatedActors[key.sourceId]?.remove(key.actorId)
                if associatedActors[key.sourceId]?.isEmpty == true { associatedActors[key.sourceId] = nil }
                changes.append(Change(association: entry.association, route: nil))
                continue
            }
            var association = entry.association
            if association.rule != match.rule { isChanged = true }
            association.rule = match.rule
            let rate = rates[key.sourceId] ?? nil
            if rate != association.updateRate {
                association.updateRate = rate
                changes.append(Change(association: association, route: association.route))
            }
            entries[key]?.association = association
        }
        var added: [(key: PairKey, match: Match)] = []
        for sourceId in sources {
            for actorId in matchedActors[sourceId] ?? [] {
                let key = PairKey(sourceId: sourceId, actorId: actorId)
                guard entries[key] == nil, let match = matches[key] else { continue }
                added.append((key, match))
            }
        }
        added.sort { ($0.match.order.source, $0.match.order.actor) < ($1.match.order.source, $1.match.order.actor) }
        for (key, match) in added {
            guard let (sourceAt, actorAt) = firstCompatibleOccurrences(of: key),
                let sourceNode = nodes[sourceAt.nodeId], let actorNode = nodes[actorAt.nodeId]
            else { continue }
            let source = sourceNode.sources[sourceAt.position.point]
            let actor = actorNode.actors[actorAt.position.point]
            let association = IoAssociation(
                sourceId: key.sourceId, sourceName: source.name, actorId: key.actorId, actorName: actor.name,
                valueType: source.valueType, sourceAgentId: sourceNode.node.object.parentObjectId,
                actorAgentId: actorNode.node.object.parentObjectId, route: route(for: source),
                updateRate: rates[key.sourceId] ?? nil,
                rule: match.rule)
            entries[key] = Entry(sequence: nextSequence, association: association)
            nextSequence += 1
            associatedActors[key.sourceId, default: []].insert(key.actorId)
            changes.append(Change(association: association, route: association.route))
        }
        if isChanged || !changes.isEmpty { revision += 1 }
        return changes
    }

    /// Ends every association (for a stop): the disassociations in order. Marked work is dropped.
    public mutating func disassociateAll() -> [Change] {
        let changes = associations.map { Change(association: $0, route: nil) }
        if !changes.isEmpty { revision += 1 }
        entries = [:]
        associatedActors = [:]
        return changes
    }

    /// The route a source publishes on: its external route, or one in the router's namespace, cached.
    private mutating func route(for source: IoSource) -> String {
        if let route = sourceRoutes[source.objectId] { return route }
        let route = source.externalRoute ?? CoatyTopic.ioValueRoute(namespace: namespace, sourceId: source.objectId)
        sourceRoutes[source.objectId] = route
        return route
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
