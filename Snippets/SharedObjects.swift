// Shared objects: versioned key/value data that one agent hosts and every agent reads, changes and watches.
import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatySharedObjects

func sharedObjects(_ shared: SharedObjects) async throws {
    // snippet.host
    // The host keeps the data and the version; it answers the others' changes in order.
    _ = try await shared.host(SharedObjectDefinition(name: "fan", data: ["curve": [[40, 0], [45, 100]]]))
    // snippet.end

    // snippet.connect
    // Any agent (the host too) connects by name and sees a snapshot first, then every change.
    let fan = try await shared.connect("fan", ifMissing: .wait)
    let watching = Task {
        for await event in fan.events {
            switch event {
            case .snapshot(let snapshot): print("version \(snapshot.version): \(snapshot.data)")
            case .changed(let change):
                print("\(change.key) is now \(change.value ?? .null) (version \(change.version))")
            case .message(let message): print("message from \(message.senderId): \(message.message)")
            case .unavailable: print("the host is gone; the last data is kept")
            case .deleted: return
            }
        }
    }
    // snippet.end

    // snippet.change
    // A change applies only if nobody changed the key since the version this agent saw (expectedVersion).
    let version = fan.snapshot?.version
    _ = try await fan.set("curve", to: [[38, 0], [44, 100]], expectedVersion: version)
    try await fan.send(["note": "curve lowered"])
    // snippet.end
    watching.cancel()
    fan.disconnect()
}

let manager = CommunicationManager(identity: Identity(name: "Shared"), options: CommunicationOptions())
let shared = SharedObjects(manager: manager)
manager.start()
let running = Task { await shared.run() }
try await sharedObjects(shared)
running.cancel()
await manager.stop()
