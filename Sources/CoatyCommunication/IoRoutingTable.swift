import CoatyModel

/// What an agent knows of the associations of its own IO points, kept exactly as Coaty JS keeps it
/// (`_handleAssociate`), so that the IoState it reports matches a JS agent's in every case, quirks included.
struct IoRoutingTable: Sendable {
    struct SourceEntry: Sendable, Equatable {
        var route: String
        var actorIds: [String]
        var updateRate: Double?
    }

    /// What handling an Associate changed, for the manager to act on.
    struct Effects: Sendable, Equatable {
        var subscribeRoutes: [String] = []
        var unsubscribeRoutes: [String] = []
        var states: [(pointId: String, state: IoState)] = []
        /// The association was refused: its own point has `maximumAssociations` already. Nothing changed.
        var isRefused = false

        static func == (lhs: Effects, rhs: Effects) -> Bool {
            lhs.subscribeRoutes == rhs.subscribeRoutes && lhs.unsubscribeRoutes == rhs.unsubscribeRoutes
                && lhs.states.map(\.pointId) == rhs.states.map(\.pointId)
                && lhs.states.map(\.state) == rhs.states.map(\.state)
                && lhs.isRefused == rhs.isRefused
        }
    }

    /// The most associations one own source (actors) or actor (sources) keeps: any agent can send Associates, and
    /// each new route of an actor is a subscription. A router associates far fewer pairs with one point.
    static let maximumAssociations = 1024

    private(set) var sources: [String: SourceEntry] = [:]
    /// Per route, per own actor, the sources associated on it.
    private(set) var actorsByRoute: [String: [String: [String]]] = [:]
    private let ownSourceIds: Set<String>
    private let ownActorIds: Set<String>

    init(sourceIds: some Sequence<String>, actorIds: some Sequence<String>) {
        ownSourceIds = Set(sourceIds)
        ownActorIds = Set(actorIds)
    }

    func isOwnSource(_ id: String) -> Bool { ownSourceIds.contains(id) }
    func isOwnActor(_ id: String) -> Bool { ownActorIds.contains(id) }

    /// The route an own source publishes on while it is associated.
    func route(ofSource sourceId: String) -> String? { sources[sourceId]?.route }

    /// The own actors that receive values on a route.
    func actors(on route: String) -> [String]? { actorsByRoute[route].map { Array($0.keys) } }

    /// The state an IO point reports when it is first observed.
    func initialState(of pointId: String) -> IoState {
        if let entry = sources[pointId] {
            return IoState(hasAssociations: true, updateRate: entry.updateRate)
        }
        // The update rate never reaches actors.
        let isAssociated = actorsByRoute.values.contains { $0[pointId] != nil }
        return IoState(hasAssociations: isAssociated, updateRate: nil)
    }

    mutating func apply(_ event: AssociateEvent) -> Effects {
        let isSource = ownSourceIds.contains(event.ioSourceId)
        let isActor = ownActorIds.contains(event.ioActorId)
        var effects = Effects()
        guard isSource || isActor else { return effects }
        if event.associatingRoute != nil && !admitsAssociation(of: event, isSource: isSource, isActor: isActor) {
            effects.isRefused = true
            return effects
        }

        if isSource {
            updateSource(
                event.ioSourceId, actorId: event.ioActorId, route: event.associatingRoute,
                updateRate: event.updateRate, effects: &effects)
        }
        if isActor {
            if let route = event.associatingRoute {
                associateActor(event.ioActorId, sourceId: event.ioSourceId, route: route, effects: &effects)
            } else {
                disassociateActor(event.ioActorId, sourceId: event.ioSourceId, effects: &effects)
            }
        }

        if isSource {
            let entry = sources[event.ioSourceId]
            effects.states.append(
                (event.ioSourceId, IoState(hasAssociations: entry != nil, updateRate: entry?.updateRate)))
        }
        if isActor {
            // False after any disassociation, even if other sources remain: Coaty's behaviour.
            let hasSources =
                event.associatingRoute.flatMap { actorsByRoute[$0]?[event.ioActorId]?.isEmpty == false } ?? false
            effects.states.append((event.ioActorId, IoState(hasAssociations: hasSources, updateRate: nil)))
        }
        return effects
    }

