/// A value that many tasks watch: each stream starts with the current value and then gets every change.
package final class CurrentValueBroadcast<Value: Sendable & Equatable>: Sendable {
    private let watched: WatchedState<Value, Value>

    public init(_ value: Value) {
        watched = WatchedState(value)
    }

    public var value: Value { watched.withState { $0 } }

    public func stream() -> ObservationStream<Value> {
        watched.watch { [$0] }
    }

    /// Sets the value and tells the watchers, if it changed.
    public func send(_ value: Value) {
        watched.change { current, isWatched in
            guard current != value else { return ((), []) }
            current = value
            return ((), isWatched ? [value] : [])
        }
    }
}
