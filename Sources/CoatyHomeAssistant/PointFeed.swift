import CoatyJSON
import Synchronization

/// The values of an agent's device points, as the bridge needs them: sensor readings after their filters, input
/// values and the real state of output lines, by the objectId of their IoSource or IoActor, each stream starting
/// with the latest value of every point. The devices send here whether or not a router associated their source.
package final class PointFeed: Sendable {
    private struct State {
        var latest: [String: JSONValue] = [:]
        var nextId = 0
        var continuations: [Int: AsyncStream<PointValue>.Continuation] = [:]
    }

    private let state = Mutex(State())
    /// Held while values are handed to the streams, so that they get them in order; never taken by a stream's end,
    /// which runs under the Swift runtime's lock of a cancelled task that handing over a value can take as well.
    private let delivery = Mutex(())
    private let isRead: Bool

    /// `isRead` false makes the feed of an agent without a bridge, which nothing reads: it takes no values (keeping
    /// the latest cost a hash of the objectId and a lock per sensor reading), and `latest` and `values()` stay empty.
    public init(isRead: Bool = true) {
        self.isRead = isRead
    }

    /// Sends a point's new value; nothing when it equals the latest (an output's line that did not switch).
    public func send(_ value: JSONValue, of ioPointId: String) {
        guard isRead else { return }
        delivery.withLock { _ in
            let streams = state.withLock { state -> [AsyncStream<PointValue>.Continuation] in
                // One hash of the objectId, not two: this runs for every sensor reading.
                if let index = state.latest.index(forKey: ioPointId) {
                    guard state.latest.values[index] != value else { return [] }
                    state.latest.values[index] = value
                } else {
                    state.latest[ioPointId] = value
                }
                return Array(state.continuations.values)
            }
            for continuation in streams {
                continuation.yield(PointValue(ioPointId: ioPointId, value: value))
            }
        }
    }

    public var latest: [String: JSONValue] { state.withLock { $0.latest } }

    /// The latest value of each point, then every new one. Keeps the newest 1000 values for a slow reader.
    public func values() -> AsyncStream<PointValue> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: PointValue.self, bufferingPolicy: .bufferingNewest(1000))
        let id = delivery.withLock { _ in
            let (id, latest) = state.withLock { state in
                let id = state.nextId
                state.nextId += 1
                state.continuations[id] = continuation
                return (id, state.latest)
            }
            for (ioPointId, value) in latest.sorted(by: { $0.key < $1.key }) {
                continuation.yield(PointValue(ioPointId: ioPointId, value: value))
            }
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }
}

package struct PointValue: Sendable, Hashable {
    public var ioPointId: String
    public var value: JSONValue
}

/// What the bridge needs from the agent's devices: their values, and a way to drive an output as a routed value
/// does (its hysteresis, minimum on and off times and safe state included).
package protocol PointHost: Sendable {
    var feed: PointFeed { get }
    /// Hands `value` to the output of the IoActor `ioActorId` as if it had been routed to it, naming `origin` in the
    /// log; false when the agent has no such output.
    func command(_ value: JSONValue, toOutput ioActorId: String, origin: String) -> Bool
}
