import CoatyModel
import CoatyTestSupport
import DetachedThread
import Testing

@testable import CoatyCommunication

/// The receiving side of Associate, case by case as Coaty JS handles it (protocol reference 3.4).
@Suite struct IoRoutingTableTests {
    let route1 = "coaty/3/-/IOV/s1"
    let route2 = "coaty/3/-/IOV/s1-new"

    func associate(_ source: String, _ actor: String, _ route: String?, rate: Double? = nil) -> AssociateEvent {
        AssociateEvent(
            ioContextName: "ctx", ioSourceId: source, ioActorId: actor, associatingRoute: route, updateRate: rate)
    }

    @Test func eventsForForeignPointsAreIgnored() {
        var table = IoRoutingTable(sourceIds: ["s1"], actorIds: ["a1"])
        #expect(table.apply(associate("s9", "a9", route1)) == .init())
        #expect(table.sources.isEmpty && table.actorsByRoute.isEmpty)
    }

    /// Any agent can send Associates: an own actor keeps at most `maximumAssociations` sources (each on a route it
    /// subscribes), an own source at most as many actors; more are refused without changing anything.
    @Test func associationsPerOwnPointAreBounded() {
        let maximum = IoRoutingTable.maximumAssociations
        var table = IoRoutingTable(sourceIds: ["s1"], actorIds: ["a1"])
        for index in 0..<maximum {
            let effects = table.apply(associate("foreign-\(index)", "a1", "coaty/3/-/IOV/foreign-\(index)"))
            #expect(!effects.isRefused && effects.subscribeRoutes.count == 1)
        }
        let refused = table.apply(associate("foreign-\(maximum)", "a1", "coaty/3/-/IOV/foreign-\(maximum)"))
        #expect(refused == IoRoutingTable.Effects(isRefused: true))
        #expect(table.actorsByRoute.count == maximum)
        // A known pair may still move to another route, and a disassociation frees a place.
        #expect(!table.apply(associate("foreign-0", "a1", "coaty/3/-/IOV/moved")).isRefused)
        #expect(table.actorsByRoute.count == maximum)
        _ = table.apply(associate("foreign-1", "a1", nil))
        #expect(!table.apply(associate("foreign-\(maximum)", "a1", "coaty/3/-/IOV/foreign-\(maximum)")).isRefused)

        for index in 0..<maximum { _ = table.apply(associate("s1", "actor-\(index)", route1)) }
        #expect(table.apply(associate("s1", "actor-\(maximum)", route1)).isRefused)
        #expect(table.sources["s1"]?.actorIds.count == maximum)
    }

    @Test func ownSourceAssociationTracksActorsAndTheLastRate() {
        var table = IoRoutingTable(sourceIds: ["s1"], actorIds: [])
        var effects = table.apply(associate("s1", "a1", route1, rate: 100))
        #expect(effects.states.map(\.state) == [IoState(hasAssociations: true, updateRate: 100)])
        effects = table.apply(associate("s1", "a2", route1, rate: nil))
        // The rate is set on every Associate, even to nothing.
        #expect(effects.states.map(\.state) == [IoState(hasAssociations: true, updateRate: nil)])
        #expect(table.sources["s1"]?.actorIds == ["a1", "a2"])
        effects = table.apply(associate("s1", "a1", nil))
        #expect(effects.states.map(\.state) == [IoState(hasAssociations: true, updateRate: nil)])
        effects = table.apply(associate("s1", "a2", nil))
        #expect(effects.states.map(\.state) == [IoState(hasAssociations: false, updateRate: nil)])
        #expect(table.route(ofSource: "s1") == nil)
    }

    @Test func routeChangeDisassociatesPreviousActorsOfTheSource() {
        var table = IoRoutingTable(sourceIds: ["s1"], actorIds: ["a1", "a2"])
        _ = table.apply(associate("s1", "a1", route1))
        _ = table.apply(associate("s1", "a2", route1))
        let effects = table.apply(associate("s1", "a2", route2, rate: 50))
        #expect(table.route(ofSource: "s1") == route2)
        #expect(table.sources["s1"]?.actorIds == ["a2"])
        #expect(table.actors(on: route1) == nil)
        #expect(table.actors(on: route2) == ["a2"])
        #expect(effects.subscribeRoutes == [route2])
        #expect(effects.unsubscribeRoutes == [route1])
    }

    @Test func actorSubscribesARouteOnceAndUnsubscribesWhenEmpty() {
        var table = IoRoutingTable(sourceIds: [], actorIds: ["a1", "a2"])
        #expect(table.apply(associate("s1", "a1", route1)).subscribeRoutes == [route1])
        #expect(table.apply(associate("s1", "a2", route1)).subscribeRoutes == [])
        #expect(Set(table.actors(on: route1) ?? []) == ["a1", "a2"])
        #expect(table.apply(associate("s1", "a1", nil)).unsubscribeRoutes == [])
        #expect(table.apply(associate("s1", "a2", nil)).unsubscribeRoutes == [route1])
    }

