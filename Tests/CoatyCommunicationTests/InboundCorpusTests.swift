import CoatyTestSupport
import Foundation
import Testing

/// The fuzzer's seed inputs, replayed on every test run: none may crash, malformed ones are counted.
@Suite struct InboundCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fuzz/corpus")

    @Test func seedInputsGoThroughTheInboundPath() async throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.corpus, includingPropertiesForKeys: nil)
        #expect(files.count >= 50)
        let harness = InboundFuzzHarness()
        await harness.waitUntilOnline()
        for file in files {
            harness.feed(Array(try Data(contentsOf: file)))
        }
        let statistics = harness.manager.statistics
        #expect(statistics.messagesReceived > 40)
        #expect(statistics.messagesRejected >= 3)
        // At least the oversized Discover seed; the rules and output seeds of the other harnesses may be over the limit too.
        #expect(statistics.messagesOversized >= 1)
        #expect(statistics.ioValuesReceived >= 1)
        // Discovers of the identity and nodes were answered.
        #expect(harness.published > 0)
    }

    @Test func randomMutationsOfTheSeedsNeverCrash() async throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.corpus, includingPropertiesForKeys: nil)
        let seeds = try files.map { Array(try Data(contentsOf: $0)) }
        let harness = InboundFuzzHarness()
        await harness.waitUntilOnline()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            harness.feed(mutate(seeds.randomElement(using: &generator) ?? [], using: &generator))
            // Thousands of inputs take seconds: let the suites beside this one run meanwhile (two threads run them all).
            await Task.yield()
        }
        let statistics = harness.manager.statistics
        #expect(statistics.messagesReceived + statistics.messagesRejected + statistics.ioValuesReceived > 0)
    }
}
