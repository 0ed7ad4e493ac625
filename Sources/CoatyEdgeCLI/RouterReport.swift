import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel

/// `coaty-edge rules show`: what every coaty-edge router associated, by which rule, from its answers to
/// `IoRouter.associationsOperation` (see `IoAssociationQuery` and `IoAssociationReport` for the request and the
/// answer). A router answers with at most one page that fits into a message; `.all` reads the pages one after another.
public enum RouterReport {
    public struct Answer: Sendable, Hashable {
        public var routerAgentId: String
        /// `{"context", "router", "revision", "total", "matched", "offset", "associations": [...], "nextOffset"?,
        /// "summary"?}` (`IoAssociationReport.answer`); an older router's answer is brought into this form.
        public var result: JSONValue

        public init(routerAgentId: String, result: JSONValue) {
            self.routerAgentId = routerAgentId
            self.result = result
        }

        var contextName: String { result["context"]?["name"]?.stringValue ?? "?" }
        var nextOffset: Int? { result["nextOffset"]?.intValue }
        var associations: [JSONValue] { result["associations"]?.arrayValue ?? [] }
    }

    /// What `rules show` prints of each router.
    public enum View: Sendable, Hashable {
        /// Every matching association when one page holds them all, else the summary.
        case automatic
        /// The counts per rule and value type.
        case summary
        /// The page of this number (from 1).
        case page(Int)
        /// Every matching association, read page by page.
        case all
    }

    /// How many associations a page of `rules show` lists, unless `--limit` says otherwise; more than that are
    /// summarised by default.
    public static let defaultPageSize = 100

    /// Reading the pages for `.all` starts over this often when the associations change in between.
    static let attempts = 3

    /// Asks every router for the `view` of the associations `filters` admits (pages of `pageSize`) and collects the
    /// answers within `timeout`; for `.all`, then each router for its further pages.
    public static func collect(
        _ session: ClientSession, filters: IoAssociationQuery, view: View, pageSize: Int = defaultPageSize,
        timeout: Duration
    ) async throws -> [Answer] {
        var query = filters
        switch view {
        case .automatic:
            query.limit = pageSize
            query.includesSummary = true
        case .summary:
            query.limit = 0
            query.includesSummary = true
        case .page(let number):
            query.offset = (number - 1) * pageSize
            query.limit = pageSize
        case .all:
            query.limit = nil
        }
        var answers = try await call(session.manager, query, timeout: timeout)
        // A page of more associations than fit into one answer, and all of them, take further answers.
        var isRead = view == .all
        if case .page = view { isRead = true }
        if isRead {
            for index in answers.indices {
                answers[index] = try await complete(
                    answers[index], manager: session.manager, query: query, timeout: timeout)
            }
        }
        return answers.sorted {
            ($0.result["router"]?.stringValue ?? "", $0.routerAgentId) < (
                $1.result["router"]?.stringValue ?? "", $1.routerAgentId
            )
        }
    }

    /// The answers to one Call within `timeout`; with `query.routerId`, only that router's first.
    static func call(_ manager: CommunicationManager, _ query: IoAssociationQuery, timeout: Duration) async throws
        -> [Answer]
    {
        let event = CallEvent(operation: IoRouter.associationsOperation, parameters: query.parameters)
        var answers: [Answer] = []
        for await returned in try manager.publishCall(event, timeout: timeout) {
            if let routerId = query.routerId, returned.sourceId != routerId { continue }
            switch returned.event.outcome {
            case .result(let result):
                guard let answer = normalized(Answer(routerAgentId: returned.sourceId, result: result), query: query)
                else { continue }
                answers.append(answer)
            case .error(let code, let message):
                let reason = returned.event.executionInfo?["reason"]?.stringValue.map { ": \($0)" } ?? ""
                throw CommandFailure(
                    .failure, "router \(returned.sourceId) refused the request (\(code) \(message)\(reason))")
            }
            if query.routerId != nil { break }
        }
        return answers
    }

