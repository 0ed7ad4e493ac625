import CoatyJSON
import CoatyModel

/// Which of a router's associations `coaty-edge rules show` asks for: the parameters of the Call
/// `IoRouter.associationsOperation`, all optional:
/// `{"router": agentId, "context": name, "rule": pattern, "source": pattern, "actor": pattern, "agents": [agentId],
/// "offset": n, "limit": n, "summary": true}`.
///
/// Patterns are shell patterns (`NamePattern`); a source or actor matches by its objectId or by its name, an agent
/// list by the agent of the source's or the actor's node. A Call without parameters, as versions before paging sent
/// it, asks for every association: it gets as many as fit into one answer (`IoAssociationReport`).
public struct IoAssociationQuery: Sendable, Hashable {
    /// Only the router agent with this objectId answers (the next page of one router).
    public var routerId: String?
    /// Only the routers of this IO context answer.
    public var context: String?
    public var rule: NamePattern?
    public var source: NamePattern?
    public var actor: NamePattern?
    /// Agent objectIds: only pairs whose source or actor belongs to one of them.
    public var agentIds: [String]?
    /// Where the page starts in the matching associations (in the router's order).
    public var offset = 0
    /// At most this many associations; nil: as many as fit into one answer.
    public var limit: Int?
    /// Whether the answer counts the matching associations per rule and value type.
    public var includesSummary = false

    /// The most associations one page may ask for.
    public static let maximumLimit = 100_000
    /// The most agents one query may name: their ids stay well within a router's inbound limit.
    public static let maximumAgentIds = 4096

    public init() {}

    public init(parameters: JSONValue?) throws(JSONShapeError) {
        guard let parameters else { return }
        let root = JSONCursor(parameters)
        try root.allowOnly(["router", "context", "rule", "source", "actor", "agents", "offset", "limit", "summary"])
        routerId = try root.optional("router")?.nonEmptyString()
        context = try root.optional("context")?.nonEmptyString()
        func pattern(_ key: String) throws(JSONShapeError) -> NamePattern? {
            guard let text = try root.optional(key)?.nonEmptyString() else { return nil }
            return NamePattern(text)
        }
        rule = try pattern("rule")
        source = try pattern("source")
        actor = try pattern("actor")
        if let agents = try root.optional("agents") {
            let elements = try agents.elements()
            guard elements.count <= Self.maximumAgentIds else {
                throw agents.error("more than \(Self.maximumAgentIds) agents")
            }
            var ids: [String] = []
            for element in elements { ids.append(try element.nonEmptyString()) }
            agentIds = ids
        }
        offset = try root.optional("offset")?.integer(in: 0...Int(Int32.max)) ?? 0
        limit = try root.optional("limit")?.integer(in: 0...Self.maximumLimit)
        includesSummary = try root.optional("summary")?.bool() ?? false
    }

    /// The Call's parameters; nil when it asks for everything (the request form of older versions).
    public var parameters: JSONValue? {
        var json = JSONObject()
        json.set("router", ifPresent: routerId.map(JSONValue.string))
        json.set("context", ifPresent: context.map(JSONValue.string))
        json.set("rule", ifPresent: rule.map { .string($0.text) })
        json.set("source", ifPresent: source.map { .string($0.text) })
        json.set("actor", ifPresent: actor.map { .string($0.text) })
        json.set("agents", ifPresent: agentIds.map { .array($0.map(JSONValue.string)) })
        if offset != 0 { json["offset"] = .number(Double(offset)) }
        json.set("limit", ifPresent: limit.map { .number(Double($0)) })
        if includesSummary { json["summary"] = .bool(true) }
        return json.isEmpty ? nil : .object(json)
    }

    /// Whether the filters narrow the associations (else `matched` equals `total`).
    public var isFiltered: Bool { rule != nil || source != nil || actor != nil || agentIds != nil }

    /// Whether the router with this objectId and context answers at all.
    public func isAddressed(to routerId: String, context: String) -> Bool {
        (self.routerId ?? routerId) == routerId && (self.context ?? context) == context
    }

    public func admits(_ association: IoAssociation) -> Bool {
        if let rule, !rule.matches(association.rule) { return false }
        if let source, source.text != association.sourceId && !source.matches(association.sourceName) { return false }
        if let actor, actor.text != association.actorId && !actor.matches(association.actorName) { return false }
        if let agentIds {
            let isAdmitted = [association.sourceAgentId, association.actorAgentId].contains { id in
                id.map(agentIds.contains) ?? false
            }
            if !isAdmitted { return false }
        }
        return true
    }
}

/// A router's answer to `IoRouter.associationsOperation`:
/// `{"context", "router", "revision", "total", "matched", "offset", "associations": [...], "nextOffset"?, "summary"?}`.
/// `total` counts every association of the router, `matched` those the query admits, `associations` holds the page of
/// them that starts at `offset`, and `nextOffset` is where the next page starts, if any; `revision` changes with the
/// associations, so that pages read one after another can be checked to come from one state. The summary:
/// `{"sources", "actors", "agents", "rules": [{"rule", "associations"}], "valueTypes": [{"valueType",
/// "associations"}], "rulesLeftOut"?, "valueTypesLeftOut"?}`, the largest counts first.
///
/// An answer stays below `maximumAnswerBytes` however many associations the router has, so that it reaches every
/// client: a client drops an inbound message larger than its limit (256 KiB by default), and 10,000 associations
/// are about 3 MB of JSON.
public enum IoAssociationReport {
    /// A quarter of a client's default inbound limit (`CommunicationOptions.defaultMaximumInboundPayload`).
    public static let maximumAnswerBytes = 64 * 1024
    /// The summary lists this many rules and value types at most; it counts the rest.
    public static let summaryEntryLimit = 50

