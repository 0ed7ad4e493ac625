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
        /// The routes on which an own actor was added or removed (or which came or went): the manager rebuilds the
        /// delivery of these alone.
        var actorChangedRoutes: [String] = []
        var states: [(pointId: String, state: IoState)] = []
        /// The association was refused: its own point has `maximumAssociations` already. Nothing changed.
        var isRefused = false

        static func == (lhs: Effects, rhs: Effects) -> Bool {
            lhs.subscribeRoutes == rhs.subscribeRoutes && lhs.unsubscribeRoutes == rhs.unsubscribeRoutes
                && lhs.actorChangedRoutes == rhs.actorChangedRoutes
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
    /// `actorsByRoute` the other way round: per own actor, per source associated with it, the route of the pair (a
    /// pair is on one route at a time), so that an Associate finds its pair without looking at every route.
    private var routesByActor: [String: [String: String]] = [:]
    /// Per source associated with an own actor, the routes of its pairs and how many pairs are on each (one route,
    /// but for the moments in which a route change has reached some of its actors and not yet the others), so that
    /// a zero-loss frame finds its route without looking at every route.
    private var pairsBySource: [String: [String: Int]] = [:]
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

    /// The routes on which an own actor receives values.
    func routes(ofActor actorId: String) -> Set<String> { routesByActor[actorId].map { Set($0.values) } ?? [] }

    /// A route on which an own actor receives the values of a source (own or not); nil while none does.
    func route(ofAssociatedSource sourceId: String) -> String? { pairsBySource[sourceId]?.keys.first }

    /// The sources (own or not) associated with an own actor.
    var associatedSourceIds: Set<String> { Set(pairsBySource.keys) }

    /// The state an IO point reports when it is first observed.
    func initialState(of pointId: String) -> IoState {
        if let entry = sources[pointId] {
            return IoState(hasAssociations: true, updateRate: entry.updateRate)
        }
        // The update rate never reaches actors.
        return IoState(hasAssociations: routesByActor[pointId] != nil, updateRate: nil)
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
            let sources = routesByActor[event.ioActorId] ?? [:]
            let otherSources = sources.count - (sources[event.ioSourceId] == nil ? 0 : 1)
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
        if routesByActor[actorId]?[sourceId] == nil { pairsBySource[sourceId, default: [:]][route, default: 0] += 1 }
        routesByActor[actorId, default: [:]][sourceId] = route
        if actorsByRoute[route] == nil {
            actorsByRoute[route] = [actorId: [sourceId]]
            effects.subscribeRoutes.append(route)
            effects.actorChangedRoutes.append(route)
        } else if actorsByRoute[route]?[actorId] == nil {
            actorsByRoute[route]?[actorId] = [sourceId]
            effects.actorChangedRoutes.append(route)
        } else if actorsByRoute[route]?[actorId]?.contains(sourceId) == false {
            actorsByRoute[route]?[actorId]?.append(sourceId)
        }
    }

    /// Removes the pair from its route if that is `onlyOn` (when given) and not `except`; unsubscribes a route left
    /// empty.
    private mutating func disassociateActor(
        _ actorId: String, sourceId: String, onlyOn: String? = nil, except: String? = nil, effects: inout Effects
    ) {
        guard let route = routesByActor[actorId]?[sourceId], route != except, onlyOn == nil || route == onlyOn
        else { return }
        routesByActor[actorId]?[sourceId] = nil
        if routesByActor[actorId]?.isEmpty == true { routesByActor[actorId] = nil }
        let pairsLeft = (pairsBySource[sourceId]?[route] ?? 1) - 1
        pairsBySource[sourceId]?[route] = pairsLeft > 0 ? pairsLeft : nil
        if pairsBySource[sourceId]?.isEmpty == true { pairsBySource[sourceId] = nil }
        actorsByRoute[route]?[actorId]?.removeAll { $0 == sourceId }
        guard actorsByRoute[route]?[actorId]?.isEmpty == true else { return }
        actorsByRoute[route]?[actorId] = nil
        effects.actorChangedRoutes.append(route)
        if actorsByRoute[route]?.isEmpty == true {
            actorsByRoute[route] = nil
            effects.unsubscribeRoutes.append(route)
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
