import Foundation
import RoutingRules
import Testing

/// These tests wait for the watcher for real. The time limit only guards against a hang; nothing here asserts
/// how long anything takes.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct WatcherTests {
    typealias Outcome = RuleDirectoryWatcher.Element

    /// The next outcome that passes `accept`. Intermediate outcomes (say, a load that saw a file being created
    /// before its content was written) are skipped.
    func next(
        _ iterator: inout AsyncStream<Outcome>.Iterator, where accept: (Outcome) -> Bool
    ) async throws -> Outcome {
        while let outcome = await iterator.next() {
            if accept(outcome) { return outcome }
        }
        throw WatcherEnded()
    }

    struct WatcherEnded: Error {}

    /// The names in the next successfully loaded rule set that differs from `previous`.
    func nextRules(_ iterator: inout AsyncStream<Outcome>.Iterator, after previous: [String]) async throws -> [String]?
    {
        names(try await next(&iterator) { names($0).map { $0 != previous } ?? false })
    }

    func names(_ outcome: Outcome) -> [String]? {
        guard case .success(let ruleSet) = outcome else { return nil }
        return ruleSet.rules.map(\.name)
    }

    @Test func reloadsOnEveryKindOfChange() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("a.json", rulesDocument(["one"]))
        var updates = RuleDirectoryWatcher(directory: directory.path).makeAsyncIterator()

        #expect(names(try await next(&updates) { _ in true }) == ["one"])

        try directory.write("a.json", rulesDocument(["two"]))
        #expect(try await nextRules(&updates, after: ["one"]) == ["two"])

        try directory.saveByRename("a.json", rulesDocument(["three"]))
        #expect(try await nextRules(&updates, after: ["two"]) == ["three"])

        try directory.write("a.json", #"{"rules": [{"name": "four", "valueType": "t", "condition": {"nope": 1}}]}"#)
        let broken = try await next(&updates) { names($0) == nil }
        #expect(
            throws: RuleLoadError(problems: [
                RuleFileProblem(
                    file: directory.file("a.json"),
                    location: .json(.init([.key("rules"), .index(0), .key("condition"), .key("nope")])),
                    reason: #"unknown operator "nope""#)
            ])
        ) { try broken.get() }

        try directory.write("a.json", rulesDocument(["four"]))
        #expect(try await nextRules(&updates, after: []) == ["four"])

        try directory.write("b.json", rulesDocument(["five"]))
        #expect(try await nextRules(&updates, after: ["four"]) == ["four", "five"])

        try directory.delete("a.json")
        #expect(try await nextRules(&updates, after: ["four", "five"]) == ["five"])

        try directory.rename("b.json", to: "b.json.disabled")
        #expect(try await nextRules(&updates, after: ["five"]) == [])

        try directory.rename("b.json.disabled", to: "b.json")
        #expect(try await nextRules(&updates, after: []) == ["five"])
    }

    @Test func changesThatDoNotChangeTheRulesYieldNothing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("a.json", rulesDocument(["one"]))
        var updates = RuleDirectoryWatcher(directory: directory.path).makeAsyncIterator()
        #expect(names(try await next(&updates) { _ in true }) == ["one"])

        // Unrelated files, and a rule file rewritten with the same rules, produce no new rule set: the next one
        // is the real change made afterwards.
        try directory.write("notes.txt", "scratch")
        try directory.write("a.json", rulesDocument(["one"]))
        try directory.write("a.json", rulesDocument(["two"]))
        #expect(names(try await next(&updates) { names($0) != nil }) == ["two"])
    }

    @Test func removingTheDirectoryEndsTheWatch() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var updates = RuleDirectoryWatcher(directory: directory.path).makeAsyncIterator()
        #expect(names(try await next(&updates) { _ in true }) == [])
        directory.remove()
        let last = try await next(&updates) { names($0) == nil }
        #expect(
            throws: RuleLoadError(problems: [
                RuleFileProblem(
                    file: directory.path, location: .file,
                    reason: "the directory was removed or moved; it is no longer watched")
            ])
        ) { try last.get() }
        #expect(await updates.next() == nil)
    }

    @Test func aMissingDirectoryIsReportedAndEndsTheWatch() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let missing = directory.file("missing")
        var updates = RuleDirectoryWatcher(directory: missing).makeAsyncIterator()
        let outcome = try #require(await updates.next())
        #expect(
            throws: RuleLoadError(problems: [
                RuleFileProblem(
                    file: missing, location: .file,
                    reason: "cannot watch the directory: inotify_add_watch: No such file or directory")
            ])
        ) { try outcome.get() }
        #expect(await updates.next() == nil)
    }

    @Test func cancellingTheConsumerStopsTheThreadAndClosesTheDescriptors() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task {
            var count = 0
            for await _ in RuleDirectoryWatcher(directory: directory.path) {
                count += 1
                startedContinuation.yield()
            }
            return count
        }
        var startedIterator = started.makeAsyncIterator()
        await startedIterator.next()
        #expect(Self.inotifyDescriptors(watching: directory.path).count == 1)

        consumer.cancel()
        #expect(await consumer.value == 1)
        // The thread closes its inotify descriptor and both ends of its stop pipe together as it exits.
        await Self.waitUntil { Self.inotifyDescriptors(watching: directory.path).isEmpty }
        #expect(Self.inotifyDescriptors(watching: directory.path).isEmpty)
    }

    @Test func droppingTheIteratorStopsTheWatcher() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            var updates = RuleDirectoryWatcher(directory: directory.path).makeAsyncIterator()
            #expect(await updates.next() != nil)
            #expect(Self.inotifyDescriptors(watching: directory.path).count == 1)
        }
        await Self.waitUntil { Self.inotifyDescriptors(watching: directory.path).isEmpty }
        #expect(Self.inotifyDescriptors(watching: directory.path).isEmpty)
    }

    /// Polls a condition that a watcher thread makes true as it exits, for at most 20 seconds; the caller then
    /// checks the condition, so a watcher that never stops fails the test with what was found.
    static func waitUntil(_ condition: () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition() && ContinuousClock.now < deadline {
            do { try await Task.sleep(for: .milliseconds(5)) } catch { return }
        }
    }

    /// This process's inotify descriptors that watch `path`. Tests running alongside open their own watchers and
    /// pipes; the inode a descriptor watches (in /proc/self/fdinfo) tells this test's watcher apart.
    static func inotifyDescriptors(watching path: String) -> [String] {
        var information = stat()
        guard stat(path, &information) == 0 else { return [] }
        let watched = "ino:" + String(information.st_ino, radix: 16) + " "
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter { descriptor in
            guard (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)")) == "anon_inode:inotify",
                let details = try? String(contentsOfFile: "/proc/self/fdinfo/\(descriptor)", encoding: .utf8)
            else { return false }
            return details.split(separator: "\n").contains { $0.hasPrefix("inotify wd:") && $0.contains(watched) }
        }
    }
}
