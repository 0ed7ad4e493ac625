import CoatyTestSupport
import Foundation
import RoutingRules
import Synchronization
import Testing

/// These tests wait for the watcher for real. The time limit only guards against a hang; nothing here asserts
/// how long anything takes.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct WatcherTests {
    typealias Outcome = RulePathWatcher.Element

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
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(rulesDocument(["one"]), to: "a.json")
        var updates = RulePathWatcher(path: directory.path).makeAsyncIterator()

        #expect(names(try await next(&updates) { _ in true }) == ["one"])

        try directory.write(rulesDocument(["two"]), to: "a.json")
        #expect(try await nextRules(&updates, after: ["one"]) == ["two"])

        try directory.saveByRename("a.json", rulesDocument(["three"]))
        #expect(try await nextRules(&updates, after: ["two"]) == ["three"])

        try directory.write(#"{"rules": [{"name": "four", "valueType": "t", "condition": {"nope": 1}}]}"#, to: "a.json")
        let broken = try await next(&updates) { names($0) == nil }
        #expect(
            throws: RuleLoadError(problems: [
                RuleFileProblem(
                    file: directory.file("a.json").path,
                    location: .json(.init([.key("rules"), .index(0), .key("condition"), .key("nope")])),
                    reason: #"unknown operator "nope""#)
            ])
        ) { try broken.get() }

        try directory.write(rulesDocument(["four"]), to: "a.json")
        #expect(try await nextRules(&updates, after: []) == ["four"])

        try directory.write(rulesDocument(["five"]), to: "b.json")
        #expect(try await nextRules(&updates, after: ["four"]) == ["four", "five"])

        try directory.delete("a.json")
        #expect(try await nextRules(&updates, after: ["four", "five"]) == ["five"])

        try directory.rename("b.json", to: "b.json.disabled")
        #expect(try await nextRules(&updates, after: ["five"]) == [])

        try directory.rename("b.json.disabled", to: "b.json")
        #expect(try await nextRules(&updates, after: []) == ["five"])
    }

    @Test func changesThatDoNotChangeTheRulesYieldNothing() async throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(rulesDocument(["one"]), to: "a.json")
        var updates = RulePathWatcher(path: directory.path).makeAsyncIterator()
        #expect(names(try await next(&updates) { _ in true }) == ["one"])

        // Unrelated files, and a rule file rewritten with the same rules, produce no new rule set: the next one
        // is the real change made afterwards.
        try directory.write("scratch", to: "notes.txt")
        try directory.write(rulesDocument(["one"]), to: "a.json")
        try directory.write(rulesDocument(["two"]), to: "a.json")
        #expect(names(try await next(&updates) { names($0) != nil }) == ["two"])
    }

    static func missing(_ path: String) -> RuleLoadError {
        RuleLoadError(problems: [
            RuleFileProblem(
                file: path, location: .file,
                reason: "the rules path does not exist (removed, moved away, or a symlink to nothing); "
                    + "its rules are loaded again when it reappears")
        ])
    }

    /// `mv rules rules.old && mv rules.old rules`: reported missing meanwhile, then loaded and watched again.
    @Test func aDirectoryMovedAwayAndBackIsWatchedOn() async throws {
        let base = try ScratchDirectory("rules-test")
        defer { base.remove() }
        try FileManager.default.createDirectory(atPath: base.file("rules").path, withIntermediateDirectories: false)
        try base.write(rulesDocument(["one"]), to: "rules/a.json")
        var updates = RulePathWatcher(path: base.file("rules").path).makeAsyncIterator()
        #expect(names(try await next(&updates) { _ in true }) == ["one"])

        try base.rename("rules", to: "rules.old")
        let gone = try await next(&updates) { names($0) == nil }
        #expect(throws: Self.missing(base.file("rules").path)) { try gone.get() }

        try base.rename("rules.old", to: "rules")
        #expect(try await nextRules(&updates, after: []) == ["one"])
        try base.write(rulesDocument(["two"]), to: "rules/a.json")
        #expect(try await nextRules(&updates, after: ["one"]) == ["two"])
        try base.saveByRename("rules/b.json", rulesDocument(["three"]))
        #expect(try await nextRules(&updates, after: ["two"]) == ["two", "three"])
    }

    /// The atomic deploy: `ln -s v2 rules.new && mv -T rules.new rules`. The new target's files are watched after.
    @Test func aSymlinkSwappedToAnotherDirectoryIsFollowed() async throws {
        let base = try ScratchDirectory("rules-test")
        defer { base.remove() }
        for version in ["v1", "v2"] {
            try FileManager.default.createDirectory(atPath: base.file(version).path, withIntermediateDirectories: false)
            try base.write(rulesDocument([version]), to: "\(version)/rules.json")
        }
        try FileManager.default.createSymbolicLink(atPath: base.file("rules").path, withDestinationPath: "v1")
        var updates = RulePathWatcher(path: base.file("rules").path).makeAsyncIterator()
        #expect(names(try await next(&updates) { _ in true }) == ["v1"])

        try FileManager.default.createSymbolicLink(atPath: base.file("rules.new").path, withDestinationPath: "v2")
        try base.rename("rules.new", to: "rules")
        #expect(try await nextRules(&updates, after: ["v1"]) == ["v2"])

        try base.write(rulesDocument(["v2", "edited"]), to: "v2/rules.json")
        #expect(try await nextRules(&updates, after: ["v2"]) == ["v2", "edited"])

        // A link to nothing is a missing path; pointing it back at a directory loads that.
        try FileManager.default.createSymbolicLink(atPath: base.file("rules.new").path, withDestinationPath: "v3")
        try base.rename("rules.new", to: "rules")
        let dangling = try await next(&updates) { names($0) == nil }
        #expect(throws: Self.missing(base.file("rules").path)) { try dangling.get() }
        try base.rename("v1", to: "v3")
        #expect(try await nextRules(&updates, after: []) == ["v1"])
    }

    /// A rules path that is one file, saved by an editor that writes a temporary file and renames it over.
    @Test func aSingleFileReplacedByRenameIsWatchedOn() async throws {
        let base = try ScratchDirectory("rules-test")
        defer { base.remove() }
        try base.write(rulesDocument(["one"]), to: "rules.json")
        try base.write(rulesDocument(["not these"]), to: "other.json")
        var updates = RulePathWatcher(path: base.file("rules.json").path).makeAsyncIterator()
        #expect(names(try await next(&updates) { _ in true }) == ["one"])

        try base.saveByRename("rules.json", rulesDocument(["two"]))
        #expect(try await nextRules(&updates, after: ["one"]) == ["two"])
        try base.saveByRename("rules.json", rulesDocument(["three"]))
        #expect(try await nextRules(&updates, after: ["two"]) == ["three"])
        try base.write(rulesDocument(["four"]), to: "rules.json")
        #expect(try await nextRules(&updates, after: ["three"]) == ["four"])

        try base.delete("rules.json")
        let gone = try await next(&updates) { names($0) == nil }
        #expect(throws: Self.missing(base.file("rules.json").path)) { try gone.get() }
        try base.saveByRename("rules.json", rulesDocument(["five"]))
        #expect(try await nextRules(&updates, after: []) == ["five"])
    }

    /// A path missing from the start is reported once, not on every recheck, and loaded when it appears.
    @Test func aMissingPathIsReportedOnceAndLoadedWhenItAppears() async throws {
        let base = try ScratchDirectory("rules-test")
        defer { base.remove() }
        let outcomes = OutcomeRecorder(
            RulePathWatcher(path: base.file("rules").path, recheckInterval: .milliseconds(20)))
        defer { outcomes.stop() }
        await outcomes.waitUntil { $0.count >= 1 }
        // Fifty rechecks' time, to give a watcher that reports on every recheck the chance to do so.
        try await Task.sleep(for: .seconds(1))
        let reports = outcomes.all
        #expect(reports.count == 1)
        #expect(throws: Self.missing(base.file("rules").path)) { try reports.first?.get() }

        try FileManager.default.createDirectory(atPath: base.file("rules").path, withIntermediateDirectories: false)
        try base.write(rulesDocument(["one"]), to: "rules/a.json")
        await outcomes.waitUntil { names($0.last ?? .success(.empty)) == ["one"] }
        #expect(outcomes.all.last.flatMap(names) == ["one"])
    }

    /// A parent directory swapped through a symlink higher up, which inotify does not report: found by the recheck.
    @Test func aParentReplacedHigherUpIsFoundByTheRecheck() async throws {
        let base = try ScratchDirectory("rules-test")
        defer { base.remove() }
        for release in ["release1", "release2"] {
            try FileManager.default.createDirectory(
                atPath: base.file("\(release)/rules").path, withIntermediateDirectories: true)
            try base.write(rulesDocument([release]), to: "\(release)/rules/a.json")
        }
        try FileManager.default.createSymbolicLink(atPath: base.file("current").path, withDestinationPath: "release1")
        var updates = RulePathWatcher(path: base.file("current/rules").path, recheckInterval: .milliseconds(100))
            .makeAsyncIterator()
        #expect(names(try await next(&updates) { _ in true }) == ["release1"])

        try FileManager.default.createSymbolicLink(
            atPath: base.file("current.new").path, withDestinationPath: "release2")
        try base.rename("current.new", to: "current")
        #expect(try await nextRules(&updates, after: ["release1"]) == ["release2"])
        try base.write(rulesDocument(["release2", "edited"]), to: "release2/rules/a.json")
        #expect(try await nextRules(&updates, after: ["release2"]) == ["release2", "edited"])
    }

    @Test func cancellingTheConsumerStopsTheThreadAndClosesTheDescriptors() async throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task {
            var count = 0
            for await _ in RulePathWatcher(path: directory.path) {
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
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        do {
            var updates = RulePathWatcher(path: directory.path).makeAsyncIterator()
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
            guard
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)"))
                    == "anon_inode:inotify",
                let details = try? procFile("/proc/self/fdinfo/\(descriptor)")
            else { return false }
            return details.split(separator: "\n").contains { $0.hasPrefix("inotify wd:") && $0.contains(watched) }
        }
    }
}

/// Consumes a watcher on a task of its own and keeps every outcome, for tests that count them.
final class OutcomeRecorder: Sendable {
    private let outcomes = Mutex<[RulePathWatcher.Element]>([])
    private let consumer = Mutex<Task<Void, Never>?>(nil)

    init(_ watcher: RulePathWatcher) {
        // Holds the recorder until the watcher ends, which `stop()` makes it do.
        let task = Task {
            for await outcome in watcher {
                self.outcomes.withLock { $0.append(outcome) }
            }
        }
        consumer.withLock { $0 = task }
    }

    var all: [RulePathWatcher.Element] { outcomes.withLock { $0 } }

    /// Waits at most 20 seconds for `condition`; the caller asserts what it expected.
    func waitUntil(_ condition: ([RulePathWatcher.Element]) -> Bool) async {
        await WatcherTests.waitUntil { condition(self.all) }
    }

    func stop() {
        consumer.withLock { $0?.cancel() }
    }
}
