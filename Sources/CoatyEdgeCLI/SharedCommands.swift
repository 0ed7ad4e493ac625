import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatySharedObjects

/// `coaty-edge shared get|set|delete|send|watch`: shared objects as any agent uses them, from a client session.
///
/// The commands connect with `ifMissing: .fail` (or `.wait` for `watch --wait`), never `.create`: an object created
/// by the command would be hosted by it only until it exits, and then be unavailable to everyone.
public enum SharedCommands {
    /// Why NAME cannot name a shared object, or nil.
    public static func refusal(forName name: String) -> String? {
        CoatyName.isValid(name) ? nil : SharedObjects.invalidName(name).message
    }

    /// Why KEY cannot be a key of a shared object, or nil (the host would refuse it as malformed).
    public static func refusal(forKey key: String) -> String? {
        if key.isEmpty { return "the key is empty" }
        let limit = SharedObjectRequest.maximumKeyLength
        return key.utf8.count > limit ? "the key has \(key.utf8.count) bytes; at most \(limit) are allowed" : nil
    }

    /// Runs `body` while the session serves shared objects. A client session is a bare communication manager, not a
    /// container, so nothing else runs `SharedObjects.run()` for it; and `body` starts only once `run()` observes the
    /// shared objects' events, so that a message's echo or a change just after connecting is not missed.
    ///
    /// - Parameter timeout: how long a Discover, a change or a message waits for its host (or the broker's echo).
    public static func serving<T: Sendable>(
        _ session: ClientSession, timeout: Duration, _ body: @escaping @Sendable (SharedObjects) async throws -> T
    ) async throws -> T {
        let shared = SharedObjects(manager: session.manager, requestTimeout: timeout)
        let (observing, isObserving) = AsyncStream.makeStream(of: Never.self)
        return try await withThrowingDiscardingTaskGroup(returning: T.self) { group in
            group.addTask {
                await shared.run(whenObserving: { isObserving.finish() })
                isObserving.finish()
            }
            // The service runs until the body is done, not until the session ends.
            defer { group.cancelAll() }
            for await _ in observing {}
            return try await body(shared)
        }
    }

    /// Connects to an object some agent hosts; with `waitingForHost`, also to one no agent hosts yet.
    public static func connect(
        _ shared: SharedObjects, name: String, waitingForHost: Bool = false
    ) async throws(CommandFailure) -> SharedObjectConnection {
        do throws(SharedObjectFailure) {
            return try await shared.connect(name, ifMissing: waitingForHost ? .wait : .fail)
        } catch {
            throw commandFailure(error)
        }
    }

    /// A failed operation as the command reports it (exit 1); the message says what and why. Names and keys the host
    /// would find malformed are refused before connecting (exit 64), so what remains is the host's or the broker's.
    static func commandFailure(_ failure: SharedObjectFailure) -> CommandFailure {
        CommandFailure(.failure, failure.message)
    }

    // MARK: - get

    /// `shared get NAME [KEY]`: the object's data (or one key's value) with its version.
    public static func get(
        _ session: ClientSession, name: String, key: String?, json: Bool, timeout: Duration
    ) async throws -> String {
        try await serving(session, timeout: timeout) { shared in
            let connection = try await connect(shared, name: name)
            defer { connection.disconnect() }
            guard let snapshot = connection.snapshot else {
                throw CommandFailure(.failure, "shared object \(name) has no host now")
            }
            return try describe(snapshot, name: name, key: key, json: json)
        }
    }

