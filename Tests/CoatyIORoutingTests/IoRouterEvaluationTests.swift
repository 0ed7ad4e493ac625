@testable import CoatyIORouting
import CoatyJSON
import CoatyModel
import JsonLogic
import RoutingRules
import Testing

/// The router's incremental evaluation against the full one: random node sets, re-advertisements, removals and
/// changes of the context, the rules and the shared data, with events arriving between the evaluation's slices; after
/// each burst the associations and the Associates must be those of Coaty's full evaluation from the same start.
@Suite struct IoRouterEvaluationTests {
    /// Coaty's rule evaluation as the router did it before it became incremental: every compatible pair of every
    /// managed node, each pair once, the first rule that holds, cumulated rates, then the changes in order.
    struct FullEvaluation {
        var nodes: [IoNode] = []
        var associations: [IoAssociation] = []
        var sourceRoutes: [String: String] = [:]

        mutating func manage(_ node: IoNode) {
            if node.ioSources.isEmpty && node.ioActors.isEmpty {
                unmanage([node.objectId])
                return
            }
            if let index = nodes.firstIndex(where: { $0.objectId == node.objectId }) {
                let remaining = Set(node.ioSources.map(\.objectId))
                for source in nodes[index].ioSources where !remaining.contains(source.objectId) {
                    sourceRoutes[source.objectId] = nil
                }
                nodes[index] = node
            } else {
                nodes.append(node)
            }
        }

        mutating func unmanage(_ objectIds: [String]) {
            for node in nodes where objectIds.contains(node.objectId) {
                for source in node.ioSources { sourceRoutes[source.objectId] = nil }
            }
            nodes.removeAll { objectIds.contains($0.objectId) }
        }

        mutating func evaluate(context: IoContext, rules: any IoRoutingRules, shared: JSONObject) -> [IoRouterEvaluation
            .Change]
        {
            var matched: [(source: IoSource, actor: IoActor, rate: Double?, rule: String)] = []
            var agents: [String: (source: String?, actor: String?)] = [:]
            var seen = Set<[String]>()
            for sourceNode in nodes {
                for source in sourceNode.ioSources {
                    for actorNode in nodes {
                        for actor in actorNode.ioActors where source.isCompatible(with: actor) {
                            guard seen.insert([source.objectId, actor.objectId]).inserted else { continue }
                            let candidate = IoRoutingCandidate(
                                source: source, sourceNode: sourceNode, actor: actor, actorNode: actorNode,
                                context: context,
                                shared: shared)
                            guard let rule = rules.match(candidate).rule else { continue }
                            matched.append((source, actor, Self.maximum(source.updateRate, actor.updateRate), rule))
                            agents[source.objectId + ">" + actor.objectId] = (
                                sourceNode.object.parentObjectId, actorNode.object.parentObjectId
                            )
                        }
                    }
                }
            }
            var cumulatedRates: [String: Double?] = [:]
            for pair in matched {
                cumulatedRates[pair.source.objectId] = Self.maximum(
                    cumulatedRates[pair.source.objectId] ?? nil, pair.rate)
            }
            var resolved: [[String]: (source: IoSource, actor: IoActor, rate: Double?, rule: String)] = [:]
            for pair in matched {
                resolved[[pair.source.objectId, pair.actor.objectId]] =
                    (pair.source, pair.actor, cumulatedRates[pair.source.objectId] ?? nil, pair.rule)
            }
            var kept: [IoAssociation] = []
            var changes: [IoRouterEvaluation.Change] = []
            for association in associations {
                guard let target = resolved.removeValue(forKey: [association.sourceId, association.actorId]) else {
                    changes.append(.init(association: association, route: nil))
                    continue
                }
                var updated = association
                updated.rule = target.rule
                if target.rate != association.updateRate {
                    updated.updateRate = target.rate
                    changes.append(.init(association: updated, route: updated.route))
                }
                kept.append(updated)
            }
            for pair in matched {
                guard let target = resolved.removeValue(forKey: [pair.source.objectId, pair.actor.objectId]) else {
                    continue
                }
                let route =
                    sourceRoutes[pair.source.objectId] ?? target.source.externalRoute
                    ?? CoatyTopic.ioValueRoute(namespace: "-", sourceId: target.source.objectId)
                sourceRoutes[pair.source.objectId] = route
                let association = IoAssociation(
                    sourceId: pair.source.objectId, sourceName: pair.source.name, actorId: pair.actor.objectId,
                    actorName: pair.actor.name, valueType: pair.source.valueType,
                    sourceAgentId: agents[pair.source.objectId + ">" + pair.actor.objectId]?.source ?? nil,
                    actorAgentId: agents[pair.source.objectId + ">" + pair.actor.objectId]?.actor ?? nil, route: route,
                    updateRate: target.rate, rule: target.rule)
                changes.append(.init(association: association, route: association.route))
                kept.append(association)
            }
            associations = kept
            return changes
        }