    @Test func actorStateIsFalseAfterAnyDisassociationEvenWithOtherSources() {
        var table = IoRoutingTable(sourceIds: [], actorIds: ["a1"])
        #expect(table.apply(associate("s1", "a1", route1)).states.map(\.state) == [IoState(hasAssociations: true)])
        _ = table.apply(associate("s2", "a1", "coaty/3/-/IOV/s2"))
        let effects = table.apply(associate("s1", "a1", nil))
        #expect(effects.states.map(\.state) == [IoState(hasAssociations: false)])
        // ... but it still receives from s2, and reports so when observed anew.
        #expect(table.actors(on: "coaty/3/-/IOV/s2") == ["a1"])
        #expect(table.initialState(of: "a1") == IoState(hasAssociations: true))
    }

    @Test func reassociationOnAnotherRouteMovesThePair() {
        var table = IoRoutingTable(sourceIds: [], actorIds: ["a1"])
        _ = table.apply(associate("s1", "a1", route1))
        let effects = table.apply(associate("s1", "a1", route2))
        #expect(effects.unsubscribeRoutes == [route1])
        #expect(effects.subscribeRoutes == [route2])
        #expect(effects.states.map(\.state) == [IoState(hasAssociations: true)])
    }

    @Test func sourceAndActorInTheSameAgent() {
        var table = IoRoutingTable(sourceIds: ["s1"], actorIds: ["a1"])
        let effects = table.apply(associate("s1", "a1", route1, rate: 10))
        #expect(effects.states.map(\.pointId) == ["s1", "a1"])
        #expect(
            effects.states.map(\.state) == [
                IoState(hasAssociations: true, updateRate: 10), IoState(hasAssociations: true),
            ])
        #expect(table.initialState(of: "s1") == IoState(hasAssociations: true, updateRate: 10))
        #expect(table.initialState(of: "a1") == IoState(hasAssociations: true))
        #expect(table.initialState(of: "x") == IoState(hasAssociations: false))
    }

    /// The indexes by actor (which an Associate uses) and by source (which a zero-loss frame uses) instead of
    /// looking at every route say what `actorsByRoute` says, and the effects name exactly the routes that came, went, or gained or lost an own actor: after every
    /// Associate of every sequence of four from own and foreign sources and actors, two routes and disassociations.
    @Test func theActorIndexAndTheEffectsFollowTheRoutesInEverySequence() async throws {
        // About 100,000 sequences: seconds of a debug build's work, kept off the threads the other suites share.
        let mismatches = try await onOwnThread { [self] in exploreEverySequence(depth: 4) }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(3))")
    }

    private func exploreEverySequence(depth: Int) -> [String] {
        let table = IoRoutingTable(sourceIds: ["s1"], actorIds: ["a1", "a2"])
        let events = ["s1", "s2"].flatMap { source in
            ["a1", "a2", "x"].flatMap { actor in [route1, route2, nil].map { associate(source, actor, $0) } }
        }
        var mismatches: [String] = []
        func explore(_ table: IoRoutingTable, depth: Int, path: [AssociateEvent]) {
            guard depth > 0, mismatches.isEmpty else { return }
            for event in events {
                var next = table
                let effects = next.apply(event)
                let steps = path + [event]
                let before = table.actorsByRoute.mapValues { Set($0.keys) }
                let after = next.actorsByRoute.mapValues { Set($0.keys) }
                let changed = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }
                if Set(effects.subscribeRoutes) != Set(after.keys).subtracting(before.keys)
                    || Set(effects.unsubscribeRoutes) != Set(before.keys).subtracting(after.keys)
                    || Set(effects.actorChangedRoutes) != changed
                {
                    mismatches.append("effects after \(steps.map(describe))")
                }
                for source in ["s1", "s2"] {
                    let routes = Set(
                        next.actorsByRoute.filter { $0.value.values.contains { $0.contains(source) } }.keys)
                    let route = next.route(ofAssociatedSource: source)
                    if route.map({ !routes.contains($0) }) ?? !routes.isEmpty
                        || next.associatedSourceIds.contains(source) == routes.isEmpty
                    {
                        mismatches.append("\(source)'s route after \(steps.map(describe))")
                    }
                }
                for actor in ["a1", "a2"] {
                    let routes = Set(after.filter { $0.value.contains(actor) }.keys)
                    if next.routes(ofActor: actor) != routes
                        || next.initialState(of: actor) != IoState(hasAssociations: !routes.isEmpty)
                    {
                        mismatches.append("\(actor) after \(steps.map(describe))")
                    }
                }
                explore(next, depth: depth - 1, path: steps)
            }
        }
        explore(table, depth: depth, path: [])
        return mismatches
    }

    private func describe(_ event: AssociateEvent) -> String {
        "\(event.ioSourceId)->\(event.ioActorId) on \(event.associatingRoute ?? "none")"
    }
}
