import CoatyJSON
import CoatyModel
import Synchronization

/// An agent that is online, as its Identity and IoNode advertisements describe it.
public struct AgentInfo: Sendable, Hashable {
    public var identity: Identity
    public var namespace: String
    /// The IO nodes the agent advertised, by objectId.
    public var ioNodes: [IoNode]

    public init(identity: Identity, namespace: String, ioNodes: [IoNode]) {
        self.identity = identity
        self.namespace = namespace
        self.ioNodes = ioNodes
    }

    public var agentId: String { identity.objectId }
    public var name: String { identity.name }
}

/// When an `AgentPresence` starts to track the fleet.
public enum PresenceTracking: Sendable, Hashable {
    /// As soon as `run()` runs: for a client that is there to look at the fleet.
    case immediately
    /// From the first use of `agents`, `agent(_:)`, `count` or `changes()` on: for an agent, whose controllers may
    /// never look at other agents.
    case onFirstUse
}

public enum PresenceChange: Sendable, Hashable {
    case joined(AgentInfo)
    /// The agent advertised or deadvertised IO nodes.
    case updated(AgentInfo)
    /// The agent deadvertised itself, or died and the broker published its last will, or it neither answered nor
    /// advertised itself when this agent came back online.
    case left(AgentInfo)
}

/// How much an `AgentPresence` keeps about other agents. Past a bound, a new agent or IO node is refused (counted
/// in `coaty_edge_retention_refused_total{store="agent presence"}` and logged within a budget); what is known stays.
public struct PresenceLimits: Sendable, Hashable {
    /// Agents (with those whose nodes arrived before their identity), and the bytes of their identities and nodes
    /// as JSON text.
    public var agents: RetentionLimit
    /// IO nodes of one agent (Coaty agents advertise one per IO context).
    public var maximumNodesPerAgent: Int

    /// A fleet of a few thousand agents: an agent with one IO node of a few points takes about 2 KiB, so 4096 such
    /// agents take 8 MiB of the 32 MiB.
    public static let defaultAgents = RetentionLimit(maximumCount: 4096, maximumBytes: 32 * 1024 * 1024)

    public init(agents: RetentionLimit = PresenceLimits.defaultAgents, maximumNodesPerAgent: Int = 64) {
        self.agents = agents
        self.maximumNodesPerAgent = maximumNodesPerAgent
    }
}

/// Which agents are online now, from their Identity and IoNode advertisements, Deadvertises and last wills.
///
/// Run it while the manager runs (`run()` returns when the task is cancelled). On every connect it asks all
/// agents for their identity and IO nodes, and agents that no longer answer are taken as gone, since their wills
/// may have gone out while this agent was offline.
///
/// That costs the fleet: every agent answers the census, and every advertisement of every agent reaches each
/// tracking agent, so n agents that all track each other exchange about n² messages when they start. An agent's
/// presence (`PresenceTracking.onFirstUse`) therefore tracks only once something looks at it, as Coaty JS agents
/// discover others only when a controller asks; a command-line client tracks at once.
public final class AgentPresence: Sendable {
    private struct State {
        var agents: [String: AgentInfo] = [:]
        /// Nodes whose agent's identity has not arrived yet.
        var pendingNodes: [String: [IoNode]] = [:]
        /// The agent of every node known (of `agents` and `pendingNodes`), so that a Deadvertise of a node finds it
        /// without a search through all agents.
        var nodeOwners: [String: String] = [:]
        /// For the limits: per agent (known, or pending with nodes only), the bytes of its identity and of each node
        /// as JSON; and their sum.
        var sizes: [String: [Part: Int]] = [:]
        var totalBytes = 0
        /// During a census: the agents whose identity arrived since it began, by Resolve or by Advertise (an agent
        /// that reconnects after this one misses the Discover but advertises itself).
        var seenDuringCensus: Set<String>?

        /// What an agent's size is made of: its identity and its nodes, by objectId.
        enum Part: Hashable {
            case identity
            case node(String)
        }

        func size(of part: Part, agent agentId: String) -> Int {
            sizes[agentId]?[part] ?? 0
        }

        /// Records the size of a part of the agent; nil when it is gone.
        mutating func setSize(_ size: Int?, of part: Part, agent agentId: String) {
            totalBytes += (size ?? 0) - self.size(of: part, agent: agentId)
            sizes[agentId, default: [:]][part] = size
        }

        mutating func forgetSizes(of agentId: String) {
            totalBytes -= sizes.removeValue(forKey: agentId)?.values.reduce(0, +) ?? 0
        }
    }

    private enum Outcome {
        case unchanged
        case changed(PresenceChange)
        /// What was refused, for the log.
        case refused(String)
    }

    private let manager: CommunicationManager
    private let censusTimeout: Duration
    private let limits: PresenceLimits
    private let tracking: PresenceTracking
    private let refusals: RetentionRefusals
    private let state = WatchedState<State, PresenceChange>(State())
    /// Whether `agents`, `agent(_:)`, `count` or `changes()` was used: `run()` waits for it with `.onFirstUse`.
    private let isUsed = CurrentValueBroadcast(false)