        static func maximum(_ a: Double?, _ b: Double?) -> Double? {
            switch (a, b) {
            case (let a?, let b?): max(a, b)
            case (let a?, nil): a
            case (nil, let b?): b
            case (nil, nil): nil
            }
        }
    }

    /// A small deterministic generator, so that a failure can be replayed from its seed.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let valueTypes = ["t.A", "t.B", "t.C"]
    static let rates: [Double?] = [nil, nil, 100, 200, 500]

    /// A node of the given id with a few points; point ids come from small pools, so that ids repeat across nodes
    /// (which the evaluation must resolve as the full one does: the first compatible occurrence).
    static func node(_ id: String, using random: inout SplitMix) -> IoNode {
        func valueType() -> String { valueTypes.randomElement(using: &random) ?? "t.A" }
        let sources = (0..<Int.random(in: 0...3, using: &random)).map { _ in
            IoSource(
                objectId: "s\(Int.random(in: 0..<14, using: &random))",
                name: "source \(Int.random(in: 0..<3, using: &random))",
                valueType: valueType(), updateRate: rates.randomElement(using: &random) ?? nil,
                useRawIoValues: Int.random(in: 0..<8, using: &random) == 0 ? true : nil,
                externalRoute: Int.random(in: 0..<6, using: &random) == 0 ? "external/\(id)" : nil)
        }
        let actors = (0..<Int.random(in: 0...3, using: &random)).map { _ in
            IoActor(
                objectId: "a\(Int.random(in: 0..<10, using: &random))",
                name: "actor \(Int.random(in: 0..<3, using: &random))",
                valueType: valueType(), updateRate: rates.randomElement(using: &random) ?? nil,
                useRawIoValues: Int.random(in: 0..<8, using: &random) == 0 ? true : nil)
        }
        let state = ["normal", "emergency"].randomElement(using: &random) ?? "normal"
        return IoNode(
            contextName: "ctx", objectId: id, parentObjectId: "agent-" + id, ioSources: sources, ioActors: actors,
            characteristics: [
                "isResponsibleForOperatingState": .string(state),
                "floor": .number(Double(Int.random(in: 0..<3, using: &random))),
            ])
    }

    static func rule(_ name: String, _ valueType: RoutingRule.ValueType, _ condition: String) throws -> RoutingRule {
        let path = JSONPath().appending("rules").appending(0)
        return RoutingRule(
            name: name, valueType: valueType,
            condition: try JsonLogicExpression(JSONValue(parsing: condition), at: path),
            origin: RuleOrigin(file: "test.json", path: path))
    }

