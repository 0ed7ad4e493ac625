import CoatyIORouting
import CoatyJSON
import CoatyModel
import Glibc
import RoutingRules
import Synchronization

/// Loads arbitrary bytes as a rule file and evaluates the rules with the router's own evaluation
/// (`IoRouterEvaluation`, as `IoRouter` uses it) on every compatible pair of the IO nodes an input brings along: rule file parsing, JsonLogic parsing and evaluation, and
/// the router's matching semantics all run. Used by the fuzzer and by the corpus regression test.
///
/// An input is a rule file, optionally followed by a line `#data` and a JSON object
/// `{"nodes": [IoNode...], "context": IoContext, "shared": {name: data}}` that the conditions read; without it,
/// the rules are matched against a fixed pair of nodes.
public final class RoutingFuzzHarness: Sendable {
    /// What the harness saw, for tests that check the inputs reached the evaluation.
    public struct Statistics: Sendable {
        public var ruleFilesLoaded = 0
        public var ruleFilesRejected = 0
        public var pairsEvaluated = 0
        public var pairsAssociated = 0
        public var conditionsFailed = 0
    }

    public static let dataSeparator: [UInt8] = Array("\n#data\n".utf8)

    private let ruleFile: String
    private let counts = Mutex(Statistics())

    /// Rule loading reads files, so each input is written to one file in a private temporary directory.
    public init() {
        var template = Array(((Self.temporaryDirectory) + "/coaty-edge-fuzz-rules.XXXXXX").utf8CString)
        let directory = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress else { return nil }
            return mkdtemp(base).map { String(cString: $0) }
        }
        guard let directory else { fatalError("cannot create a temporary directory for the rules fuzzer") }
        ruleFile = directory + "/rules.json"
    }

    deinit {
        removeFiles()
    }

    /// Removes the temporary rule file and its directory; for a process that exits without releasing the harness.
    public func removeFiles() {
        unlink(ruleFile)
        rmdir(String(ruleFile.dropLast("/rules.json".count)))
    }

    public var statistics: Statistics { counts.withLock { $0 } }

    public func feed(_ bytes: [UInt8]) {
        let (ruleBytes, dataBytes) = Self.split(bytes)
        write(ruleBytes)
        let rules: RoutingRuleSet
        do {
            rules = try RoutingRuleSet.load(files: [ruleFile])
        } catch {
            precondition(!error.problems.isEmpty, "a refused rule file names no problem")
            precondition(error.problems.allSatisfy { !$0.reason.isEmpty }, "a rule file problem without a reason")
            counts.withLock { $0.ruleFilesRejected += 1 }
            return
        }
        let data = dataBytes.flatMap { try? JSONValue(parsing: $0) }
        let nodes =
            data?["nodes"]?.arrayValue.map { $0.compactMap { try? IoNode(validating: $0) } } ?? Self.defaultNodes
        let context = data?["context"].flatMap { try? IoContext(validating: $0) } ?? Self.defaultContext
        let shared = data?["shared"]?.objectValue ?? [:]
        // The router's own evaluation: every compatible pair once, the first rule that holds.
        var evaluation = IoRouterEvaluation(context: context, rules: rules, sharedData: shared, namespace: "-")
        for node in nodes where !(node.ioSources.isEmpty && node.ioActors.isEmpty) { evaluation.manage(node) }
        evaluation.evaluate()
        let names = Set(rules.rules.map(\.name))
        let associations = evaluation.resolve().map(\.association)
        // The router logs each failure.
        precondition(evaluation.takeProblems().problems.allSatisfy { !$0.isEmpty }, "a rule failure without a message")
        precondition(associations.allSatisfy { names.contains($0.rule) }, "a pair matched a rule that was not loaded")
        let statistics = Statistics(
            pairsEvaluated: evaluation.statistics.pairsEvaluated, pairsAssociated: associations.count,
            conditionsFailed: evaluation.statistics.conditionsFailed)
        counts.withLock { counts in
            counts.ruleFilesLoaded += 1
            counts.pairsEvaluated += statistics.pairsEvaluated
            counts.pairsAssociated += statistics.pairsAssociated
            counts.conditionsFailed += statistics.conditionsFailed
        }
    }

    private static func split(_ bytes: [UInt8]) -> (rules: ArraySlice<UInt8>, data: ArraySlice<UInt8>?) {
        guard let range = bytes.firstRange(of: dataSeparator) else { return (bytes[...], nil) }
        return (bytes[..<range.lowerBound], bytes[range.upperBound...])
    }

    private func write(_ bytes: ArraySlice<UInt8>) {
        let descriptor = open(ruleFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { fatalError("cannot write \(ruleFile): errno \(errno)") }
        defer { close(descriptor) }
        var written = 0
        bytes.withUnsafeBytes { buffer in
            while written < buffer.count {
                let count = Glibc.write(descriptor, buffer.baseAddress.map { $0 + written }, buffer.count - written)
                guard count > 0 else {
                    if count < 0 && errno == EINTR { continue }
                    fatalError("cannot write \(ruleFile): errno \(errno)")
                }
                written += count
            }
        }
    }

    private static var temporaryDirectory: String {
        guard let directory = getenv("TMPDIR").map({ String(cString: $0) }), !directory.isEmpty else { return "/tmp" }
        return directory
    }

    /// A sensor agent and an actor agent of the demo's shape, for inputs without data.
    static let defaultNodes: [IoNode] = [
        IoNode(
            contextName: "ctx", objectId: "node-sensors", parentObjectId: "agent-sensors",
            ioSources: [
                IoSource(
                    objectId: "s1", name: "temperature", valueType: "coaty-edge.Temperature[Celsius]", updateRate: 1000),
                IoSource(objectId: "s2", name: "door", valueType: "coaty-edge.Switch"),
            ],
            ioActors: [], characteristics: ["site": "greenhouse", "floor": 1]),
        IoNode(
            contextName: "ctx", objectId: "node-actors", parentObjectId: "agent-actors", ioSources: [],
            ioActors: [
                IoActor(objectId: "a1", name: "fan", valueType: "coaty-edge.Temperature[Celsius]", updateRate: 500),
                IoActor(objectId: "a2", name: "alarm", valueType: "coaty-edge.Switch"),
            ],
            characteristics: ["isResponsibleForOperatingState": "normal", "rooms": ["a", "b"]]),
    ]

    static let defaultContext: IoContext = {
        var context = IoContext(objectId: "context", name: "ctx")
        context["operatingState"] = "normal"
        context["contextVersion"] = 3
        return context
    }()
}
