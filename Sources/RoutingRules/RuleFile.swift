import CoatyJSON
import JsonLogic

/// A problem in a rule file: which file, where in it, and why.
public struct RuleFileProblem: Sendable, Hashable, CustomStringConvertible {
    public enum Location: Sendable, Hashable {
        /// The file as a whole (it cannot be read, or the directory cannot be listed).
        case file
        /// A place in the text: the file is not JSON.
        case text(line: Int, column: Int)
        /// A value in the JSON document.
        case json(JSONPath)
    }

    public enum Severity: Sendable, Hashable {
        /// The file is refused.
        case error
        /// Loads, but is probably not what was meant.
        case warning
    }

    public var file: String
    public var location: Location
    public var reason: String
    public var severity: Severity

    public init(file: String, location: Location, reason: String, severity: Severity = .error) {
        self.file = file
        self.location = location
        self.reason = reason
        self.severity = severity
    }

    public var description: String {
        let reason = severity == .warning ? "warning: " + self.reason : self.reason
        return switch location {
        case .file: "\(file): \(reason)"
        case .text(let line, let column): "\(file):\(line):\(column): \(reason)"
        case .json(let path): "\(file): \(path): \(reason)"
        }
    }
}

/// Why rules could not be loaded: every problem found, in file order. Never empty.
public struct RuleLoadError: Error, Sendable, Hashable, CustomStringConvertible {
    public var problems: [RuleFileProblem]

    public init(problems: [RuleFileProblem]) {
        self.problems = problems
    }

    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}

/// Reads the rules of one file: `{"$schema"?: string, "rules": [{"name", "valueType", "condition",
/// "description"?}]}`. Keeps going after a problem, so one pass reports all of them.
struct RuleFileReader {
    let file: String
    private(set) var rules: [RoutingRule] = []
    private(set) var problems: [RuleFileProblem] = []

    static let documentMembers: [String] = ["$schema", "rules"]
    static let ruleMembers: [String] = ["name", "valueType", "condition", "description"]

    init(file: String, bytes: [UInt8]) {
        self.file = file
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes, mode: .strict)
        } catch {
            // Strict parsing's errors (a key given twice, text not in UTF-8) are at a path.
            let problem =
                if let path = error.path {
                    RuleFileProblem(file: file, location: .json(path), reason: error.reasonAndPosition)
                } else {
                    RuleFileProblem(
                        file: file, location: .text(line: error.line, column: error.column), reason: error.reason)
                }
            problems.append(problem)
            return
        }
        readDocument(JSONCursor(document))
    }

    private mutating func readDocument(_ document: JSONCursor) {
        guard report({ () throws(JSONShapeError) in try document.object() }) != nil else { return }
        rejectUnknownMembers(of: document, known: Self.documentMembers)
        report { () throws(JSONShapeError) in try document.optional("$schema")?.string() }
        guard let ruleList = report({ () throws(JSONShapeError) in try document.required("rules").elements() }) else {
            return
        }
        for rule in ruleList {
            readRule(rule)
        }
    }

    private mutating func readRule(_ rule: JSONCursor) {
        guard report({ () throws(JSONShapeError) in try rule.object() }) != nil else { return }
        let problemsBefore = problems.count
        rejectUnknownMembers(of: rule, known: Self.ruleMembers)
        let name = report { () throws(JSONShapeError) in try rule.required("name").nonEmptyString() }
        let valueType = report { () throws(JSONShapeError) in try Self.valueType(rule.required("valueType")) }
        let description = report { () throws(JSONShapeError) in try rule.optional("description")?.string() }
        var condition: JsonLogicExpression?
        if let cursor = report({ () throws(JSONShapeError) in try rule.required("condition") }) {
            do {
                let expression = try JsonLogicExpression(cursor.value, at: cursor.path)
                problems += ConditionData.problems(in: expression, file: file).filter { $0.severity == .error }
                condition = expression
            } catch {
                problems += error.problems.map(problem)
            }
        }
        guard problems.count == problemsBefore, let name, let valueType, let condition, let description else { return }
        rules.append(
            RoutingRule(
                name: name, valueType: valueType, condition: condition, description: description,
                origin: RuleOrigin(file: file, path: rule.path)))
    }

    private static func valueType(_ cursor: JSONCursor) throws(JSONShapeError) -> RoutingRule.ValueType {
        let text = try cursor.string()
        if text == "*" { return .any }
        guard !text.isEmpty else {
            throw cursor.error("must not be an empty string; use \"*\" for a rule that applies to any value type")
        }
        guard text.trimmingWhiteSpace() == text else {
            throw cursor.error("\(JSONValue.string(text).serialized()) has white space at its start or end")
        }
        return .named(text)
    }

    private mutating func rejectUnknownMembers(of object: JSONCursor, known: [String]) {
        guard let members = try? object.members() else { return }
        let list = known.map { JSONValue.string($0).serialized() }.joined(separator: ", ")
        for member in members where !known.contains(member.key) {
            problems.append(
                problem(
                    JSONShapeError(
                        path: member.value.path,
                        reason: "unknown member \(JSONValue.string(member.key).serialized()) (known: \(list))")))
        }
    }

    /// Runs one read; a shape error becomes a problem and the result nil.
    @discardableResult
    private mutating func report<T>(_ read: () throws(JSONShapeError) -> T) -> T? {
        do {
            return try read()
        } catch {
            problems.append(problem(error))
            return nil
        }
    }

    private func problem(_ error: JSONShapeError) -> RuleFileProblem {
        RuleFileProblem(file: file, location: .json(error.path), reason: error.reason)
    }
}

extension String {
    fileprivate func trimmingWhiteSpace() -> Substring {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return Substring(scalars[first...last])
    }
}