    /// Rule sets with value-type rules before the `"*"` ones, conditions on the context, the nodes, the points and
    /// shared data, and a condition that fails to evaluate (it counts as false).
    static func ruleSets() throws -> [RoutingRuleSet] {
        let responsible =
            #"{"==": [{"var": "actorNode.characteristics.isResponsibleForOperatingState"}, {"var": "context.operatingState"}]}"#
        let sameFloor =
            #"{"==": [{"var": "actorNode.characteristics.floor"}, {"var": "sourceNode.characteristics.floor"}]}"#
        let sharedLimit = #"{"<": [{"var": "actorNode.characteristics.floor"}, {"var": "shared.limits.floor"}]}"#
        let failing = #"{"+": [{"var": "source.name"}, 1]}"#
        return [
            try RoutingRuleSet([try rule("all", .any, "true")]),
            try RoutingRuleSet([
                try rule("responsible", .named("t.A"), responsible), try rule("same floor", .named("t.A"), sameFloor),
                try rule("floor", .any, sharedLimit),
                try rule("any B actor", .named("t.B"), #"{"==": [{"var": "actor.name"}, "actor 1"]}"#),
            ]),
            try RoutingRuleSet([
                try rule("failing", .any, failing), try rule("responsible", .any, responsible),
                try rule("same floor", .named("t.C"), sameFloor),
            ]),
        ]
    }

    @Test(
        "random bursts of nodes, removals and changes: the incremental evaluation equals the full one",
        arguments: 0..<24)
    func incrementalEqualsFull(seed: UInt64) async throws {
        var random = SplitMix(state: seed &* 7919 &+ 1)
        let ruleSets = try Self.ruleSets()
        var context = IoContext(objectId: "context", name: "ctx")
        context["operatingState"] = "normal"
        var rules = ruleSets[Int(seed) % ruleSets.count]
        var shared: JSONObject = ["limits": ["floor": 2]]
        var incremental = IoRouterEvaluation(context: context, rules: rules, sharedData: shared, namespace: "-")
        var full = FullEvaluation()
        var evaluated = 0

        for burst in 0..<40 {
            // A burst of events, some of them arriving while the evaluation is between slices.
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                switch Int.random(in: 0..<20, using: &random) {
                case 0..<11:
                    let node = Self.node("n\(Int.random(in: 0..<12, using: &random))", using: &random)
                    full.manage(node)
                    if node.ioSources.isEmpty && node.ioActors.isEmpty {
                        incremental.unmanage([node.objectId])
                    } else {
                        incremental.manage(node)
                    }
                case 11..<15:
                    let ids = (0..<Int.random(in: 1...2, using: &random)).map { _ in
                        "n\(Int.random(in: 0..<12, using: &random))"
                    }
                    full.unmanage(ids)
                    incremental.unmanage(ids)
                case 15..<17:
                    context["operatingState"] = context["operatingState"] == "normal" ? "emergency" : "normal"
                    incremental.setContext(context)
                case 17:
                    rules = ruleSets.randomElement(using: &random) ?? rules
                    incremental.setRules(rules)
                default:
                    shared = ["limits": ["floor": .number(Double(Int.random(in: 0...3, using: &random)))]]
                    incremental.setSharedData(shared)
                }
                incremental.evaluate(budget: Int.random(in: 1...4, using: &random))
            }
            incremental.evaluate()
            let changes = incremental.resolve()
            let expected = full.evaluate(context: context, rules: rules, shared: shared)
            #expect(changes == expected, "seed \(seed), burst \(burst)")
            #expect(incremental.associations == full.associations, "seed \(seed), burst \(burst)")
            #expect(incremental.managedNodeIds == full.nodes.map(\.objectId), "seed \(seed), burst \(burst)")
            evaluated += expected.count
            if changes != expected { return }
            // Each case computes for a while in a debug build: the other suites, which share the two threads that run
            // every suite, get their turn between bursts (their waits time out otherwise).
            await Task.yield()
        }
        #expect(evaluated > 20, "the bursts changed too little to compare")
    }

