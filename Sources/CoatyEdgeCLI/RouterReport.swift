import CoatyIORouting
import CoatyJSON
import CoatyModel

/// `coaty-edge rules show`: what every coaty-edge router associated, by which rule, from its answer to
/// `IoRouter.associationsOperation`.
public enum RouterReport {
    public struct Answer: Sendable, Hashable {
        public var routerAgentId: String
        /// `{"context", "router", "associations": [{sourceId, sourceName, actorId, actorName, route, rule, updateRate?}]}`
        public var result: JSONValue
    }

    /// Calls the operation and collects the answers of every router within `timeout`.
    public static func collect(_ session: ClientSession, timeout: Duration) async throws -> [Answer] {
        var answers: [Answer] = []
        for await returned in try session.manager.publishCall(CallEvent(operation: IoRouter.associationsOperation), timeout: timeout) {
            guard case .result(let result) = returned.event.outcome else { continue }
            answers.append(Answer(routerAgentId: returned.sourceId, result: result))
        }
        return answers.sorted {
            ($0.result["router"]?.stringValue ?? "", $0.routerAgentId) < ($1.result["router"]?.stringValue ?? "", $1.routerAgentId)
        }
    }

    public static func text(_ answers: [Answer]) -> String {
        var lines: [String] = []
        for answer in answers {
            let result = answer.result
            let context = result["context"]
            let version = ", version \(context?[IoRouter.versionProperty]?.intValue ?? 0)"
            lines.append(
                "router \(result["router"]?.stringValue ?? "?") (\(answer.routerAgentId)): context "
                    + "\(context?["name"]?.stringValue ?? "?")\(version)")
            let associations = result["associations"]?.arrayValue ?? []
            if associations.isEmpty { lines.append("  no associations") }
            let rows = associations.map { association -> (String, String, String) in
                let source = association["sourceName"]?.stringValue ?? association["sourceId"]?.stringValue ?? "?"
                let actor = association["actorName"]?.stringValue ?? association["actorId"]?.stringValue ?? "?"
                let rate = association["updateRate"]?.numberValue.map { ", rate \(ObserveEvent.number($0)) ms" } ?? ""
                return (source, actor, "rule \(association["rule"]?.stringValue ?? "?")\(rate)")
            }
            let sourceWidth = rows.map(\.0.count).max() ?? 0
            let actorWidth = rows.map(\.1.count).max() ?? 0
            for (source, actor, details) in rows {
                lines.append("  \(LiveTable.fit(source, sourceWidth)) → \(LiveTable.fit(actor, actorWidth))  \(details)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public static func jsonLines(_ answers: [Answer]) -> String {
        answers.map { answer in
            var json: JSONObject = ["routerAgentId": .string(answer.routerAgentId)]
            for member in answer.result.objectValue ?? [:] { json[member.key] = member.value }
            return json.serialized() + "\n"
        }.joined()
    }
}