    public static func answer(
        _ query: IoAssociationQuery, associations: [IoAssociation], context: JSONValue, router: String, revision: Int,
        maximumBytes: Int = maximumAnswerBytes
    ) -> JSONObject {
        let matched = query.isFiltered ? associations.filter(query.admits) : associations
        var answer: JSONObject = [
            "context": context, "router": .string(router), "revision": .number(Double(revision)),
            "total": .number(Double(associations.count)), "matched": .number(Double(matched.count)),
            "offset": .number(Double(query.offset)),
        ]
        if query.includesSummary { answer["summary"] = .object(summary(of: matched)) }
        // What the rest of the answer takes, with room for `"associations":[]` and `"nextOffset"`.
        var room = maximumBytes - answer.serializedBytes().count - 64
        var page: [JSONValue] = []
        var index = min(query.offset, matched.count)
        let end = query.limit.map { min(matched.count, index + $0) } ?? matched.count
        while index < end {
            let entry = Self.entry(matched[index])
            let size = entry.serializedBytes().count + 1
            // At least one association per page, so that paging gets on.
            guard size <= room || page.isEmpty else { break }
            room -= size
            page.append(entry)
            index += 1
        }
        answer["associations"] = .array(page)
        if index < matched.count && query.limit != 0 { answer["nextOffset"] = .number(Double(index)) }
        return answer
    }

    /// One association as the answer lists it.
    public static func entry(_ association: IoAssociation) -> JSONValue {
        var entry: JSONObject = [
            "sourceId": .string(association.sourceId), "sourceName": .string(association.sourceName),
            "actorId": .string(association.actorId), "actorName": .string(association.actorName),
            "route": .string(association.route), "rule": .string(association.rule),
        ]
        entry.set("updateRate", ifPresent: association.updateRate.map(JSONValue.number))
        entry["valueType"] = .string(association.valueType)
        entry.set("sourceAgentId", ifPresent: association.sourceAgentId.map(JSONValue.string))
        entry.set("actorAgentId", ifPresent: association.actorAgentId.map(JSONValue.string))
        return .object(entry)
    }

    /// An association of an answer (of this version or an older one, which names no value type and no agents); nil
    /// when an id, the route or the rule is missing.
    public static func association(_ entry: JSONValue) -> IoAssociation? {
        guard let sourceId = entry["sourceId"]?.stringValue, let actorId = entry["actorId"]?.stringValue,
            let route = entry["route"]?.stringValue, let rule = entry["rule"]?.stringValue
        else { return nil }
        return IoAssociation(
            sourceId: sourceId, sourceName: entry["sourceName"]?.stringValue ?? sourceId, actorId: actorId,
            actorName: entry["actorName"]?.stringValue ?? actorId, valueType: entry["valueType"]?.stringValue ?? "",
            sourceAgentId: entry["sourceAgentId"]?.stringValue, actorAgentId: entry["actorAgentId"]?.stringValue,
            route: route, updateRate: entry["updateRate"]?.numberValue, rule: rule)
    }

    static func summary(of associations: [IoAssociation]) -> JSONObject {
        var rules: [String: Int] = [:]
        var valueTypes: [String: Int] = [:]
        var sources: Set<String> = []
        var actors: Set<String> = []
        var agents: Set<String> = []
        for association in associations {
            rules[association.rule, default: 0] += 1
            valueTypes[association.valueType, default: 0] += 1
            sources.insert(association.sourceId)
            actors.insert(association.actorId)
            if let agent = association.sourceAgentId { agents.insert(agent) }
            if let agent = association.actorAgentId { agents.insert(agent) }
        }
        var summary: JSONObject = [
            "sources": .number(Double(sources.count)), "actors": .number(Double(actors.count)),
            "agents": .number(Double(agents.count)),
        ]
        func counts(_ counts: [String: Int], key: String) -> (listed: JSONValue, leftOut: Int) {
            let sorted = counts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
            let listed = sorted.prefix(summaryEntryLimit).map { name, count -> JSONValue in
                .object([key: .string(name), "associations": .number(Double(count))])
            }
            return (.array(listed), sorted.count - listed.count)
        }
        let (listedRules, rulesLeftOut) = counts(rules, key: "rule")
        let (listedTypes, typesLeftOut) = counts(valueTypes, key: "valueType")
        summary["rules"] = listedRules
        if rulesLeftOut > 0 { summary["rulesLeftOut"] = .number(Double(rulesLeftOut)) }
        summary["valueTypes"] = listedTypes
        if typesLeftOut > 0 { summary["valueTypesLeftOut"] = .number(Double(typesLeftOut)) }
        return summary
    }
}
