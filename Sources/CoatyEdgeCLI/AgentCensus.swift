import CoatyCommunication
import CoatyEdgeAgent
import CoatyJSON
import CoatyModel

/// `coaty-edge agents`: the agents that answer now, their IO nodes and, for agents with devices, their device status.
public enum AgentCensus {
    public struct Entry: Sendable, Hashable {
        public var agent: AgentInfo
        /// `[{label, driver, ioPoints, state, error?}]`; nil for agents without devices (or not coaty-edge agents).
        public var devices: [JSONValue]?
    }

    /// Asks every agent (but command-line clients) for its identity, IO nodes and device status, and waits `duration` for the answers.
    public static func take(_ session: ClientSession, duration: Duration) async -> [Entry] {
        let ownId = session.manager.identity.objectId
        // Read the agents before the presence stops: it forgets them then.
        let (agents, devices) = await withTaskGroup(of: [String: [JSONValue]].self) { group in
            group.addTask {
                await session.presence.run()
                return [:]
            }
            group.addTask {
                var statuses: [String: [JSONValue]] = [:]
                let discover = DiscoverEvent.objectTypes([EdgeAgent.deviceStatusObjectType])
                for await resolve in session.manager.publishDiscover(discover, timeout: duration) {
                    guard let object = resolve.event.object else { continue }
                    statuses[object.parentObjectId ?? resolve.sourceId] = object["devices"]?.arrayValue ?? []
                }
                return statuses
            }
            try? await Task.sleep(for: duration)
            let agents = session.presence.agents
            group.cancelAll()
            return (agents, await group.reduce(into: [:]) { $0.merge($1) { $1 } })
        }
        return agents.filter { $0.agentId != ownId && $0.name != ClientSession.identityName }.map { Entry(agent: $0, devices: devices[$0.agentId]) }
    }

    public static func text(_ entries: [Entry]) -> String {
        guard !entries.isEmpty else { return "no agents online\n" }
        var lines: [String] = []
        for entry in entries {
            let agent = entry.agent
            lines.append("\(agent.name)  \(agent.agentId)  namespace \(agent.namespace)")
            for node in agent.ioNodes.sorted(by: { $0.contextName < $1.contextName }) {
                lines.append("  context \(node.contextName)")
                let points = node.ioSources.map { ("source", $0.name, $0.valueType, $0.objectId) }
                    + node.ioActors.map { ("actor", $0.name, $0.valueType, $0.objectId) }
                let nameWidth = points.map(\.1.count).max() ?? 0
                let typeWidth = points.map(\.2.count).max() ?? 0
                for (kind, name, valueType, id) in points {
                    lines.append("    \(LiveTable.fit(kind, 6)) \(LiveTable.fit(name, nameWidth))  \(LiveTable.fit(valueType, typeWidth))  \(id)")
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
                "ioNodes": .array(agent.ioNodes.map { node in
                    [
                        "context": .string(node.contextName), "objectId": .string(node.objectId),
                        "ioSources": .array(node.ioSources.map(pointJSON)), "ioActors": .array(node.ioActors.map(pointJSON)),
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