    /// An answer in this version's form: an older router (without `revision`) answers with all its associations,
    /// whatever was asked, which are filtered and paged here as a router of this version does.
    static func normalized(_ answer: Answer, query: IoAssociationQuery) -> Answer? {
        guard answer.result["revision"] == nil else { return answer }
        guard query.isAddressed(to: answer.routerAgentId, context: answer.contextName) else { return nil }
        let associations = answer.associations.compactMap(IoAssociationReport.association)
        var result = IoAssociationReport.answer(
            query, associations: associations, context: answer.result["context"] ?? .null,
            router: answer.result["router"]?.stringValue ?? "?", revision: 0, maximumBytes: .max)
        result["revision"] = nil
        return Answer(routerAgentId: answer.routerAgentId, result: .object(result))
    }

    /// The associations `query` asks for (from its offset, at most its limit) of the router that gave the first
    /// answer, read answer after answer from one revision of its associations.
    static func complete(
        _ first: Answer, manager: CommunicationManager, query: IoAssociationQuery, timeout: Duration
    ) async throws -> Answer {
        let end = query.limit.map { query.offset + $0 }
        var start = first
        var routerQuery = query
        routerQuery.routerId = first.routerAgentId
        for _ in 0..<attempts {
            var associations = start.associations
            var next = start.nextOffset
            var isConsistent = true
            while let offset = next, end.map({ offset < $0 }) ?? true {
                routerQuery.offset = offset
                routerQuery.limit = end.map { $0 - offset }
                guard let page = try await call(manager, routerQuery, timeout: timeout).first else {
                    throw CommandFailure(
                        .failure,
                        "router \(first.routerAgentId) did not answer for associations from \(offset) on within \(timeout)"
                    )
                }
                guard page.result["revision"] == start.result["revision"] else {
                    isConsistent = false
                    break
                }
                associations += page.associations
                next = page.nextOffset
            }
            if isConsistent {
                var result = start.result.objectValue ?? [:]
                result["associations"] = .array(associations)
                result["nextOffset"] = next.map { .number(Double($0)) }
                return Answer(routerAgentId: first.routerAgentId, result: .object(result))
            }
            routerQuery.offset = query.offset
            routerQuery.limit = query.limit
            guard let again = try await call(manager, routerQuery, timeout: timeout).first else {
                throw CommandFailure(.failure, "router \(first.routerAgentId) did not answer again within \(timeout)")
            }
            start = again
        }
        throw CommandFailure(
            .failure,
            "the associations of router \(first.routerAgentId) changed while they were read, \(attempts) times; try again"
        )
    }

