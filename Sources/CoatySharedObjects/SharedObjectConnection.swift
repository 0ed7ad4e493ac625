import CoatyCommunication
import CoatyJSON

/// One client's connection to a shared object. Its `events` start with a snapshot of the data and then report every
/// accepted change and every message, in order (one task iterates them). Operations answer with the outcome the
/// host decided. The connection ends with `disconnect()` (or when it is released), which leaves the object as it is.
public final class SharedObjectConnection: Sendable {
    public let name: String
    public let events: ObservationStream<SharedObjectEvent>
    let id: Int
    let objects: SharedObjects

    public enum Status: Sendable, Hashable {
        /// No host has answered yet (a connection that waits for one).
        case waiting
        case connected
        /// The host is gone; `snapshot` is the last data known.
        case unavailable
        case deleted
    }

    init(id: Int, name: String, events: ObservationStream<SharedObjectEvent>, objects: SharedObjects) {
        self.id = id
        self.name = name
        self.events = events
        self.objects = objects
    }

    deinit {
        objects.disconnect(id)
    }

    /// Unavailable once the connection was closed.
    public var status: Status { objects.replica(id)?.status ?? .unavailable }

    /// The data as this client knows it now, with its version; nil before a host answered.
    public var snapshot: SharedSnapshot? { objects.replica(id)?.state?.snapshot }

    /// Sets a key. With `expectedVersion`, only if the object is still at that version.
    @discardableResult
    public func set(_ key: String, to value: JSONValue, expectedVersion: Int? = nil) async throws(SharedObjectFailure)
        -> SharedChange
    {
        let answered = try await objects.request(
            .set(key: key, value: value, expectedVersion: expectedVersion), from: id)
        return SharedChange(key: key, value: value, version: answered.version)
    }

    /// Deletes a key. With `expectedVersion`, only if the object is still at that version.
    @discardableResult
    public func delete(_ key: String, expectedVersion: Int? = nil) async throws(SharedObjectFailure) -> SharedChange {
        let answered = try await objects.request(.delete(key: key, expectedVersion: expectedVersion), from: id)
        return SharedChange(key: key, value: nil, version: answered.version)
    }

    /// Sends a message that every connected client receives, this one included; returns once it was delivered.
    public func send(_ message: JSONValue) async throws(SharedObjectFailure) {
        try await objects.send(message, from: id)
    }

    /// Deletes the object for everyone.
    public func deleteObject() async throws(SharedObjectFailure) {
        _ = try await objects.request(.deleteObject, from: id)
    }

    /// Stops following the object; the object stays.
    public func disconnect() {
        objects.disconnect(id)
    }
}

extension SharedObjects {
    /// The data of the shared object of this name as it changes, for code that only reads it (routing rules,
    /// thresholds): first when a host answers, then after every change. While the host is away nothing comes and
    /// the last data stands; when the object is deleted, an empty object comes and the sequence ends.
    public func data(of name: String) -> SharedObjectData {
        SharedObjectData(objects: self, name: name)
    }
}

/// See `SharedObjects.data(of:)`. Iterating connects (waiting for a host); ending the iteration disconnects.
public struct SharedObjectData: AsyncSequence, Sendable {
    public typealias Element = JSONObject
    public typealias Failure = Never

    let objects: SharedObjects
    let name: String

    public func makeAsyncIterator() -> Iterator {
        Iterator(objects: objects, name: name)
    }

    public struct Iterator: AsyncIteratorProtocol {
        public typealias Failure = Never

        let objects: SharedObjects
        let name: String
        private var connection: SharedObjectConnection?
        private var events: ObservationStream<SharedObjectEvent>.Iterator?
        private var isFinished = false

        init(objects: SharedObjects, name: String) {
            self.objects = objects
            self.name = name
        }

        public mutating func next() async -> JSONObject? {
            guard !isFinished else { return nil }
            if connection == nil {
                do {
                    let connection = try await objects.connect(name, ifMissing: .wait)
                    self.connection = connection
                    events = connection.events.makeAsyncIterator()
                } catch {
                    objects.logger.error("cannot follow shared object \(name): \(error)")
                    isFinished = true
                    return nil
                }
            }
            while var iterator = events, let event = await iterator.next() {
                events = iterator
                switch event {
                case .snapshot(let snapshot):
                    return snapshot.data
                case .changed:
                    if let data = connection?.snapshot?.data { return data }
                case .deleted:
                    isFinished = true
                    return [:]
                case .unavailable, .message:
                    continue
                }
            }
            isFinished = true
            return nil
        }
    }
}
