import CoatyJSON
import CoatyModel
import RoutingRules

/// A pair a router may associate, with everything a rule may look at.
public struct IoRoutingCandidate: Sendable {
    public let source: IoSource
    public let sourceNode: IoNode
    public let actor: IoActor
    public let actorNode: IoNode
    public let context: IoContext
    /// The data of the shared objects the rules read, by object name.
    public let shared: JSONObject

    /// The data rule conditions read: `source`, `sourceNode`, `actor`, `actorNode` and `context`, each as its JSON,
    /// and `shared`.
    public var ruleData: JSONValue {
        [
            "source": source.jsonValue, "sourceNode": sourceNode.jsonValue, "actor": actor.jsonValue,
            "actorNode": actorNode.jsonValue, "context": context.jsonValue, "shared": .object(shared),
        ]
    }
}

/// Decides which compatible pairs a router associates.
public protocol IoRoutingRules: Sendable {
    /// The rule that associates the pair (nil leaves it unassociated), and the conditions that failed to
    /// evaluate on the way, for the router to log.
    func match(_ candidate: IoRoutingCandidate) -> IoRuleMatch
    /// The shared objects whose data the rules read; the router follows them and re-evaluates when they change.
    var sharedObjectNames: Set<String> { get }
}

extension IoRoutingRules {
    public var sharedObjectNames: Set<String> { [] }
}

public struct IoRuleMatch: Sendable, Equatable {
    public var rule: String?
    public var problems: [String]

    public init(rule: String?, problems: [String] = []) {
        self.rule = rule
        self.problems = problems
    }
}

/// A routing rule written in Swift.
public struct IoAssociationRule: Sendable {
    public var name: String
    /// The value type of the sources the rule is for; nil for a rule that applies to every value type.
    public var valueType: String?
    public var condition: @Sendable (IoRoutingCandidate) -> Bool

    public init(name: String, valueType: String?, condition: @escaping @Sendable (IoRoutingCandidate) -> Bool) {
        self.name = name
        self.valueType = valueType
        self.condition = condition
    }
}

/// Rules with Coaty's semantics: the rules for the source's value type are tried in order, and only when there
/// are none for that value type, the rules for every value type; the first that holds associates the pair.
public struct IoAssociationRules: IoRoutingRules {
    private let byValueType: [String: [IoAssociationRule]]
    private let global: [IoAssociationRule]

    public init(_ rules: [IoAssociationRule]) {
        byValueType = Dictionary(grouping: rules.filter { $0.valueType != nil && $0.valueType != "" }) {
            $0.valueType ?? ""
        }
        global = rules.filter { $0.valueType == nil || $0.valueType == "" }
    }

    /// Every compatible pair, as Coaty's BasicIoRouter does.
    public static let all = IoAssociationRules([IoAssociationRule(name: "all", valueType: nil) { _ in true }])

    public func match(_ candidate: IoRoutingCandidate) -> IoRuleMatch {
        let rules = byValueType[candidate.source.valueType] ?? global
        return IoRuleMatch(rule: rules.first { $0.condition(candidate) }?.name)
    }
}

/// Rules read from JSON files, with JsonLogic conditions.
extension RoutingRuleSet: IoRoutingRules {
    public func match(_ candidate: IoRoutingCandidate) -> IoRuleMatch {
        let result = match(
            source: candidate.source.jsonValue, sourceNode: candidate.sourceNode.jsonValue,
            actor: candidate.actor.jsonValue,
            actorNode: candidate.actorNode.jsonValue, context: candidate.context.jsonValue, shared: candidate.shared)
        return IoRuleMatch(rule: result.rule?.name, problems: result.failures.map(\.description))
    }
}
