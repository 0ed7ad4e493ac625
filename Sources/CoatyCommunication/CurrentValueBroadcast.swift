import Synchronization

/// A value that many tasks watch: each stream starts with the current value and then gets every change.
package final class CurrentValueBroadcast<Value: Sendable & Equatable>: Sendable {
    private struct State {
        var value: Value
        var nextId = 0
        var continuations: [Int: ObservationStream<Value>.Continuation] = [:]
    }

    private let state: Mutex<State>
    /// Held while values are handed to the watchers, so that they get them in order, but never taken by a stream's
    /// end. Handing a value over can resume a waiting task, which takes the Swift runtime's lock of that task; a
    /// cancelled watcher's end runs under that same lock and takes `state`. With the values handed over under
    /// `state`, the two took each other's locks the other way round, and an agent hung in its stop (its network
    /// thread telling the watchers that it went offline while the stop cancelled one of them).
    private let delivery = Mutex(())

    public init(_ value: Value) {
        state = Mutex(State(value: value))
    }

    public var value: Value { state.withLock { $0.value } }

    public func stream() -> ObservationStream<Value> {
        let (stream, continuation) = ObservationStream.makeStream(of: Value.self)
        let id = delivery.withLock { _ in
            let (id, value) = state.withLock { state in
                let id = state.nextId
                state.nextId += 1
                state.continuations[id] = continuation
                return (id, state.value)
            }
            continuation.yield(value)
            return id
        }
        continuation.onTermination { [weak self] in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sets the value and tells the watchers, if it changed.
    public func send(_ value: Value) {
        delivery.withLock { _ in
            let watchers = state.withLock { state -> [ObservationStream<Value>.Continuation] in
                guard state.value != value else { return [] }
                state.value = value
                return Array(state.continuations.values)
            }
            for continuation in watchers { continuation.yield(value) }
        }
    }
}
