import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel

/// What `observe` knows of the IO routing on the broker, learnt from the wire only, so that it works with every
/// Coaty agent: the agents and the IO sources and actors of their nodes (presence), the associations routers
/// announce (Associate), the values on the routes, the device status and IO contexts agents advertise.
///
/// It is fed one input at a time, each with its time (ms since 1970), and answers with the events to report and
/// the routes and contexts to start watching. Values of sources associated before `observe` started arrive on the
/// route a router in the source's namespace builds, `coaty/3/<ns>/IOV/<sourceId>` (or the source's external
/// route), so those routes are watched for every source from the start.
public struct ObserveModel: Sendable {
    public struct SourceInfo: Sendable, Hashable {
        public var id: String
        public var name: String
        public var valueType: String
        public var isRaw: Bool
        public var externalRoute: String?
        public var agentId: String
        public var agentName: String
        public var context: String

        var json: JSONValue {
            [
                "objectId": .string(id), "name": .string(name), "valueType": .string(valueType),
                "context": .string(context),
            ]
        }
    }

    public struct ActorInfo: Sendable, Hashable {
        public var id: String
        public var name: String
        public var valueType: String
        public var agentId: String
        public var agentName: String
        public var context: String

        var json: JSONValue {
            [
                "objectId": .string(id), "name": .string(name), "valueType": .string(valueType),
                "context": .string(context),
            ]
        }
    }

    /// Which sources to report: by IO context, by source objectId or name, by value type, by the name of the agent
    /// (a shell pattern, which also selects the agents and device status reported).
    public struct Filter: Sendable, Hashable {
        public var context: String?
        public var source: String?
        public var valueType: String?
        public var agent: NamePattern?

        public init(context: String? = nil, source: String? = nil, valueType: String? = nil, agent: NamePattern? = nil)
        {
            self.context = context
            self.source = source
            self.valueType = valueType
            self.agent = agent
        }

        func admits(sourceId: String, _ source: SourceInfo?, context: String? = nil) -> Bool {
            if let wanted = self.context, (context ?? source?.context) != wanted { return false }
            if let wanted = self.source, sourceId != wanted, source?.name != wanted { return false }
            if let wanted = valueType, source?.valueType != wanted { return false }
            if let agent, !(source.map { agent.matches($0.agentName) } ?? false) { return false }
            return true
        }

        func admits(agentName: String?) -> Bool {
            agent.map { pattern in agentName.map(pattern.matches) ?? false } ?? true
        }
    }

    /// What happened since the last summary: for `observe --summary`, one line per interval.
    public struct Summary: Sendable, Hashable {
        public var agents: Int
        public var joined: Int
        public var left: Int
        public var sources: Int
        /// Sources with at least one association.
        public var routedSources: Int
        public var values: Int
        /// Agents whose device status has a failing device.
        public var failingAgents: Int

        /// `12:00:05  1000 agents (+3 joined, -1 left), 1000 sources (980 routed), 120.0 values/s, 2 agents with failing devices`
        public func line(time: String, seconds: Double) -> String {
            let rate = seconds > 0 ? Double(values) / seconds : 0
            return
                "\(time)  \(agents) agents (+\(joined) joined, -\(left) left), \(sources) sources (\(routedSources) routed), "
                + "\((rate * 10).rounded() / 10) values/s, \(failingAgents) agents with failing devices"
        }
    }

    struct Tally {
        var joined = 0
        var left = 0
        var values = 0
    }

    /// What to report, and what to watch from now on.
    public struct Changes: Sendable, Hashable {
        public var events: [ObserveEvent] = []
        public var newRoutes: [String] = []
        public var newContexts: [String] = []
    }

    /// One row of the live table: a source, its last value and who receives it.
    public struct Row: Sendable, Hashable {
        public var sourceId: String
        public var source: String
        public var agent: String
        public var context: String
        public var value: String
        public var rate: Double?
        /// Milliseconds since the last value.
        public var age: Int64?
        public var actors: [String]
    }

    struct Association: Hashable {
        var route: String
        var updateRate: Double?
        var routerId: String
        var rule: String?
    }

    struct AssociationKey: Hashable {
        var context: String
        var sourceId: String
        var actorId: String
    }

    struct SourceActivity {
        var last: ObservedValue
        var lastTime: Int64
        var route: String
        var rates: RateWindow
    }