    /// The cost of an event is its own pairs: a new node among a thousand evaluates the pairs of its points, a
    /// removed one those it had; a context change evaluates every compatible pair once.
    @Test func anEventCostsTheEvaluationOfItsOwnPairs() async throws {
        var context = IoContext(objectId: "context", name: "ctx")
        context["operatingState"] = "normal"
        let rules = try RoutingRuleSet([
            try Self.rule(
                "responsible", .any,
                #"{"==": [{"var": "actorNode.characteristics.isResponsibleForOperatingState"}, {"var": "context.operatingState"}]}"#
            )
        ])
        var evaluation = IoRouterEvaluation(context: context, rules: rules, namespace: "-")
        // 100 value types; per type 9 sensor nodes of one source each and one actor node per state.
        func sensor(_ index: Int) -> IoNode {
            IoNode(
                contextName: "ctx", objectId: "sensor-\(index)", parentObjectId: "agent",
                ioSources: [
                    IoSource(objectId: "source-\(index)", name: "source \(index)", valueType: "t.\(index % 100)")
                ], ioActors: [])
        }
        func actor(_ index: Int, state: String) -> IoNode {
            IoNode(
                contextName: "ctx", objectId: "actor-\(state)-\(index)", parentObjectId: "agent", ioSources: [],
                ioActors: [
                    IoActor(objectId: "actor-\(state)-\(index)", name: "actor \(index)", valueType: "t.\(index)")
                ],
                characteristics: ["isResponsibleForOperatingState": .string(state)])
        }
        for index in 0..<900 { evaluation.manage(sensor(index)) }
        for index in 0..<100 {
            evaluation.manage(actor(index, state: "normal"))
            evaluation.manage(actor(index, state: "emergency"))
        }
        await Task.yield()
        evaluation.evaluate()
        await Task.yield()
        #expect(evaluation.statistics.pairsEvaluated == 1800, "each compatible pair once")
        #expect(evaluation.resolve().count == 900)

        evaluation.manage(sensor(900))
        evaluation.evaluate()
        #expect(evaluation.statistics.pairsEvaluated == 1802)
        #expect(evaluation.resolve().map(\.association.actorId) == ["actor-normal-0"])

        evaluation.unmanage(["actor-normal-7"])
        evaluation.evaluate()
        #expect(evaluation.statistics.pairsEvaluated == 1802, "pairs without their actor need no rule")
        #expect(evaluation.resolve().count == 9)

        context["operatingState"] = "emergency"
        evaluation.setContext(context)
        evaluation.evaluate()
        #expect(evaluation.statistics.pairsEvaluated == 1802 + 1802 - 9, "each compatible pair once")
        let changes = evaluation.resolve()
        #expect(changes.count { $0.route == nil } == 901 - 9)
        #expect(changes.count { $0.route != nil } == 901)
        #expect(evaluation.associations.allSatisfy { $0.actorId.hasPrefix("actor-emergency") })
    }

    /// Nodes that pair every source with every actor cannot grow the matched pairs past the bound: the pairs past
    /// it stay unassociated and are counted; a gone pair makes room for the next one evaluated.
    @Test func matchedPairsAreBounded() {
        var evaluation = IoRouterEvaluation(
            context: IoContext(objectId: "context", name: "ctx"), rules: IoAssociationRules.all, namespace: "-",
            maximumMatches: 5)
        let actor = IoNode(
            contextName: "ctx", objectId: "actors", parentObjectId: "agent", ioSources: [],
            ioActors: [IoActor(objectId: "actor", name: "actor", valueType: "t")])
        evaluation.manage(actor)
        for index in 0..<8 {
            evaluation.manage(
                IoNode(
                    contextName: "ctx", objectId: "node-\(index)", parentObjectId: "agent",
                    ioSources: [IoSource(objectId: "source-\(index)", name: "source \(index)", valueType: "t")],
                    ioActors: []))
        }
        evaluation.evaluate()
        #expect(evaluation.resolve().count == 5)
        #expect(evaluation.statistics.pairsRefused == 3)
        evaluation.unmanage(["node-0"])
        evaluation.manage(
            IoNode(
                contextName: "ctx", objectId: "node-8", parentObjectId: "agent",
                ioSources: [IoSource(objectId: "source-8", name: "source 8", valueType: "t")], ioActors: []))
        evaluation.evaluate()
        let changes = evaluation.resolve()
        #expect(changes.map(\.route) == [nil, "coaty/3/-/IOV/source-8"])
        #expect(evaluation.associationCount == 5)
    }
}
