import Synchronization

/// Collects what an async sequence yields, so a test can wait for elements without owning the iteration.
/// The waits have generous deadlines (30 s) that only guard against a hang; they are not timing assertions: in a full
/// test run on two cores, each hop of an agent's task can wait a second for a thread.
public final class Recorder<Element: Sendable>: Sendable {
    private final class Storage: Sendable {
        let state = Mutex<(elements: [Element], isFinished: Bool)>(([], false))
    }

    private let storage = Storage()
    private let task = Mutex<Task<Void, Never>?>(nil)

    public init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
        let started = Task { [storage] in
            do {
                for try await element in sequence {
                    storage.state.withLock { $0.elements.append(element) }
                }
            } catch {}
            storage.state.withLock { $0.isFinished = true }
        }
        task.withLock { $0 = started }
    }

    deinit {
        task.withLock { $0?.cancel() }
    }

    public var elements: [Element] { storage.state.withLock { $0.elements } }
    public var isFinished: Bool { storage.state.withLock { $0.isFinished } }

    /// Waits until at least `count` elements arrived; returns them all.
    @discardableResult
    public func wait(count: Int, within deadline: Duration = .seconds(30)) async throws -> [Element] {
        try await wait(within: deadline, "\(count) elements") { $0.count >= count }
    }

    /// Waits until the sequence ended.
    public func waitFinished(within deadline: Duration = .seconds(30)) async throws {
        try await poll(within: deadline, "the end of the sequence") { self.isFinished }
    }

    /// Waits until the elements satisfy `condition`; returns them.
    @discardableResult
    public func wait(
        within deadline: Duration = .seconds(30), _ what: String = "a condition",
        until condition: @escaping ([Element]) -> Bool
    ) async throws -> [Element] {
        do {
            try await poll(within: deadline, what) { condition(self.elements) }
        } catch var timeout as TimeoutError {
            // What did arrive tells a failing test's reader which step never came.
            timeout.what += " (recorded: \(elements))"
            throw timeout
        }
        return elements
    }

    public func cancel() {
        task.withLock { $0?.cancel() }
    }
}

public struct TimeoutError: Error, CustomStringConvertible {
    public var what: String

    public init(what: String) {
        self.what = what
    }

    public var description: String { "timed out waiting for \(what)" }
}

/// Polls `condition` until it holds, failing after `deadline`.
public func poll(within deadline: Duration = .seconds(30), _ what: String = "a condition", _ condition: () -> Bool)
    async throws
{
    let clock = ContinuousClock()
    let end = clock.now.advanced(by: deadline)
    while !condition() {
        guard clock.now < end else { throw TimeoutError(what: what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}