    public let filter: Filter
    /// The agent `observe` runs as, which it does not report (nor other command-line clients).
    public let ownAgentId: String
    private(set) var agents: [String: AgentInfo] = [:]
    private(set) var sources: [String: SourceInfo] = [:]
    private(set) var actors: [String: ActorInfo] = [:]
    private(set) var associations: [AssociationKey: Association] = [:]
    private(set) var routeSources: [String: String] = [:]
    private(set) var contexts: Set<String> = []
    private var namespaces: Set<String> = []
    private var activity: [String: SourceActivity] = [:]
    private var deviceStatus: [String: [JSONValue]] = [:]
    private var contextObjects: [String: JSONObject] = [:]
    private var tally = Tally()

    public init(filter: Filter = Filter(), ownAgentId: String) {
        self.filter = filter
        self.ownAgentId = ownAgentId
    }

    // MARK: - Inputs

    public mutating func apply(_ change: PresenceChange, at time: Int64) -> Changes {
        var changes = Changes()
        switch change {
        case .joined(let agent), .updated(let agent):
            guard agent.agentId != ownAgentId, agent.name != ClientSession.identityName else { return changes }
            let previous = agents.updateValue(agent, forKey: agent.agentId)
            learn(agent, changes: &changes)
            guard filter.admits(agentName: agent.name) else { return changes }
            if previous == nil {
                tally.joined += 1
                changes.events.append(.agentJoined(seen(agent, at: time)))
            } else if previous?.ioNodes != agent.ioNodes {
                changes.events.append(.agentUpdated(seen(agent, at: time)))
            }
        case .left(let agent):
            guard agents.removeValue(forKey: agent.agentId) != nil else { return changes }
            let event = seen(agent, at: time)
            for source in event.sources {
                sources[source.id] = nil
                activity[source.id] = nil
            }
            for actor in event.actors { actors[actor.id] = nil }
            deviceStatus[agent.agentId] = nil
            guard filter.admits(agentName: agent.name) else { return changes }
            tally.left += 1
            changes.events.append(.agentLeft(event))
        }
        return changes
    }

    /// An Associate from a router (`routerId` is the publishing agent).
    public mutating func apply(_ event: AssociateEvent, routerId: String, at time: Int64, rule: String? = nil)
        -> Changes
    {
        var changes = Changes()
        let key = AssociationKey(context: event.ioContextName, sourceId: event.ioSourceId, actorId: event.ioActorId)
        let change = ObserveEvent.AssociationChange(
            time: time, context: event.ioContextName, routerId: routerId, sourceId: event.ioSourceId,
            sourceName: sources[event.ioSourceId]?.name, actorId: event.ioActorId,
            actorName: actors[event.ioActorId]?.name,
            route: event.associatingRoute, updateRate: event.updateRate, rule: rule)
        let admitted = filter.admits(
            sourceId: event.ioSourceId, sources[event.ioSourceId], context: event.ioContextName)
        if let route = event.associatingRoute {
            let association = Association(
                route: route, updateRate: event.updateRate, routerId: routerId, rule: rule ?? associations[key]?.rule)
            guard associations[key] != association else { return changes }
            associations[key] = association
            watch(route, of: event.ioSourceId, changes: &changes)
            if admitted { changes.events.append(.associated(change)) }
        } else {
            // Reported even for a pair not seen associated: a Coaty JS router cannot be asked for the pairs it
            // associated before observe started, and it disassociates each pair only once.
            associations[key] = nil
            if admitted { changes.events.append(.disassociated(change)) }
        }
        return changes
    }

    /// A coaty-edge router's answer to `IoRouter.associationsOperation`: its context and current associations,
    /// with the rules that made them.
    public mutating func applyRouterAssociations(_ result: JSONValue, routerId: String, at time: Int64) -> Changes {
        var changes = Changes()
        if let context = result["context"]?.objectValue {
            merge(&changes, self.apply(context: context, at: time))
        }
        guard let context = result["context"]?["name"]?.stringValue else { return changes }
        for entry in result["associations"]?.arrayValue ?? [] {
            guard let sourceId = entry["sourceId"]?.stringValue, let actorId = entry["actorId"]?.stringValue,
                let route = entry["route"]?.stringValue
            else { continue }
            let event = AssociateEvent(
                ioContextName: context, ioSourceId: sourceId, ioActorId: actorId, associatingRoute: route,
                updateRate: entry["updateRate"]?.numberValue)
            merge(&changes, apply(event, routerId: routerId, at: time, rule: entry["rule"]?.stringValue))
        }
        return changes
    }