    /// `NAME  version N  (objectId ..., host ...)` and the data as indented JSON (or `KEY = value`); with `json`,
    /// one JSON object: `name`, `objectId`, `hostId`, `version` and `data` (or `key` and `value`).
    static func describe(_ snapshot: SharedSnapshot, name: String, key: String?, json: Bool) throws(CommandFailure)
        -> String
    {
        var value = JSONValue.object(snapshot.data)
        if let key {
            guard let keyed = snapshot.data[key] else {
                throw CommandFailure(.failure, "shared object \(name) has no key \(key)")
            }
            value = keyed
        }
        if json {
            var object: JSONObject = [
                "name": .string(name), "objectId": .string(snapshot.objectId), "hostId": .string(snapshot.hostId),
                "version": .number(Double(snapshot.version)),
            ]
            if let key {
                object["key"] = .string(key)
                object["value"] = value
            } else {
                object["data"] = value
            }
            return object.serialized() + "\n"
        }
        let heading = "\(name)  version \(snapshot.version)  (objectId \(snapshot.objectId), host \(snapshot.hostId))\n"
        return heading + (key.map { "\($0) = " } ?? "") + JSONPretty.text(value) + "\n"
    }

    // MARK: - set, delete, send

    /// `shared set NAME KEY VALUE`: `NAME: KEY = VALUE (version N)`.
    public static func set(
        _ session: ClientSession, name: String, key: String, value: JSONValue, expectedVersion: Int?, timeout: Duration
    ) async throws -> String {
        try await serving(session, timeout: timeout) { shared in
            let connection = try await connect(shared, name: name)
            defer { connection.disconnect() }
            do throws(SharedObjectFailure) {
                let change = try await connection.set(key, to: value, expectedVersion: expectedVersion)
                return "\(name): \(key) = \(value.serialized()) (version \(change.version))\n"
            } catch {
                throw commandFailure(error)
            }
        }
    }

    /// `shared delete NAME KEY`: `NAME: KEY deleted (version N)`.
    public static func deleteKey(
        _ session: ClientSession, name: String, key: String, expectedVersion: Int?, timeout: Duration
    ) async throws -> String {
        try await serving(session, timeout: timeout) { shared in
            let connection = try await connect(shared, name: name)
            defer { connection.disconnect() }
            do throws(SharedObjectFailure) {
                let change = try await connection.delete(key, expectedVersion: expectedVersion)
                return "\(name): \(key) deleted (version \(change.version))\n"
            } catch {
                throw commandFailure(error)
            }
        }
    }

    /// `shared delete NAME --object`: `NAME: object deleted`.
    public static func deleteObject(_ session: ClientSession, name: String, timeout: Duration) async throws -> String {
        try await serving(session, timeout: timeout) { shared in
            let connection = try await connect(shared, name: name)
            defer { connection.disconnect() }
            do throws(SharedObjectFailure) {
                try await connection.deleteObject()
                return "\(name): object deleted\n"
            } catch {
                throw commandFailure(error)
            }
        }
    }

    /// `shared send NAME MESSAGE`: `NAME: message delivered` once the broker handed the message back, as it hands
    /// it to every connected client.
    public static func send(_ session: ClientSession, name: String, message: JSONValue, timeout: Duration) async throws
        -> String
    {
        try await serving(session, timeout: timeout) { shared in
            let connection = try await connect(shared, name: name)
            defer { connection.disconnect() }
            do throws(SharedObjectFailure) {
                try await connection.send(message)
                return "\(name): message delivered\n"
            } catch {
                var failure = commandFailure(error)
                // "The broker did not deliver the message ..." says so already; the other reasons do not.
                if error.reason != .noAnswer { failure.description = "message not delivered: " + failure.description }
                throw failure
            }
        }
    }

    // MARK: - watch

    public enum WatchOutput: Sendable, Hashable {
        /// One line of text per event.
        case lines
        /// One JSON object per event and line.
        case json
    }

    /// `shared watch NAME`: the snapshot, then every change, message and loss or return of the host, one line each,
    /// until the task is cancelled or the object is deleted.
    public static func watch(
        _ session: ClientSession, name: String, waitingForHost: Bool, output: WatchOutput, timeout: Duration,
        write: @escaping @Sendable (String) -> Void = StandardOutput.write
    ) async throws {
        try await serving(session, timeout: timeout) { shared in
            let connection = try await connect(shared, name: name, waitingForHost: waitingForHost)
            defer { connection.disconnect() }
            if connection.status == .waiting {
                write(watchLine(.waiting, name: name, output: output))
            }
            for await event in connection.events {
                write(watchLine(.event(event), name: name, output: output))
            }
        }
    }

