import CoatyCommunication
import CoatyEdgeAgent
import CoatyJSON
import CoatyModel
import Synchronization

/// `coaty-edge agents`: the agents that answer now, their IO nodes and, for agents with devices, their device status.
public enum AgentCensus {
    public struct Entry: Sendable, Hashable {
        public var agent: AgentInfo
        /// `[{label, driver, ioPoints, state, error?}]`; nil for agents without devices (or not coaty-edge agents).
        public var devices: [JSONValue]?

        public init(agent: AgentInfo, devices: [JSONValue]?) {
            self.agent = agent
            self.devices = devices
        }

        /// `failing` when any device fails, `ok` when all answer, `no-devices` for agents without device status.
        public var state: AgentState {
            guard let devices else { return .noDevices }
            return devices.contains { $0["state"]?.stringValue == "failing" } ? .failing : .ok
        }

        var failingDevices: [(label: String, error: String)] {
            (devices ?? []).filter { $0["state"]?.stringValue == "failing" }.map {
                ($0["label"]?.stringValue ?? "?", $0["error"]?.stringValue ?? "failing")
            }
        }

        var sourceCount: Int { agent.ioNodes.reduce(0) { $0 + $1.ioSources.count } }
        var actorCount: Int { agent.ioNodes.reduce(0) { $0 + $1.ioActors.count } }
    }

    /// What an agent's devices say, for filters and summaries.
    public enum AgentState: String, Sendable, Hashable, CaseIterable {
        case ok
        case failing
        case noDevices = "no-devices"
    }

    /// Which agents to list: by name (a shell pattern), state, IO context, IO point (objectId, or name pattern) and
    /// value type. Every given criterion must hold; an agent matches a point criterion by any of its sources or actors.
    public struct Filter: Sendable, Hashable {
        public var name: NamePattern?
        public var state: AgentState?
        public var context: String?
        public var point: NamePattern?
        public var valueType: String?

        public init(
            name: NamePattern? = nil, state: AgentState? = nil, context: String? = nil, point: NamePattern? = nil,
            valueType: String? = nil
        ) {
            self.name = name
            self.state = state
            self.context = context
            self.point = point
            self.valueType = valueType
        }

        public func admits(_ entry: Entry) -> Bool {
            if let name, !name.matches(entry.agent.name) { return false }
            if let state, entry.state != state { return false }
            let nodes = entry.agent.ioNodes.filter { context == nil || $0.contextName == context }
            if context != nil && nodes.isEmpty { return false }
            guard point != nil || valueType != nil else { return true }
            let points = nodes.flatMap { node in
                node.ioSources.map { ($0.objectId, $0.name, $0.valueType) }
                    + node.ioActors.map { ($0.objectId, $0.name, $0.valueType) }
            }
            return points.contains { id, name, type in
                (point.map { $0.text == id || $0.matches(name) } ?? true) && (valueType.map { $0 == type } ?? true)
            }
        }
    }

    /// The agents that answered, and what the census could not complete.
    public struct Result: Sendable {
        public var entries: [Entry]
        /// For standard error: answers still arriving when the longest wait ended, agents that answered for their
        /// devices but not with their identity.
        public var shortfalls: [String]
    }

    /// How long `take` waits at most for a census of `duration`: while answers still arrive at its end (a fleet of
    /// a thousand agents on a busy broker answers over seconds), it waits on, up to four times as long.
    public static func longestWait(for duration: Duration) -> Duration { duration * 4 }