    /// A payload on a watched route; nil when the filter leaves its source out.
    public mutating func applyValue(_ payload: [UInt8], on route: String, at time: Int64) -> ObserveEvent? {
        guard let sourceId = routeSources[route] else { return nil }
        let source = sources[sourceId]
        let value = ObservedValue(payload: payload, isRaw: source?.isRaw ?? false)
        var state =
            activity[sourceId]
            ?? SourceActivity(last: value, lastTime: time, route: route, rates: RateWindow(start: time))
        state.last = value
        state.lastTime = time
        state.route = route
        state.rates.record(time)
        activity[sourceId] = state
        guard filter.admits(sourceId: sourceId, source) else { return nil }
        tally.values += 1
        return .value(
            .init(
                time: time, route: route, sourceId: sourceId, source: source, value: value,
                rate: state.rates.rate(at: time)))
    }

    /// A `coaty-edge.DeviceStatus` object, advertised or resolved; nil when nothing changed.
    public mutating func apply(deviceStatus object: CoatyObject, from agentId: String, at time: Int64) -> ObserveEvent?
    {
        let owner = object.parentObjectId ?? agentId
        let devices = object["devices"]?.arrayValue ?? []
        guard owner != ownAgentId, deviceStatus[owner] != devices else { return nil }
        deviceStatus[owner] = devices
        guard filter.admits(agentName: agents[owner]?.name) else { return nil }
        return .deviceStatus(.init(time: time, agentId: owner, agentName: agents[owner]?.name, devices: devices))
    }

    /// An IoContext, advertised or resolved.
    public mutating func apply(context object: JSONObject, at time: Int64) -> Changes {
        var changes = Changes()
        guard let name = object["name"]?.stringValue, let objectId = object["objectId"]?.stringValue else {
            return changes
        }
        addContext(name, changes: &changes)
        guard contextObjects[objectId] != object else { return changes }
        contextObjects[objectId] = object
        if filter.context == nil || filter.context == name {
            changes.events.append(
                .context(
                    .init(
                        time: time, name: name, objectId: objectId,
                        version: object[IoRouter.versionProperty]?.intValue ?? 0, object: object)))
        }
        return changes
    }

    // MARK: - The table

    /// One row per known source the filter admits, by agent and source name.
    public func rows(at time: Int64) -> [Row] {
        var ids = Set(sources.keys)
        ids.formUnion(activity.keys)
        ids.formUnion(associations.keys.map(\.sourceId))
        return ids.compactMap { id -> Row? in
            let source = sources[id]
            guard filter.admits(sourceId: id, source) else { return nil }
            let state = activity[id]
            let receivers = associations.filter { $0.key.sourceId == id }.map {
                actors[$0.key.actorId]?.name ?? $0.key.actorId
            }
            return Row(
                sourceId: id, source: source?.name ?? id, agent: source?.agentName ?? "",
                context: source?.context ?? "",
                value: state?.last.display() ?? "", rate: state?.rates.rate(at: time),
                age: state.map { time - $0.lastTime },
                actors: receivers.sorted())
        }
        .sorted { ($0.agent, $0.source, $0.sourceId) < ($1.agent, $1.source, $1.sourceId) }
    }

    public var agentCount: Int { agents.count }

    /// The counts now and what happened since the last call (which starts the next interval).
    public mutating func summary() -> Summary {
        let admittedAgents = agents.values.filter { filter.admits(agentName: $0.name) }
        let admittedSources = sources.filter { filter.admits(sourceId: $0.key, $0.value) }
        let routed = Set(associations.keys.map(\.sourceId)).filter { admittedSources[$0] != nil }
        let failing = admittedAgents.filter { agent in
            deviceStatus[agent.agentId]?.contains { $0["state"]?.stringValue == "failing" } ?? false
        }
        defer { tally = Tally() }
        return Summary(
            agents: admittedAgents.count, joined: tally.joined, left: tally.left, sources: admittedSources.count,
            routedSources: routed.count, values: tally.values, failingAgents: failing.count)
    }

