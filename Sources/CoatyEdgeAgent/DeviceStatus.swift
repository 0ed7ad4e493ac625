import CoatyCommunication
import CoatyJSON
import CoatyModel
import Logging
import Synchronization

/// The state of every device of the agent, advertised as a `coaty-edge.DeviceStatus` object whenever it changes and
/// answered to Discover, so that `coaty-edge observe` and `agents` show failing devices of every agent.
final class DeviceStatus: Sendable {
    static let objectType = EdgeAgent.deviceStatusObjectType

    struct Entry {
        var label: String
        var kind: String
        var ioPoints: [String]
        /// nil while the device works.
        var error: String?
    }

    private struct State {
        var objectId = CoatyUUID.random()
        /// In configuration order.
        var entries: [Entry] = []
        var changes: AsyncStream<Void>.Continuation?
    }

    private let state = Mutex(State())

    /// Starts over with every device working.
    func reset(_ entries: [Entry]) {
        state.withLock { $0.entries = entries }
    }

    /// Records that a device works (`error` nil) or fails; a change is advertised.
    func set(_ label: String, error: String?) {
        state.withLock { state in
            guard let index = state.entries.firstIndex(where: { $0.label == label }),
                state.entries[index].error != error
            else { return }
            state.entries[index].error = error
            state.changes?.yield()
        }
    }

    /// Advertises the status now and after every change, and answers Discovers for it, until cancelled.
    func publish(on manager: CommunicationManager, logger: Logger) async {
        let (changes, notify) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        state.withLock { $0.changes = notify }
        defer { state.withLock { $0.changes = nil } }
        let discovers = manager.observeDiscover()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await request in discovers where request.event.isObjectTypeCompatible(Self.objectType) {
                    try? await request.respond(ResolveEvent(object: self.object(of: manager)))
                }
            }
            try? await manager.publishAdvertise(AdvertiseEvent(object: object(of: manager)))
            for await _ in changes {
                do {
                    try await manager.publishAdvertise(AdvertiseEvent(object: object(of: manager)))
                } catch {
                    logger.error("cannot advertise the device status: \(error)")
                }
            }
        }
    }

    private func object(of manager: CommunicationManager) -> CoatyObject {
        let (objectId, entries) = state.withLock { ($0.objectId, $0.entries) }
        var object = CoatyObject(
            coreType: .coatyObject, objectType: Self.objectType, objectId: objectId,
            name: "\(manager.identity.name) devices")
        object.parentObjectId = manager.identity.objectId
        object["devices"] = .array(
            entries.map { device in
                var entry: JSONObject = [
                    "label": .string(device.label), "driver": .string(device.kind),
                    "ioPoints": .array(device.ioPoints.map(JSONValue.string)),
                    "state": .string(device.error == nil ? "ok" : "failing"),
                ]
                entry.set("error", ifPresent: device.error.map(JSONValue.string))
                return .object(entry)
            })
        return object
    }
}
