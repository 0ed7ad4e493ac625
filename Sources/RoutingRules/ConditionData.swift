import CoatyJSON
import CoatyModel
import JsonLogic

/// The data a condition is evaluated with, and the check of what a condition reads from it.
///
/// A path whose first component is not one of the roots can never lead anywhere: the condition would quietly
/// read `null` (and a router would disassociate every pair), so it is an error. Below a root, only the Coaty
/// objects have a fixed set of properties; a property Coaty does not define may still be added by another agent,
/// so reading one is a warning. The IoContext carries application properties: it is checked only against a
/// given context (the router's), whose properties then count as defined. Characteristics and shared objects hold
/// application data and are not checked.
enum ConditionData {
    enum Root: String, CaseIterable {
        case source, sourceNode, actor, actorNode, context, shared

        func shape(context: IoContext?) -> Shape {
            switch self {
            case .source: .source
            case .actor: .actor
            case .sourceNode, .actorNode: .node
            case .context: context.map(Shape.context) ?? .freeForm
            case .shared: .freeForm
            }
        }

        static let list = allCases.map(\.rawValue).formattedList(conjunction: "and")
    }

    /// What is known about the members of a value.
    indirect enum Shape: Sendable {
        /// Application data, or a value whose members are not worth checking (strings, numbers).
        case freeForm
        /// A Coaty object with the properties Coaty defines for its core type.
        case coatyObject(CoreType, properties: [String: Shape])
        /// An array of such values: indexes and `length`.
        case array(of: Shape)

        static let source = coatyObject(IoSource.coreType, IoSource.definedProperties)
        static let actor = coatyObject(IoActor.coreType, IoActor.definedProperties)
        static let node = Shape.coatyObject(
            IoNode.coreType,
            properties: Dictionary(uniqueKeysWithValues: IoNode.definedProperties.map { ($0, Shape.freeForm) })
                .merging(["ioSources": .array(of: source), "ioActors": .array(of: actor)]) { _, specific in specific })

        /// An IoContext with the properties Coaty defines and those `context` has.
        static func context(_ context: IoContext) -> Shape {
            coatyObject(IoContext.coreType, Array(Set(CoatyObject.definedProperties).union(context.object.json.keys)))
        }

        private static func coatyObject(_ coreType: CoreType, _ properties: [String]) -> Shape {
            .coatyObject(coreType, properties: Dictionary(uniqueKeysWithValues: properties.map { ($0, .freeForm) }))
        }
    }

    /// The problems in what `condition` reads: errors for unknown roots, warnings for properties that the Coaty
    /// objects (and `context`, if given) do not have. `file` is for the messages.
    static func problems(in condition: JsonLogicExpression, file: String, context: IoContext? = nil)
        -> [RuleFileProblem]
    {
        condition.dataReferences.compactMap { reference in
            check(reference, context: context).map {
                RuleFileProblem(
                    file: file, location: .json(reference.location), reason: $0.reason, severity: $0.severity)
            }
        }
    }

    private static func check(
        _ reference: JsonLogicDataReference, context: IoContext?
    ) -> (reason: String, severity: RuleFileProblem.Severity)? {
        switch reference.path {
        case .literal(let components):
            guard let first = components.first else { return nil }  // the whole data
            let written = JSONValue.string(components.joined(separator: ".")).serialized()
            guard let root = Root(rawValue: first) else {
                return ("unknown variable \(written): \(unknownRoot(first))", .error)
            }
            return checkMembers(components.dropFirst(), of: root.shape(context: context), after: root.rawValue).map {
                ("variable \(written): \($0); it reads null unless another agent adds it", .warning)
            }
        case .computed(let prefix):
            // Only the root can be known before evaluating, and only when the literal start of the path shows it.
            let written = JSONValue.string(prefix).serialized()
            if let dot = prefix.firstIndex(of: ".") {
                let first = String(prefix[..<dot])
                guard Root(rawValue: first) == nil else { return nil }
                return ("unknown variable: the computed path starts with \(written): \(unknownRoot(first))", .error)
            }
            guard !prefix.isEmpty, !Root.allCases.contains(where: { $0.rawValue.hasPrefix(prefix) }) else { return nil }
            return (
                "unknown variable: the computed path starts with \(written), which no root does: \(unknownRoot(prefix))",
                .error
            )
        }
    }

    private static func unknownRoot(_ name: String) -> String {
        "a condition reads \(Root.list), not \(JSONValue.string(name).serialized())"
            + suggestion(for: name, among: Root.allCases.map(\.rawValue))
    }

    /// Why `components` lead nowhere in a value of `shape` reached by `path`, or nil when they may lead somewhere.
    private static func checkMembers(_ components: ArraySlice<String>, of shape: Shape, after path: String) -> String? {
        guard let component = components.first else { return nil }
        switch shape {
        case .freeForm:
            return nil
        case .coatyObject(let coreType, let properties):
            guard let next = properties[component] else {
                let unknown =
                    "\(path) is an \(coreType.rawValue), which has no property \(JSONValue.string(component).serialized())"
                let hint = suggestion(for: component, among: Array(properties.keys))
                return unknown
                    + (hint.isEmpty
                        ? " (Coaty defines \(properties.keys.sorted().formattedList(conjunction: "and")))" : hint)
            }
            return checkMembers(components.dropFirst(), of: next, after: path + "." + component)
        case .array(let element):
            if component == "length" { return nil }
            guard isArrayIndex(component) else {
                return
                    "\(path) is an array: what follows it must be an index or \"length\", found \(JSONValue.string(component).serialized())"
            }
            return checkMembers(components.dropFirst(), of: element, after: path + "." + component)
        }
    }

    private static func isArrayIndex(_ text: String) -> Bool {
        guard let first = text.utf8.first else { return false }
        return text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            && (first != UInt8(ascii: "0") || text.utf8.count == 1)
    }

    /// ` (did you mean "x"?)` for the one candidate within two edits of `name` (ignoring case), else "".
    private static func suggestion(for name: String, among candidates: [String]) -> String {
        let close = candidates.filter { editDistance(name.lowercased(), $0.lowercased(), atMost: 2) != nil }
        guard close.count == 1, let candidate = close.first else { return "" }
        return " (did you mean \(JSONValue.string(candidate).serialized())?)"
    }

    /// The Levenshtein distance of `a` and `b` if it is at most `limit`, else nil.
    static func editDistance(_ a: String, _ b: String, atMost limit: Int) -> Int? {
        let a = Array(a.unicodeScalars)
        let b = Array(b.unicodeScalars)
        guard abs(a.count - b.count) <= limit else { return nil }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count] <= limit ? previous[b.count] : nil
    }
}

extension [String] {
    /// "a, b and c".
    func formattedList(conjunction: String) -> String {
        guard count > 1, let last else { return first ?? "" }
        return dropLast().joined(separator: ", ") + " \(conjunction) " + last
    }
}
