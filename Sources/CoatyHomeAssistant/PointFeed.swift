import CoatyCommunication
import CoatyJSON

/// The values of an agent's device points, as the bridge needs them: sensor readings after their filters, input
/// values and the real state of output lines, by the objectId of their IoSource or IoActor, each stream starting
/// with the latest value of every point. The devices send here whether or not a router associated their source.
package final class PointFeed: Sendable {
    /// The latest value of each point; a change of one goes to the streams.
    private let points = WatchedState<[String: JSONValue], PointValue>([:], bufferLimit: 1000)
    private let isRead: Bool

    /// `isRead` false makes the feed of an agent without a bridge, which nothing reads: it takes no values (keeping
    /// the latest cost a hash of the objectId and a lock per sensor reading), and `latest` and `values()` stay empty.
    public init(isRead: Bool = true) {
        self.isRead = isRead
    }

    /// Sends a point's new value; nothing when it equals the latest (an output's line that did not switch).
    public func send(_ value: JSONValue, of ioPointId: String) {
        guard isRead else { return }
        points.change { latest, isWatched in
            // One hash of the objectId, not two: this runs for every sensor reading.
            if let index = latest.index(forKey: ioPointId) {
                guard latest.values[index] != value else { return ((), []) }
                latest.values[index] = value
            } else {
                latest[ioPointId] = value
            }
            return ((), isWatched ? [PointValue(ioPointId: ioPointId, value: value)] : [])
        }
    }

    public var latest: [String: JSONValue] { points.withState { $0 } }

    /// The latest value of each point, then every new one. Keeps the newest 1000 values for a slow reader.
    public func values() -> ObservationStream<PointValue> {
        points.watch { latest in
            latest.sorted { $0.key < $1.key }.map { PointValue(ioPointId: $0.key, value: $0.value) }
        }
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
