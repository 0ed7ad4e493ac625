import Synchronization

/// A value that many tasks watch: each stream starts with the current value and then gets every change.
package final class CurrentValueBroadcast<Value: Sendable & Equatable>: Sendable {
    private struct State {
        var value: Value
        var nextId = 0
        var continuations: [Int: ObservationStream<Value>.Continuation] = [:]
    }

    private let state: Mutex<State>

    public init(_ value: Value) {
        state = Mutex(State(value: value))
    }

    public var value: Value { state.withLock { $0.value } }

    public func stream() -> ObservationStream<Value> {
        let (stream, continuation) = ObservationStream.makeStream(of: Value.self)
        let id = state.withLock { state in
            let id = state.nextId
            state.nextId += 1
            state.continuations[id] = continuation
            continuation.yield(state.value)
            return id
        }
        continuation.onTermination { [weak self] in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sets the value and tells the watchers, if it changed.
    public func send(_ value: Value) {
        state.withLock { state in
            guard state.value != value else { return }
            state.value = value
            for continuation in state.continuations.values { continuation.yield(value) }
        }
    }
}