    /// - Parameters:
    ///   - censusTimeout: how long to wait for answers after connecting before agents that did not answer are
    ///     asked again (see `CensusRounds`: 3 + 6 + 12 s by default) and then taken as gone.
    ///   - limits: how many agents and nodes, and how many bytes of them, it keeps.
    ///   - tracking: whether `run()` tracks at once or from the first use.
    public init(
        manager: CommunicationManager, censusTimeout: Duration = .seconds(3), limits: PresenceLimits = PresenceLimits(),
        tracking: PresenceTracking = .immediately
    ) {
        self.manager = manager
        self.censusTimeout = censusTimeout
        self.limits = limits
        self.tracking = tracking
        refusals = RetentionRefusals(store: "agent presence", logger: manager.logger)
    }

    /// How many identities and nodes were refused because the limits were reached.
    public var refusedCount: Int { refusals.count }

    /// Whether it tracks the fleet now (with `.onFirstUse`, from the first use while `run()` runs).
    public var isTracking: Bool { tracking == .immediately || isUsed.value }

    /// The agents online now, by name.
    public var agents: [AgentInfo] {
        isUsed.send(true)
        return state.withState { Array($0.agents.values) }.sorted { ($0.name, $0.agentId) < ($1.name, $1.agentId) }
    }

    /// How many agents are online now.
    public var count: Int {
        isUsed.send(true)
        return state.withState { $0.agents.count }
    }

    public func agent(_ agentId: String) -> AgentInfo? {
        isUsed.send(true)
        return state.withState { $0.agents[agentId] }
    }

    /// Every change from now on.
    public func changes() -> ObservationStream<PresenceChange> {
        isUsed.send(true)
        return state.watch()
    }

    /// Tracks presence until cancelled, across stops and restarts of the manager; with `.onFirstUse`, from the
    /// first use on.
    public func run() async {
        if tracking == .onFirstUse {
            for await used in isUsed.stream() where used { break }
        }
        for await operatingState in manager.operatingStates() where operatingState == .started {
            await track()
            forgetAll()
        }
    }

