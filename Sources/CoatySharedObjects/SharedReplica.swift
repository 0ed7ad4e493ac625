/// A client's copy of one shared object and what each event from the host makes of it. Pure: the connection
/// feeds it what arrives and hands on the events it returns.
struct SharedReplica: Sendable {
    typealias Status = SharedObjectConnection.Status

    let name: String
    private(set) var status = Status.waiting
    private(set) var state: SharedObjectState?
    /// How many times a host's copy of the object arrived, taken or not: a host that answered after a Discover
    /// went out is there, whether or not it answered the Discover itself.
    private(set) var timesHeard = 0

    init(name: String) {
        self.name = name
    }

    /// The object as a host advertised, resolved or completed it.
    mutating func absorb(_ received: SharedObjectState) -> [SharedObjectEvent] {
        guard received.name == name, status != .deleted else { return [] }
        timesHeard += 1
        guard let current = state, status != .waiting else {
            return bind(received)
        }
        guard received.objectId == current.objectId else {
            // Another object under the same name: taken only once ours is gone.
            return status == .unavailable ? bind(received) : []
        }
        if status == .unavailable { return bind(received) }
        guard received.version > current.version else { return [] }
        state = received
        if let change = received.change, received.version == current.version + 1 {
            return [.changed(change)]
        }
        return [.snapshot(received.snapshot)]
    }

    private mutating func bind(_ received: SharedObjectState) -> [SharedObjectEvent] {
        state = received
        status = .connected
        return [.snapshot(received.snapshot)]
    }

    /// A Deadvertise: of the object (deleted or expired), or of its host's identity (stopped or died).
    mutating func deadvertised(_ objectIds: [String]) -> [SharedObjectEvent] {
        guard let state, status == .connected || status == .unavailable else { return [] }
        if objectIds.contains(state.objectId) {
            status = .deleted
            return [.deleted]
        }
        if status == .connected && objectIds.contains(state.hostId) {
            status = .unavailable
            return [.unavailable]
        }
        return []
    }

    /// No host answered a Discover after this agent came back online, and none was heard since `timesHeard` was
    /// `heardBefore` (when the Discover went out): the host went while it was away. A host that advertised
    /// meanwhile is there, though it did not answer: it began to host after the Discover reached it.
    mutating func unanswered(heardBefore: Int) -> [SharedObjectEvent] {
        guard status == .connected, timesHeard == heardBefore else { return [] }
        status = .unavailable
        return [.unavailable]
    }

    /// A message to a shared object, for this replica if it is of the object it holds.
    func accepts(messageTo objectId: String) -> Bool {
        state?.objectId == objectId && (status == .connected || status == .unavailable)
    }
}
