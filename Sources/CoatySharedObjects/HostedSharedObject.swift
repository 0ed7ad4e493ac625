import CoatyJSON
import CoatyModel

/// A shared object as its host keeps it: the state, when it was last active, and the limits it enforces. Pure: the
/// host's loop feeds it requests and times and publishes what it answers.
struct HostedSharedObject: Sendable {
    var state: SharedObjectState
    /// When the object last changed or got a message, on the host's clock (time since the host started).
    var lastActivity: Duration
    var limits: SharedObjectLimits

    /// What a request led to.
    enum Outcome: Equatable {
        /// The object changed to `state.version`; advertise it and answer with it.
        case changed(SharedChange)
        /// The object is to be deleted: answer, then deadvertise it.
        case deleted
        case refused(SharedObjectFailure.Reason, String)
    }

    /// Applies a request from the agent `sourceId` made at `now`.
    mutating func apply(_ request: SharedObjectRequest, from sourceId: String, at now: Duration) -> Outcome {
        let name = state.name
        if state.isReadOnly && sourceId != state.hostId {
            return .refused(.notAllowed, "shared object \(name) is read-only: only its host may change it")
        }
        guard let key = request.key else { return .deleted }
        if let expectedVersion = request.expectedVersion, expectedVersion != state.version {
            return .refused(
                .staleVersion,
                "stale version \(expectedVersion) of shared object \(name); the current version is \(state.version)")
        }
        var data = state.data
        if let value = request.value {
            let size = value.serializedBytes().count
            guard size <= limits.maximumValueBytes else {
                return .refused(
                    .tooLarge, "the value of \(key) has \(size) bytes; at most \(limits.maximumValueBytes) are allowed")
            }
            data[key] = value
            let total = JSONValue.object(data).serializedBytes().count
            guard total <= limits.maximumDataBytes else {
                return .refused(
                    .tooLarge,
                    "shared object \(name) would have \(total) bytes of data; at most \(limits.maximumDataBytes) are allowed"
                )
            }
        } else {
            guard data.contains(key: key) else {
                return .refused(.unknownKey, "shared object \(name) has no key \(key)")
            }
            data[key] = nil
        }
        state.version += 1
        state.data = data
        let change = SharedChange(key: key, value: request.value, version: state.version)
        state.change = change
        lastActivity = now
        return .changed(change)
    }

    /// The deadline after which the object expires, if it has an expiry.
    var expiryDeadline: Duration? {
        state.expiryMinutes.map { lastActivity + .milliseconds(Int64(($0 * 60_000).rounded(.up))) }
    }
}

/// What a host accepts in one shared object.
public struct SharedObjectLimits: Sendable, Hashable {
    /// The most bytes one value (or message) may have as JSON text.
    public var maximumValueBytes: Int
    /// The most bytes the object's whole data may have as JSON text.
    public var maximumDataBytes: Int

    public init(maximumValueBytes: Int = 16 * 1024, maximumDataBytes: Int = 128 * 1024) {
        self.maximumValueBytes = maximumValueBytes
        self.maximumDataBytes = maximumDataBytes
    }
}