    /// Whether associating the event's pair keeps its own points within `maximumAssociations`.
    private func admitsAssociation(of event: AssociateEvent, isSource: Bool, isActor: Bool) -> Bool {
        if isSource, let entry = sources[event.ioSourceId], entry.route == event.associatingRoute,
            !entry.actorIds.contains(event.ioActorId), entry.actorIds.count >= Self.maximumAssociations
        {
            return false
        }
        if isActor {
            // The pair moves to the new route, so only the actor's other sources count.
            let otherSources = actorsByRoute.values.reduce(0) { count, actors in
                count + (actors[event.ioActorId]?.count { $0 != event.ioSourceId } ?? 0)
            }
            if otherSources >= Self.maximumAssociations { return false }
        }
        return true
    }

    private mutating func updateSource(
        _ sourceId: String, actorId: String, route: String?, updateRate: Double?, effects: inout Effects
    ) {
        if let route {
            guard var entry = sources[sourceId] else {
                sources[sourceId] = SourceEntry(route: route, actorIds: [actorId], updateRate: updateRate)
                return
            }
            if entry.route == route {
                if !entry.actorIds.contains(actorId) { entry.actorIds.append(actorId) }
            } else {
                let previousRoute = entry.route
                for previousActor in entry.actorIds {
                    disassociateActor(previousActor, sourceId: sourceId, onlyOn: previousRoute, effects: &effects)
                }
                entry.route = route
                entry.actorIds = [actorId]
            }
            // Set in every case, even to nil.
            entry.updateRate = updateRate
            sources[sourceId] = entry
        } else if var entry = sources[sourceId] {
            entry.actorIds.removeAll { $0 == actorId }
            entry.updateRate = updateRate
            sources[sourceId] = entry.actorIds.isEmpty ? nil : entry
        }
    }

    private mutating func associateActor(_ actorId: String, sourceId: String, route: String, effects: inout Effects) {
        disassociateActor(actorId, sourceId: sourceId, except: route, effects: &effects)
        if var actors = actorsByRoute[route] {
            var sourceIds = actors[actorId] ?? []
            if !sourceIds.contains(sourceId) { sourceIds.append(sourceId) }
            actors[actorId] = sourceIds
            actorsByRoute[route] = actors
        } else {
            actorsByRoute[route] = [actorId: [sourceId]]
            effects.subscribeRoutes.append(route)
        }
    }

    /// Removes the pair from one route (`onlyOn`), or from every route but `except`; unsubscribes routes left empty.
    private mutating func disassociateActor(
        _ actorId: String, sourceId: String, onlyOn: String? = nil, except: String? = nil, effects: inout Effects
    ) {
        let routes = onlyOn.map { [$0] } ?? Array(actorsByRoute.keys)
        for route in routes where route != except {
            guard var actors = actorsByRoute[route], var sourceIds = actors[actorId] else { continue }
            sourceIds.removeAll { $0 == sourceId }
            actors[actorId] = sourceIds.isEmpty ? nil : sourceIds
            if actors.isEmpty {
                actorsByRoute[route] = nil
                effects.unsubscribeRoutes.append(route)
            } else {
                actorsByRoute[route] = actors
            }
        }
    }
}

/// The association state of one IO point, as the receiver of Associate events sees it.
public struct IoState: Sendable, Hashable {
    public var hasAssociations: Bool
    /// Milliseconds; only sources get one.
    public var updateRate: Double?

    public init(hasAssociations: Bool, updateRate: Double? = nil) {
        self.hasAssociations = hasAssociations
        self.updateRate = updateRate
    }
}