    /// What `watch` reports: the connection's events, and that it waits for a host.
    enum WatchEvent: Sendable, Hashable {
        case waiting
        case event(SharedObjectEvent)
    }

    static func watchLine(_ event: WatchEvent, name: String, output: WatchOutput, time: Int64 = ClockTime.now())
        -> String
    {
        switch output {
        case .json: watchJSON(event, time: time).serialized() + "\n"
        case .lines: "\(ClockTime.local(time)) \(watchText(event, name: name))\n"
        }
    }

    /// `{"event": "snapshot"|"changed"|"message"|"unavailable"|"deleted"|"waiting", "time": ms since 1970, ...}`.
    static func watchJSON(_ event: WatchEvent, time: Int64) -> JSONObject {
        func object(_ kind: String) -> JSONObject { ["event": .string(kind), "time": .number(Double(time))] }
        switch event {
        case .waiting:
            return object("waiting")
        case .event(.snapshot(let snapshot)):
            var json = object("snapshot")
            json["version"] = .number(Double(snapshot.version))
            json["data"] = .object(snapshot.data)
            json["objectId"] = .string(snapshot.objectId)
            json["hostId"] = .string(snapshot.hostId)
            return json
        case .event(.changed(let change)):
            var json = object("changed")
            json["key"] = .string(change.key)
            json.set("value", ifPresent: change.value)
            json["version"] = .number(Double(change.version))
            json["deleted"] = .bool(change.isDeletion)
            return json
        case .event(.message(let message)):
            var json = object("message")
            json["message"] = message.message
            json["sender"] = .string(message.senderId)
            return json
        case .event(.unavailable):
            return object("unavailable")
        case .event(.deleted):
            return object("deleted")
        }
    }

    static func watchText(_ event: WatchEvent, name: String) -> String {
        switch event {
        case .waiting:
            "waiting for an agent to host \(name)"
        case .event(.snapshot(let snapshot)):
            "snapshot \(name) version \(snapshot.version) (host \(snapshot.hostId)): \(JSONValue.object(snapshot.data).serialized())"
        case .event(.changed(let change)):
            if let value = change.value {
                "changed \(change.key) = \(value.serialized()) (version \(change.version))"
            } else {
                "changed \(change.key) deleted (version \(change.version))"
            }
        case .event(.message(let message)):
            "message \(message.message.serialized()) from \(message.senderId)"
        case .event(.unavailable):
            "unavailable: the host of \(name) is gone; waiting for it to return"
        case .event(.deleted):
            "deleted: shared object \(name) was deleted"
        }
    }
}

/// JSON text indented by two spaces per level, members in their order, for people to read.
enum JSONPretty {
    static func text(_ value: JSONValue) -> String {
        var output = ""
        write(value, indent: "", to: &output)
        return output
    }

    private static func write(_ value: JSONValue, indent: String, to output: inout String) {
        let inner = indent + "  "
        switch value {
        case .array(let elements) where !elements.isEmpty:
            output += "[\n"
            for (index, element) in elements.enumerated() {
                output += inner
                write(element, indent: inner, to: &output)
                output += index < elements.count - 1 ? ",\n" : "\n"
            }
            output += indent + "]"
        case .object(let object) where !object.isEmpty:
            output += "{\n"
            for (index, member) in object.members.enumerated() {
                output += inner + JSONValue.string(member.key).serialized() + ": "
                write(member.value, indent: inner, to: &output)
                output += index < object.count - 1 ? ",\n" : "\n"
            }
            output += indent + "}"
        default:
            output += value.serialized()
        }
    }
}