    /// What the model knows now, as the events that would tell it to someone who just started watching: each
    /// agent joining, its device status, each IO context, each association, and each source's last value.
    public func replay(at time: Int64) -> [ObserveEvent] {
        var events = agents.values.sorted { ($0.name, $0.agentId) < ($1.name, $1.agentId) }.map {
            ObserveEvent.agentJoined(seen($0, at: time))
        }
        for (agentId, devices) in deviceStatus.sorted(by: { $0.key < $1.key }) {
            events.append(
                .deviceStatus(.init(time: time, agentId: agentId, agentName: agents[agentId]?.name, devices: devices)))
        }
        for (objectId, object) in contextObjects.sorted(by: { $0.key < $1.key }) {
            guard let name = object["name"]?.stringValue, filter.context == nil || filter.context == name else {
                continue
            }
            events.append(
                .context(
                    .init(
                        time: time, name: name, objectId: objectId,
                        version: object[IoRouter.versionProperty]?.intValue ?? 0, object: object)))
        }
        let pairs = associations.sorted {
            ($0.key.context, $0.key.sourceId, $0.key.actorId) < ($1.key.context, $1.key.sourceId, $1.key.actorId)
        }
        for (key, association) in pairs
        where filter.admits(sourceId: key.sourceId, sources[key.sourceId], context: key.context) {
            events.append(
                .associated(
                    .init(
                        time: time, context: key.context, routerId: association.routerId, sourceId: key.sourceId,
                        sourceName: sources[key.sourceId]?.name, actorId: key.actorId,
                        actorName: actors[key.actorId]?.name,
                        route: association.route, updateRate: association.updateRate, rule: association.rule)))
        }
        for (sourceId, state) in activity.sorted(by: { $0.key < $1.key })
        where filter.admits(sourceId: sourceId, sources[sourceId]) {
            events.append(
                .value(
                    .init(
                        time: state.lastTime, route: state.route, sourceId: sourceId, source: sources[sourceId],
                        value: state.last,
                        rate: state.rates.rate(at: time))))
        }
        return events
    }

    // MARK: - Learning

    private mutating func learn(_ agent: AgentInfo, changes: inout Changes) {
        if namespaces.insert(agent.namespace).inserted {
            // Sources already known may be routed by a router of this namespace.
            for source in sources.values { watchDefaultRoutes(of: source, changes: &changes) }
        }
        for node in agent.ioNodes {
            addContext(node.contextName, changes: &changes)
            for source in node.ioSources {
                let info = SourceInfo(
                    id: source.objectId, name: source.name, valueType: source.valueType, isRaw: source.useRawIoValues,
                    externalRoute: source.externalRoute, agentId: agent.agentId, agentName: agent.name,
                    context: node.contextName)
                sources[source.objectId] = info
                watchDefaultRoutes(of: info, changes: &changes)
            }
            for actor in node.ioActors {
                actors[actor.objectId] = ActorInfo(
                    id: actor.objectId, name: actor.name, valueType: actor.valueType, agentId: agent.agentId,
                    agentName: agent.name, context: node.contextName)
            }
        }
    }

    private mutating func watchDefaultRoutes(of source: SourceInfo, changes: inout Changes) {
        if let route = source.externalRoute {
            watch(route, of: source.id, changes: &changes)
            return
        }
        for namespace in namespaces {
            watch(CoatyTopic.ioValueRoute(namespace: namespace, sourceId: source.id), of: source.id, changes: &changes)
        }
    }

    private mutating func watch(_ route: String, of sourceId: String, changes: inout Changes) {
        if routeSources.updateValue(sourceId, forKey: route) == nil {
            changes.newRoutes.append(route)
        }
    }

    private mutating func addContext(_ name: String, changes: inout Changes) {
        guard filter.context == nil || filter.context == name else { return }
        if contexts.insert(name).inserted { changes.newContexts.append(name) }
    }

    private func seen(_ agent: AgentInfo, at time: Int64) -> ObserveEvent.AgentSeen {
        var sources: [SourceInfo] = []
        var actors: [ActorInfo] = []
        for node in agent.ioNodes {
            sources += node.ioSources.map {
                SourceInfo(
                    id: $0.objectId, name: $0.name, valueType: $0.valueType, isRaw: $0.useRawIoValues,
                    externalRoute: $0.externalRoute,
                    agentId: agent.agentId, agentName: agent.name, context: node.contextName)
            }
            actors += node.ioActors.map {
                ActorInfo(
                    id: $0.objectId, name: $0.name, valueType: $0.valueType, agentId: agent.agentId,
                    agentName: agent.name, context: node.contextName)
            }
        }
        return .init(
            time: time, agentId: agent.agentId, name: agent.name, namespace: agent.namespace, sources: sources,
            actors: actors)
    }

    private func merge(_ changes: inout Changes, _ more: Changes) {
        changes.events += more.events
        changes.newRoutes += more.newRoutes
        changes.newContexts += more.newContexts
    }
}
