import Synchronization

/// A state that many tasks watch: the changes of it that matter are handed to every watcher in the order they were
/// made, and a new watcher first gets what it needs of the state as it is, before any later change.
///
/// Two locks. `state` guards the state and the watchers. `delivery` is held while changes are handed over, so that
/// every watcher gets them in order, and is never taken by a watcher's end: handing a change over can resume a
/// waiting task, which takes the Swift runtime's lock of that task, and a cancelled watcher's end runs under that
/// same lock and removes the watcher under `state`. With the changes handed over under `state`, the two took each
/// other's locks the other way round, and an agent hung in its stop (its network thread telling the watchers that
/// it went offline while the stop cancelled one of them).
package final class WatchedState<State: Sendable, Change: Sendable>: Sendable {
    private struct Guarded {
        var state: State
        var nextId = 0
        var watchers: [Int: ObservationStream<Change>.Continuation] = [:]
    }

    private let state: Mutex<Guarded>
    private let delivery = Mutex(())
    /// How many changes a watcher's stream holds that its task has not taken; the newest are kept.
    private let bufferLimit: Int?

    /// - Parameter bufferLimit: how many changes a slow watcher's stream keeps (the newest); nil keeps them all.
    package init(_ state: State, bufferLimit: Int? = nil) {
        self.state = Mutex(Guarded(state: state))
        self.bufferLimit = bufferLimit
    }

    /// Reads or changes the state without telling the watchers.
    package func withState<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLock { body(&$0.state) }
    }

    /// Changes the state and hands the changes `body` returns to every watcher, in order with all other changes.
    /// `body` is told whether anyone watches: with nobody watching, the changes it returns go nowhere, so it need
    /// not make them (a value per sensor reading, say).
    package func change<Result>(_ body: (inout State, _ isWatched: Bool) -> (Result, [Change])) -> Result {
        delivery.withLock { _ -> Result in
            var watchers: [ObservationStream<Change>.Continuation] = []
            var changes: [Change] = []
            let result = state.withLock { guarded -> Result in
                let isWatched = !guarded.watchers.isEmpty
                let result: Result
                (result, changes) = body(&guarded.state, isWatched)
                if isWatched, !changes.isEmpty { watchers = Array(guarded.watchers.values) }
                return result
            }
            for change in changes {
                for watcher in watchers { watcher.yield(change) }
            }
            return result
        }
    }

    /// A new watcher's stream: first what `initial` makes of the state as it is, then every change. The watcher
    /// ends when its task is cancelled or the stream is dropped.
    package func watch(startingWith initial: (State) -> [Change] = { _ in [] }) -> ObservationStream<Change> {
        let (stream, continuation) = ObservationStream.makeStream(of: Change.self, bufferLimit: bufferLimit)
        let id = delivery.withLock { _ in
            let (id, first) = state.withLock { guarded in
                let id = guarded.nextId
                guarded.nextId += 1
                guarded.watchers[id] = continuation
                return (id, initial(guarded.state))
            }
            for change in first { continuation.yield(change) }
            return id
        }
        continuation.onTermination { [weak self] in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }
}