    /// Asks every agent (but command-line clients) for its identity, IO nodes and device status, and waits
    /// `duration` for the answers, longer while they still arrive (`longestWait(for:)`); the session's census must
    /// listen that long.
    public static func take(_ session: ClientSession, duration: Duration) async -> Result {
        let ownId = session.manager.identity.objectId
        let longest = longestWait(for: duration)
        let statuses = StatusAnswers()
        // Read the agents before the presence stops: it forgets them then.
        let (agents, stillArriving) = await withTaskGroup(of: Void.self) { group in
            group.addTask { await session.presence.run() }
            group.addTask {
                let discover = DiscoverEvent.objectTypes([EdgeAgent.deviceStatusObjectType])
                for await resolve in session.manager.publishDiscover(discover, timeout: longest) {
                    guard let object = resolve.event.object else { continue }
                    statuses.add(object["devices"]?.arrayValue ?? [], of: object.parentObjectId ?? resolve.sourceId)
                }
            }
            let clock = ContinuousClock()
            let start = clock.now
            // The last step of the wait (a second, or half a short census) tells whether answers still arrive; then
            // it waits on in such steps while they do.
            let step = min(.seconds(1), duration / 2)
            try? await Task.sleep(for: duration - step)
            var answers = session.presence.count + statuses.count
            var stillArriving = false
            while clock.now - start < longest {
                try? await Task.sleep(for: min(step, longest - (clock.now - start)))
                let now = session.presence.count + statuses.count
                stillArriving = now > answers
                guard stillArriving else { break }
                answers = now
            }
            let agents = session.presence.agents
            group.cancelAll()
            return (agents, stillArriving)
        }
        let devices = statuses.all
        let entries = agents.filter { $0.agentId != ownId && $0.name != ClientSession.identityName }.map {
            Entry(agent: $0, devices: devices[$0.agentId])
        }
        var shortfalls: [String] = []
        if stillArriving {
            shortfalls.append(
                "answers were still arriving after \(seconds(longest)) s: the list may be incomplete (--census sets the wait)"
            )
        }
        let known = Set(agents.map(\.agentId))
        let unnamed = devices.keys.filter { !known.contains($0) }.count
        if unnamed > 0 {
            shortfalls.append(
                "\(counted(unnamed, "agent")) answered for \(unnamed == 1 ? "its" : "their") devices but not with "
                    + "\(unnamed == 1 ? "its" : "their") identity: expected \(counted(entries.count + unnamed, "agent")), "
                    + "listed \(entries.count)")
        }
        return Result(entries: entries, shortfalls: shortfalls)
    }

    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds)" : String(Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// The device status answers by agent, collected by one task and counted by another.
    private final class StatusAnswers: Sendable {
        private let statuses = Mutex<[String: [JSONValue]]>([:])

        func add(_ devices: [JSONValue], of agentId: String) { statuses.withLock { $0[agentId] = devices } }
        var count: Int { statuses.withLock { $0.count } }
        var all: [String: [JSONValue]] { statuses.withLock { $0 } }
    }

    /// One line per agent: state, name, agentId, its IO points and contexts, and its first failing device.
    public static func brief(_ entries: [Entry]) -> String {
        guard !entries.isEmpty else { return "no agents online\n" }
        let nameWidth = min(entries.map(\.agent.name.count).max() ?? 0, 40)
        return entries.map { entry in
            let contexts = Set(entry.agent.ioNodes.map(\.contextName)).sorted().joined(separator: ",")
            let points = "\(counted(entry.sourceCount, "source")), \(counted(entry.actorCount, "actor"))"
            var line =
                "\(LiveTable.fit(entry.state.rawValue, 10)) \(LiveTable.fit(entry.agent.name, nameWidth))  \(entry.agent.agentId)  "
                + "\(LiveTable.fit(points, 22)) \(contexts.isEmpty ? "-" : contexts)"
            let failing = entry.failingDevices
            if let first = failing.first {
                line +=
                    "  \(first.label): \(first.error)" + (failing.count > 1 ? " (and \(failing.count - 1) more)" : "")
            }
            while line.hasSuffix(" ") { line.removeLast() }
            return line + "\n"
        }.joined()
    }

    /// Counts for a whole fleet: agents per state and per namespace, IO nodes per context, IO points, and the
    /// failing devices (the first `failingShown`, then how many more).
    public static func summary(_ entries: [Entry], failingShown: Int = 10) -> String {
        var states: [AgentState: Int] = [:]
        var namespaces: [String: Int] = [:]
        var contexts: [String: Int] = [:]
        for entry in entries {
            states[entry.state, default: 0] += 1
            namespaces[entry.agent.namespace, default: 0] += 1
            for node in entry.agent.ioNodes { contexts[node.contextName, default: 0] += 1 }
        }
        let counts = AgentState.allCases.compactMap { state in states[state].map { "\($0) \(state.rawValue)" } }
        var lines = [
            "\(counted(entries.count, "agent"))" + (counts.isEmpty ? "" : ": " + counts.joined(separator: ", "))
        ]
        if namespaces.count > 1 {
            lines.append(
                "namespaces: "
                    + namespaces.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        let nodeCount = contexts.values.reduce(0, +)
        let sources = entries.reduce(0) { $0 + $1.sourceCount }
        let actors = entries.reduce(0) { $0 + $1.actorCount }
        var nodes = "\(counted(nodeCount, "IO node"))"
        if !contexts.isEmpty {
            nodes +=
                " (" + contexts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
        }
        lines.append("\(nodes), \(counted(sources, "source")), \(counted(actors, "actor"))")
        let failing = entries.flatMap { entry in entry.failingDevices.map { (entry.agent.name, $0.label, $0.error) } }
        if !failing.isEmpty {
            lines.append("\(counted(failing.count, "failing device")):")
            lines += failing.prefix(failingShown).map { "  \($0.0): \($0.1): \($0.2)" }
            if failing.count > failingShown { lines.append("  and \(failing.count - failingShown) more") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public static func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }

    public static func text(_ entries: [Entry]) -> String {
        guard !entries.isEmpty else { return "no agents online\n" }
        var lines: [String] = []
        for entry in entries {
            let agent = entry.agent
            lines.append("\(agent.name)  \(agent.agentId)  namespace \(agent.namespace)")
            for node in agent.ioNodes.sorted(by: { $0.contextName < $1.contextName }) {
                lines.append("  context \(node.contextName)")
                let points =
                    node.ioSources.map { ("source", $0.name, $0.valueType, $0.objectId) }
                    + node.ioActors.map { ("actor", $0.name, $0.valueType, $0.objectId) }
                let nameWidth = points.map(\.1.count).max() ?? 0
                let typeWidth = points.map(\.2.count).max() ?? 0
                for (kind, name, valueType, id) in points {
                    lines.append(
                        "    \(LiveTable.fit(kind, 6)) \(LiveTable.fit(name, nameWidth))  \(LiveTable.fit(valueType, typeWidth))  \(id)"
                    )
                }
            }
            if let devices = entry.devices {
                lines.append("  devices")
                for device in devices {
                    let state = device["state"]?.stringValue ?? "?"
                    let error = device["error"]?.stringValue.map { ": \($0)" } ?? ""
                    lines.append("    \(LiveTable.fit(state, 7)) \(device["label"]?.stringValue ?? "?")\(error)")
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// One JSON object per agent and line.
    public static func jsonLines(_ entries: [Entry]) -> String {
        entries.map { entry -> String in
            let agent = entry.agent
            var json: JSONObject = [
                "agentId": .string(agent.agentId), "name": .string(agent.name), "namespace": .string(agent.namespace),
                "ioNodes": .array(
                    agent.ioNodes.map { node in
                        [
                            "context": .string(node.contextName), "objectId": .string(node.objectId),
                            "ioSources": .array(node.ioSources.map(pointJSON)),
                            "ioActors": .array(node.ioActors.map(pointJSON)),
                        ]
                    }),
            ]
            json.set("devices", ifPresent: entry.devices.map(JSONValue.array))
            return json.serialized() + "\n"
        }.joined()
    }

    static func pointJSON(_ point: some IoPoint) -> JSONValue {
        ["objectId": .string(point.objectId), "name": .string(point.name), "valueType": .string(point.valueType)]
    }
}
