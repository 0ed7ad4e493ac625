import CoatyJSON
import CoatyModel
import JsonLogic

/// One IO routing rule: associate a source with an actor when the condition holds.
///
/// The condition sees `{"source", "sourceNode", "actor", "actorNode", "context", "shared"}`: the IoSource, the
/// IoNode it belongs to, the IoActor, its IoNode and the router's IoContext, as they travel on the wire, and the
/// data of the shared objects the rules name (`shared.setpoints.fanOn` is key `fanOn` of object `setpoints`).
/// A rule file whose condition reads anything else is refused (`ConditionData`).
public struct RoutingRule: Sendable, Hashable {
    /// Which sources the rule applies to.
    public enum ValueType: Sendable, Hashable, CustomStringConvertible {
        /// `"*"` in a rule file: any value type that no rule names.
        case any
        /// Sources with exactly this `valueType`.
        case named(String)

        public var description: String {
            switch self {
            case .any: "*"
            case .named(let name): name
            }
        }
    }

    public var name: String
    public var valueType: ValueType
    public var condition: JsonLogicExpression
    public var description: String?
    /// Where the rule is defined, for messages.
    public var origin: RuleOrigin

    public init(
        name: String, valueType: ValueType, condition: JsonLogicExpression, description: String? = nil,
        origin: RuleOrigin
    ) {
        self.name = name
        self.valueType = valueType
        self.condition = condition
        self.description = description
        self.origin = origin
    }

    /// What the condition reads that is probably a mistake but may still work: properties that Coaty does not
    /// define for the object read (another agent may add them). With the router's `context`, also the context
    /// properties that it does not have; without, the context is not checked.
    public func warnings(context: IoContext? = nil) -> [RuleFileProblem] {
        ConditionData.problems(in: condition, file: origin.file, context: context).filter { $0.severity == .warning }
    }
}

/// A place in a rule file.
public struct RuleOrigin: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var path: JSONPath

    public init(file: String, path: JSONPath) {
        self.file = file
        self.path = path
    }

    public var description: String { "\(file): \(path)" }
}

/// The rules a router applies, grouped by value type as Coaty's RuleBasedIoRouter groups them.
public struct RoutingRuleSet: Sendable {
    /// All rules, in the order they were loaded.
    public let rules: [RoutingRule]
    private let rulesByValueType: [String: [RoutingRule]]
    private let rulesForAnyValueType: [RoutingRule]

    public static let empty = RoutingRuleSet(checked: [])

    /// The shared objects whose data the conditions read: the second component of each literal path read that
    /// starts with `shared`.
    public var sharedObjectNames: Set<String> {
        Set(
            rules.flatMap { rule in
                rule.condition.dataReferences.compactMap { reference in
                    guard case .literal(let path) = reference.path, path.count >= 2,
                        path[0] == ConditionData.Root.shared.rawValue
                    else { return nil }
                    return path[1]
                }
            })
    }

    /// The warnings of all rules, in order (see `RoutingRule.warnings(context:)`).
    public func warnings(context: IoContext? = nil) -> [RuleFileProblem] {
        rules.flatMap { $0.warnings(context: context) }
    }

    /// A rule set from rules whose names must be unique.
    public init(_ rules: [RoutingRule]) throws(RuleLoadError) {
        var firstByName: [String: RoutingRule] = [:]
        var problems: [RuleFileProblem] = []
        for rule in rules {
            if let first = firstByName[rule.name] {
                problems.append(
                    RuleFileProblem(
                        file: rule.origin.file, location: .json(rule.origin.path.appending("name")),
                        reason:
                            "duplicate rule name \(JSONValue.string(rule.name).serialized()), first defined in \(first.origin)"
                    ))
            } else {
                firstByName[rule.name] = rule
            }
        }
        guard problems.isEmpty else { throw RuleLoadError(problems: problems) }
        self.init(checked: rules)
    }

    private init(checked rules: [RoutingRule]) {
        self.rules = rules
        var byValueType: [String: [RoutingRule]] = [:]
        var forAny: [RoutingRule] = []
        for rule in rules {
            switch rule.valueType {
            case .any: forAny.append(rule)
            case .named(let valueType): byValueType[valueType, default: []].append(rule)
            }
        }
        rulesByValueType = byValueType
        rulesForAnyValueType = forAny
    }

    /// Finds the rule that associates `actor` with `source`, with the semantics of Coaty's RuleBasedIoRouter:
    /// if any rule names the source's value type, only those rules are tried, otherwise the `"*"` rules; in
    /// order, the first whose condition is truthy wins. A condition that fails to evaluate counts as false and
    /// is reported in the result.
    ///
    /// The caller checks that the value types of source and actor are compatible; the rules do not.
    public func match(
        source: JSONValue, sourceNode: JSONValue, actor: JSONValue, actorNode: JSONValue, context: JSONValue,
        shared: JSONObject = [:]
    ) -> RuleMatch {
        let candidates = source["valueType"]?.stringValue.flatMap { rulesByValueType[$0] } ?? rulesForAnyValueType
        guard !candidates.isEmpty else { return RuleMatch(rule: nil, failures: []) }
        typealias Root = ConditionData.Root
        let data: JSONValue = [
            Root.source.rawValue: source, Root.sourceNode.rawValue: sourceNode, Root.actor.rawValue: actor,
            Root.actorNode.rawValue: actorNode, Root.context.rawValue: context, Root.shared.rawValue: .object(shared),
        ]
        var failures: [RuleFailure] = []
        for rule in candidates {
            do {
                if try rule.condition.isSatisfied(by: data) {
                    return RuleMatch(rule: rule, failures: failures)
                }
            } catch {
                failures.append(RuleFailure(rule: rule, error: error))
            }
        }
        return RuleMatch(rule: nil, failures: failures)
    }
}

extension RoutingRuleSet: Equatable {
    /// Rule sets are equal when they route every pair alike and name the same rules for it: the same names and
    /// conditions in the same order for each value type. Descriptions and where the rules are written do not
    /// count, so a router can skip re-evaluating when only those changed.
    public static func == (lhs: RoutingRuleSet, rhs: RoutingRuleSet) -> Bool {
        func key(_ rules: [RoutingRule]) -> [RoutingKey] {
            rules.map { RoutingKey(name: $0.name, condition: $0.condition) }
        }
        return key(lhs.rulesForAnyValueType) == key(rhs.rulesForAnyValueType)
            && lhs.rulesByValueType.mapValues(key) == rhs.rulesByValueType.mapValues(key)
    }

    private struct RoutingKey: Equatable {
        var name: String
        var condition: JsonLogicExpression
    }
}

/// The outcome of matching one source–actor pair.
public struct RuleMatch: Sendable, Equatable {
    /// The first rule whose condition held, or nil: do not associate.
    public var rule: RoutingRule?
    /// Rules tried before the outcome whose condition failed to evaluate, in order; they counted as false.
    public var failures: [RuleFailure]
}

/// A condition that could not be evaluated for a pair.
public struct RuleFailure: Sendable, Equatable, CustomStringConvertible {
    public var rule: RoutingRule
    public var error: JsonLogicEvaluationError

    public var description: String {
        "rule \(JSONValue.string(rule.name).serialized()) in \(rule.origin.file): \(error)"
    }
}
