import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatyRuntime
import CoatySharedObjects
import Synchronization

/// Follows the shared object `greenhouse`: its key `ventsOpen` (a boolean that any agent may set, a dashboard or
/// a rule) opens or closes the vents. Each decision is announced on the Channel `com.example.vents` as an object of
/// type `com.example.VentState` with `open` and `reason`. While no agent hosts the object, the vents close: the safe
/// state does not depend on a setting nobody can change.
public final class VentilationController: Controller {
    public static let sharedObjectName = "greenhouse"
    public static let channelId = "com.example.vents"
    public static let stateType = "com.example.VentState"

    private let open = Mutex(false)

    public init() {}

    /// Whether the vents are open now.
    public var isOpen: Bool { open.withLock { $0 } }

    public func whileStarted(_ context: ControllerContext) async {
        let connection: SharedObjectConnection
        do {
            connection = try await context.sharedObjects.connect(Self.sharedObjectName, ifMissing: .wait)
        } catch {
            context.logger.error("cannot follow \(Self.sharedObjectName): \(error)")
            return
        }
        defer { connection.disconnect() }
        for await event in connection.events {
            switch event {
            case .snapshot(let snapshot):
                let isOpen = snapshot.data["ventsOpen"]?.boolValue ?? false
                await decide(isOpen, reason: "snapshot v\(snapshot.version)", context)
            case .changed(let change) where change.key == "ventsOpen":
                await decide(change.value?.boolValue ?? false, reason: "changed v\(change.version)", context)
            case .unavailable:
                await decide(false, reason: "host unavailable", context)
            case .deleted:
                await decide(false, reason: "deleted", context)
                return
            case .changed, .message:
                break
            }
        }
    }

    private func decide(_ isOpen: Bool, reason: String, _ context: ControllerContext) async {
        open.withLock { $0 = isOpen }
        var state = CoatyObject(coreType: .coatyObject, objectType: Self.stateType, name: "vents")
        state["open"] = .bool(isOpen)
        state["reason"] = .string(reason)
        do {
            try await context.communicationManager.publishChannel(
                ChannelEvent(channelId: Self.channelId, content: .object(state)))
        } catch {
            context.logger.warning("cannot announce the vents' state: \(error)")
        }
    }
}
