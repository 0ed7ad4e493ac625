import CoatyTestSupport
import Foundation
import Testing

/// The fuzzer's seeds for the rules and router evaluation and for the actor/output path, replayed on every test
/// run (InboundCorpusTests replays the inbound ones): none may crash or break what the harness checks.
@Suite(.timeLimit(.minutes(1))) struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fuzz/corpus")

    /// The seeds of `path`, without their selector line.
    static func seeds(_ path: FuzzHarness.Path) throws -> [[UInt8]] {
        try FileManager.default.contentsOfDirectory(at: corpus, includingPropertiesForKeys: nil).compactMap { file in
            let (found, input) = FuzzHarness.path(of: Array(try Data(contentsOf: file)))
            return found == path ? Array(input) : nil
        }
    }

    @Test func ruleSeedsAreLoadedAndEvaluatedAsARouterDoes() throws {
        let seeds = try Self.seeds(.rules)
        #expect(seeds.count >= 8)
        let harness = RoutingFuzzHarness()
        for seed in seeds { harness.feed(seed) }
        let statistics = harness.statistics
        #expect(statistics.ruleFilesLoaded >= 6)
        #expect(statistics.ruleFilesRejected >= 3)
        #expect(statistics.pairsEvaluated >= 10)
        #expect(statistics.pairsAssociated >= 3)
        #expect(statistics.pairsAssociated < statistics.pairsEvaluated)
        #expect(statistics.conditionsFailed >= 1)
    }

    @Test func outputSeedsGoThroughTheActorControllerIntoTheOutputLogic() async throws {
        let seeds = try Self.seeds(.output)
        #expect(seeds.count >= 6)
        let harness = try await OutputFuzzHarness.make()
        for seed in seeds { harness.feed(seed) }
        let statistics = harness.statistics
        await harness.stop()
        #expect(statistics.outputsConfigured >= 5)
        #expect(statistics.valuesDelivered >= 30)
        #expect(statistics.valuesRejectedByType >= 3)
        #expect(statistics.valuesRejectedByOutput >= 3)
        #expect(statistics.switches >= 10)
    }

    @Test func randomMutationsOfTheSeedsNeverCrash() async throws {
        let seeds = try [FuzzHarness.Path.rules, .output].flatMap { path in
            try Self.seeds(path).map { Array((path.rawValue + "\n").utf8) + $0 }
        }
        let harness = try await FuzzHarness.make()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let seed = seeds.randomElement(using: &generator) ?? []
            // Past the selector line, so that the input stays on its path.
            let start = (seed.firstIndex(of: 0x0A) ?? 0) + 1
            harness.feed(mutate(seed, from: start, using: &generator))
            // Thousands of inputs take seconds: let the suites beside this one run meanwhile (two threads run them all).
            await Task.yield()
        }
        let rules = harness.rules.statistics
        let output = harness.output.statistics
        await harness.output.stop()
        #expect(rules.ruleFilesLoaded + rules.ruleFilesRejected > 0)
        #expect(output.valuesDelivered + output.valuesRejectedByType > 0)
    }
}
