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

public enum PresenceChange: Sendable, Hashable {
    case joined(AgentInfo)
    /// The agent advertised or deadvertised IO nodes.
    case updated(AgentInfo)
    /// The agent deadvertised itself, or died and the broker published its last will, or it neither answered nor
    /// advertised itself when this agent came back online.
    case left(AgentInfo)
}

/// Which agents are online now, from their Identity and IoNode advertisements, Deadvertises and last wills.
///
/// Run it while the manager runs (`run()` returns when the task is cancelled). On every connect it asks all
/// agents for their identity and IO nodes, and agents that no longer answer are taken as gone, since their wills
/// may have gone out while this agent was offline.
public final class AgentPresence: Sendable {
    private struct State {
        var agents: [String: AgentInfo] = [:]
        /// Nodes whose agent's identity has not arrived yet.
        var pendingNodes: [String: [IoNode]] = [:]
        /// During a census: the agents whose identity arrived since it began, by Resolve or by Advertise (an agent
        /// that reconnects after this one misses the Discover but advertises itself).
        var seenDuringCensus: Set<String>?
        var nextId = 0
        var watchers: [Int: ObservationStream<PresenceChange>.Continuation] = [:]
    }

    private let manager: CommunicationManager
    private let censusTimeout: Duration
    private let state = Mutex(State())

    /// - Parameter censusTimeout: how long to wait for answers after connecting before agents that did not
    ///   answer are taken as gone.
    public init(manager: CommunicationManager, censusTimeout: Duration = .seconds(3)) {
        self.manager = manager
        self.censusTimeout = censusTimeout
    }

    /// The agents online now, by name.
    public var agents: [AgentInfo] {
        state.withLock { Array($0.agents.values) }.sorted { ($0.name, $0.agentId) < ($1.name, $1.agentId) }
    }

    public func agent(_ agentId: String) -> AgentInfo? {
        state.withLock { $0.agents[agentId] }
    }

    /// Every change from now on.
    public func changes() -> ObservationStream<PresenceChange> {
        let (stream, continuation) = ObservationStream.makeStream(of: PresenceChange.self)
        let id = state.withLock { state in
            defer { state.nextId += 1 }
            state.watchers[state.nextId] = continuation
            return state.nextId
        }
        continuation.onTermination { [weak self] in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Tracks presence until cancelled, across stops and restarts of the manager.
    public func run() async {
        for await operatingState in manager.operatingStates() where operatingState == .started {
            await track()
            forgetAll()
        }
    }

    /// One run of the manager: ends when the manager stops (its streams end) or the task is cancelled.
    private func track() async {
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
                for await communicationState in self.manager.communicationStates() where communicationState == .online {
                    await self.takeCensus()
                }
            }
            // The manager's streams end when it stops; the state stream does not, so end the group then.
            for await operatingState in manager.operatingStates() where operatingState == .stopped {
                break
            }
            group.cancelAll()
        }
    }

    /// Asks every agent for its identity and nodes; agents known before that neither answer nor advertise their
    /// identity meanwhile are gone.
    private func takeCensus() async {
        let before = state.withLock { state in
            state.seenDuringCensus = []
            return Set(state.agents.keys)
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await resolve in self.manager.publishDiscover(.coreTypes([.identity]), timeout: self.censusTimeout) {
                    guard let object = resolve.event.object, let identity = try? Identity(object) else { continue }
                    self.add(identity, namespace: resolve.namespace)
                }
            }
            group.addTask {
                for await resolve in self.manager.publishDiscover(.coreTypes([.ioNode]), timeout: self.censusTimeout) {
                    guard let object = resolve.event.object, let node = try? IoNode(object) else { continue }
                    self.add(node, of: resolve.sourceId)
                }
            }
        }
        let seen = state.withLock { state in
            defer { state.seenDuringCensus = nil }
            return state.seenDuringCensus ?? []
        }
        guard !Task.isCancelled, manager.operatingState == .started else { return }
        remove(Array(before.subtracting(seen)))
    }

    private func add(_ identity: Identity, namespace: String) {
        notify { state in
            state.seenDuringCensus?.insert(identity.objectId)
            if var agent = state.agents[identity.objectId] {
                guard agent.identity != identity || agent.namespace != namespace else { return nil }
                agent.identity = identity
                agent.namespace = namespace
                state.agents[identity.objectId] = agent
                return .updated(agent)
            }
            let agent = AgentInfo(
                identity: identity, namespace: namespace,
                ioNodes: state.pendingNodes.removeValue(forKey: identity.objectId) ?? [])
            state.agents[identity.objectId] = agent
            return .joined(agent)
        }
    }

    private func add(_ node: IoNode, of agentId: String) {
        notify { state in
            guard var agent = state.agents[agentId] else {
                state.pendingNodes[agentId, default: []].removeAll { $0.objectId == node.objectId }
                state.pendingNodes[agentId, default: []].append(node)
                return nil
            }
            if let index = agent.ioNodes.firstIndex(where: { $0.objectId == node.objectId }) {
                guard agent.ioNodes[index] != node else { return nil }
                agent.ioNodes[index] = node
            } else {
                agent.ioNodes.append(node)
            }
            state.agents[agentId] = agent
            return .updated(agent)
        }
    }

    private func remove(_ objectIds: [String]) {
        for objectId in objectIds {
            notify { state in
                state.pendingNodes[objectId] = nil
                if let agent = state.agents.removeValue(forKey: objectId) {
                    return .left(agent)
                }
                for (agentId, var agent) in state.agents where agent.ioNodes.contains(where: { $0.objectId == objectId }) {
                    agent.ioNodes.removeAll { $0.objectId == objectId }
                    state.agents[agentId] = agent
                    return .updated(agent)
                }
                return nil
            }
        }
    }

    private func forgetAll() {
        let left = state.withLock { state in
            defer {
                state.agents = [:]
                state.pendingNodes = [:]
            }
            return (Array(state.agents.values), Array(state.watchers.values))
        }
        for agent in left.0 {
            for watcher in left.1 { watcher.yield(.left(agent)) }
        }
    }

    private func notify(_ change: (inout State) -> PresenceChange?) {
        state.withLock { state in
            guard let change = change(&state) else { return }
            for watcher in state.watchers.values { watcher.yield(change) }
        }
    }
}