    /// One run of the manager: ends when the manager stops (its streams end) or the task is cancelled.
    private func track() async {
        // The agent knows itself without hearing its own advertisement or its answer to its census, either of which
        // can pass before the observations below are subscribed, or after a short census.
        add(manager.identity, namespace: manager.options.namespace)
        let identities = manager.observeAdvertise(coreType: .identity)
        let nodes = manager.observeAdvertise(coreType: .ioNode)
        let deadvertises = manager.observeDeadvertise()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await advertise in identities {
                    guard let identity = try? Identity(advertise.event.object) else { continue }
                    self.add(identity, namespace: advertise.namespace)
                }
            }
            group.addTask {
                for await advertise in nodes {
                    guard let node = try? IoNode(advertise.event.object) else { continue }
                    self.add(node, of: advertise.sourceId)
                }
            }
            group.addTask {
                for await deadvertise in deadvertises {
                    self.remove(deadvertise.event.objectIds)
                }
            }
            group.addTask {
                // A reconnect during a census starts it afresh: the agents are asked on the new connection at once.
                var census: Task<Void, Never>?
                for await communicationState in self.manager.communicationStates() where communicationState == .online {
                    census?.cancel()
                    await census?.value
                    census = Task { await self.takeCensus() }
                }
                census?.cancel()
            }
            // The manager's streams end when it stops; the state stream does not, so end the group then.
            for await operatingState in manager.operatingStates() where operatingState == .stopped {
                break
            }
            group.cancelAll()
        }
    }

    /// Asks every agent for its identity and nodes, again while agents known before have not been heard of (see
    /// `CensusRounds`); agents known before that neither answer nor advertise their identity meanwhile are gone.
    /// Answers that come later are taken until the next census or the stop.
    private func takeCensus() async {
        // The agent itself is not asked after: it knows itself (`track()`).
        let ownId = manager.identity.objectId
        let before = state.withState { state in
            state.seenDuringCensus = []
            return Set(state.agents.keys).subtracting([ownId])
        }
        let isComplete: @Sendable () -> Bool = { [self] in
            // One that deadvertised itself meanwhile is not waited for.
            self.state.withState { state in
                before.subtracting(state.seenDuringCensus ?? []).allSatisfy { state.agents[$0] == nil }
            }
        }
        let ended = { [self] in
            let seen = state.withState { state in
                defer { state.seenDuringCensus = nil }
                return state.seenDuringCensus ?? []
            }
            guard manager.operatingState == .started else { return }
            remove(Array(before.subtracting(seen)))
        }
        await CensusRounds.run(firstWait: censusTimeout, isComplete: isComplete, ended: ended) {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await resolve in self.manager.publishDiscover(.coreTypes([.identity])) {
                        guard let object = resolve.event.object, let identity = try? Identity(object) else { continue }
                        self.add(identity, namespace: resolve.namespace)
                    }
                }
                group.addTask {
                    for await resolve in self.manager.publishDiscover(.coreTypes([.ioNode])) {
                        guard let object = resolve.event.object, let node = try? IoNode(object) else { continue }
                        self.add(node, of: resolve.sourceId)
                    }
                }
            }
        }
        // Cancelled, by the next census or the stop; one cut short before its last round decided nothing.
        state.withState { $0.seenDuringCensus = nil }
    }

    private func add(_ identity: Identity, namespace: String) {
        let size = Self.size(of: identity.object)
        update { state in
            state.seenDuringCensus?.insert(identity.objectId)
            let agentId = identity.objectId
            if var agent = state.agents[agentId] {
                guard agent.identity != identity || agent.namespace != namespace else { return .unchanged }
                let growth = size - state.size(of: .identity, agent: agentId)
                guard
                    limits.agents.admits(
                        count: state.sizes.count, bytes: state.totalBytes, isNew: false, growth: growth)
                else {
                    return .refused("the changed identity of agent \(agentId), \(growth) bytes larger")
                }
                agent.identity = identity
                agent.namespace = namespace
                state.agents[agentId] = agent
                state.setSize(size, of: .identity, agent: agentId)
                return .changed(.updated(agent))
            }
            // Nodes that arrived first already made it known.
            let isNew = state.sizes[agentId] == nil
            guard limits.agents.admits(count: state.sizes.count, bytes: state.totalBytes, isNew: isNew, growth: size)
            else {
                return .refused(
                    "agent \(identity.name) (\(agentId)): \(state.sizes.count) agents with \(state.totalBytes) bytes are known"
                )
            }
            let agent = AgentInfo(
                identity: identity, namespace: namespace,
                ioNodes: state.pendingNodes.removeValue(forKey: agentId) ?? [])
            state.agents[agentId] = agent
            state.setSize(size, of: .identity, agent: agentId)
            return .changed(.joined(agent))
        }
    }

    private func add(_ node: IoNode, of agentId: String) {
        let size = Self.size(of: node.object)
        update { state in
            var nodes = state.agents[agentId]?.ioNodes ?? state.pendingNodes[agentId] ?? []
            let index = nodes.firstIndex { $0.objectId == node.objectId }
            if let index, nodes[index] == node { return .unchanged }
            let growth = size - state.size(of: .node(node.objectId), agent: agentId)
            let isNewAgent = state.sizes[agentId] == nil
            guard index != nil || nodes.count < limits.maximumNodesPerAgent,
                limits.agents.admits(
                    count: state.sizes.count, bytes: state.totalBytes, isNew: isNewAgent, growth: growth)
            else {
                return .refused(
                    "IO node \(node.objectId) of agent \(agentId) (\(size) bytes): \(nodes.count) nodes of the agent, "
                        + "\(state.sizes.count) agents with \(state.totalBytes) bytes are known")
            }
            if let index { nodes[index] = node } else { nodes.append(node) }
            state.setSize(size, of: .node(node.objectId), agent: agentId)
            state.nodeOwners[node.objectId] = agentId
            guard var agent = state.agents[agentId] else {
                state.pendingNodes[agentId] = nodes
                return .unchanged
            }
            agent.ioNodes = nodes
            state.agents[agentId] = agent
            return .changed(.updated(agent))
        }
    }

    private func remove(_ objectIds: [String]) {
        for objectId in objectIds {
            update { state in
                if let nodes = state.pendingNodes.removeValue(forKey: objectId) {
                    state.forgetSizes(of: objectId)
                    for node in nodes { state.nodeOwners[node.objectId] = nil }
                }
                if let agent = state.agents.removeValue(forKey: objectId) {
                    state.forgetSizes(of: objectId)
                    for node in agent.ioNodes { state.nodeOwners[node.objectId] = nil }
                    return .changed(.left(agent))
                }
                guard let agentId = state.nodeOwners.removeValue(forKey: objectId) else { return .unchanged }
                state.setSize(nil, of: .node(objectId), agent: agentId)
                if var nodes = state.pendingNodes[agentId] {
                    nodes.removeAll { $0.objectId == objectId }
                    state.pendingNodes[agentId] = nodes
                    return .unchanged
                }
                guard var agent = state.agents[agentId] else { return .unchanged }
                agent.ioNodes.removeAll { $0.objectId == objectId }
                state.agents[agentId] = agent
                return .changed(.updated(agent))
            }
        }
    }

    /// What an object takes as JSON text: the measure of the byte limit.
    private static func size(of object: CoatyObject) -> Int {
        object.jsonValue.serializedBytes().count
    }

    private func forgetAll() {
        state.change { state, isWatched in
            defer {
                state.agents = [:]
                state.pendingNodes = [:]
                state.nodeOwners = [:]
                state.sizes = [:]
                state.totalBytes = 0
            }
            return ((), isWatched ? state.agents.values.map { .left($0) } : [])
        }
    }

    /// Applies a change and tells the watchers; a refusal is counted and logged after the lock is released.
    private func update(_ change: (inout State) -> Outcome) {
        let outcome = state.change { state, _ in
            let outcome = change(&state)
            guard case .changed(let change) = outcome else { return (outcome, []) }
            return (outcome, [change])
        }
        if case .refused(let what) = outcome {
            refusals.refuse { what }
        }
    }
}