    public static func text(_ answers: [Answer], view: View = .automatic, pageSize: Int = defaultPageSize) -> String {
        var lines: [String] = []
        var isSummarised = false
        for answer in answers {
            let result = answer.result
            let context = result["context"]
            let version = ", version \(context?[IoRouter.versionProperty]?.intValue ?? 0)"
            lines.append(
                "router \(result["router"]?.stringValue ?? "?") (\(answer.routerAgentId)): context "
                    + "\(context?["name"]?.stringValue ?? "?")\(version)")
            let total = result["total"]?.intValue ?? 0
            let matched = result["matched"]?.intValue ?? 0
            let offset = result["offset"]?.intValue ?? 0
            let associations = answer.associations
            if matched != total { lines.append("  \(AgentCensus.counted(matched, "association")) of \(total) match") }
            switch view {
            case .summary:
                isSummarised = true
                lines += summary(result)
            case .automatic where offset != 0 || answer.nextOffset != nil:
                isSummarised = true
                lines += summary(result)
                let pages = (matched + pageSize - 1) / pageSize
                lines.append(
                    "  \(pageSize) a page: --page 1 to \(pages), or --all; --rule, --source, --actor and --agent narrow them"
                )
            case .page(let number):
                let pages = max(1, (matched + pageSize - 1) / pageSize)
                if associations.isEmpty {
                    lines.append("  no associations on page \(number) of \(pages)")
                } else {
                    lines.append(
                        "  associations \(offset + 1)-\(offset + associations.count) of \(matched) (page \(number) of \(pages))"
                    )
                    lines += rows(associations)
                }
            case .automatic, .all:
                if associations.isEmpty { lines.append("  no associations") }
                lines += rows(associations)
            }
        }
        if isSummarised && answers.count > 1 {
            var contexts: [String: Int] = [:]
            for answer in answers {
                contexts[answer.contextName, default: 0] += answer.result["matched"]?.intValue ?? 0
            }
            let all = contexts.values.reduce(0, +)
            lines.append(
                "\(AgentCensus.counted(answers.count, "router")), \(AgentCensus.counted(all, "association")): "
                    + contexts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `source → actor  rule R, rate N ms`, the columns aligned.
    static func rows(_ associations: [JSONValue]) -> [String] {
        let rows = associations.map { association -> (String, String, String) in
            let source = association["sourceName"]?.stringValue ?? association["sourceId"]?.stringValue ?? "?"
            let actor = association["actorName"]?.stringValue ?? association["actorId"]?.stringValue ?? "?"
            let rate = association["updateRate"]?.numberValue.map { ", rate \(ObserveEvent.number($0)) ms" } ?? ""
            return (source, actor, "rule \(association["rule"]?.stringValue ?? "?")\(rate)")
        }
        let sourceWidth = rows.map(\.0.count).max() ?? 0
        let actorWidth = rows.map(\.1.count).max() ?? 0
        return rows.map { source, actor, details in
            "  \(LiveTable.fit(source, sourceWidth)) → \(LiveTable.fit(actor, actorWidth))  \(details)"
        }
    }

    /// Rules and value types listed in a text summary at most; the rest are counted.
    static let summaryLines = 10

    /// The counts of a summary: associations, sources, actors and agents, then per rule and per value type.
    static func summary(_ result: JSONValue) -> [String] {
        let matched = result["matched"]?.intValue ?? 0
        guard let summary = result["summary"] else { return ["  \(AgentCensus.counted(matched, "association"))"] }
        let sources = summary["sources"]?.intValue ?? 0
        let actors = summary["actors"]?.intValue ?? 0
        var lines = [
            "  \(AgentCensus.counted(matched, "association")): \(AgentCensus.counted(sources, "source")), \(AgentCensus.counted(actors, "actor"))"
        ]
        if let agents = summary["agents"]?.intValue, agents > 0 {
            lines[0] += ", \(AgentCensus.counted(agents, "agent"))"
        }
        func counts(_ key: String, _ name: String, plural: String) {
            let entries = summary[key + "s"]?.arrayValue ?? []
            let leftOut = entries.count - min(entries.count, summaryLines) + (summary[key + "sLeftOut"]?.intValue ?? 0)
            guard !entries.isEmpty else { return }
            lines.append("  by \(name):")
            let shown = entries.prefix(summaryLines).map { entry in
                (entry[key]?.stringValue ?? "?", entry["associations"]?.intValue ?? 0)
            }
            let width = shown.map(\.0.count).max() ?? 0
            for (label, count) in shown { lines.append("    \(LiveTable.fit(label, width))  \(count)") }
            if leftOut > 0 {
                let listed = shown.reduce(0) { $0 + $1.1 }
                lines.append("    and \(leftOut) more \(leftOut == 1 ? name : plural) with \(matched - listed)")
            }
        }
        counts("rule", "rule", plural: "rules")
        counts("valueType", "value type", plural: "value types")
        return lines
    }

    public static func jsonLines(_ answers: [Answer]) -> String {
        answers.map { answer in
            var json: JSONObject = ["routerAgentId": .string(answer.routerAgentId)]
            for member in answer.result.objectValue ?? [:] { json[member.key] = member.value }
            return json.serialized() + "\n"
        }.joined()
    }
}

extension RouterReport {
    /// The objectIds of the agents named `pattern` (by objectId, or a name matching it) among those that answer within
    /// `census`, and the pattern itself, which may be the objectId of an agent that does not answer (a node's
    /// `parentObjectId`).
    public static func agentIds(matching pattern: NamePattern, session: ClientSession, census: Duration) async throws
        -> [String]
    {
        let agents = await AgentCensus.take(session, duration: census).entries
        var ids = agents.filter { pattern.text == $0.agent.agentId || pattern.matches($0.agent.name) }.map(
            \.agent.agentId)
        if !ids.contains(pattern.text) { ids.append(pattern.text) }
        guard ids.count <= IoAssociationQuery.maximumAgentIds else {
            throw CommandFailure(
                .usage,
                "--agent \(pattern) names \(ids.count) agents, more than \(IoAssociationQuery.maximumAgentIds): narrow it"
            )
        }
        return ids.sorted()
    }
}
