import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatyRuntime
import Synchronization

/// Answers Query events for rooms (object type `com.example.Room`) with the rooms that match the query's object
/// filter, ordered and paged as the filter says, and the Call `com.example.setTargetTemperature` with the named
/// parameters `roomId` and `celsius`.
public final class RoomController: Controller {
    public static let roomType = "com.example.Room"
    public static let setTargetTemperature = "com.example.setTargetTemperature"
    /// Targets outside this range are refused with Coaty's "Invalid params" error.
    public static let allowedTargets = 5.0...30.0

    private let rooms: RoomStore

    public init(rooms: [CoatyObject]) {
        self.rooms = RoomStore(rooms)
    }

    /// A room as a Coaty object of its own type, with application properties.
    public static func room(name: String, floor: Int, targetCelsius: Double) -> CoatyObject {
        var room = CoatyObject(coreType: .coatyObject, objectType: roomType, name: name)
        room["floor"] = .number(Double(floor))
        room["targetCelsius"] = .number(targetCelsius)
        return room
    }

    public func whileStarted(_ context: ControllerContext) async {
        let manager = context.communicationManager
        let calls: ObservationStream<CallRequest>
        do {
            calls = try manager.observeCall(operation: Self.setTargetTemperature)
        } catch {
            context.logger.error("cannot observe \(Self.setTargetTemperature): \(error)")
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [rooms] in
                for await request in manager.observeQuery() {
                    let query = request.event
                    guard query.objectTypes?.contains(Self.roomType) == true else { continue }
                    let matching = rooms.all.filter(query.matches)
                    let answer = ObjectMatcher.select(matching, filter: query.objectFilter)
                    try? await request.respond(RetrieveEvent(objects: answer))
                }
            }
            group.addTask { [rooms] in
                for await request in calls {
                    try? await request.respond(rooms.setTarget(request.event))
                }
            }
        }
    }
}

/// The rooms, changed by calls while queries read them.
final class RoomStore: Sendable {
    private let state: Mutex<[CoatyObject]>

    init(_ rooms: [CoatyObject]) {
        state = Mutex(rooms)
    }

    var all: [CoatyObject] { state.withLock { $0 } }

    /// Sets a room's target; the result is the room as it is now.
    func setTarget(_ call: CallEvent) -> ReturnEvent {
        guard let roomId = call.parameter(named: "roomId")?.stringValue,
            let celsius = call.parameter(named: "celsius")?.numberValue, RoomController.allowedTargets.contains(celsius)
        else { return ReturnEvent(ReturnEvent.invalidParameters) }
        return state.withLock { rooms in
            guard let index = rooms.firstIndex(where: { $0.objectId == roomId }) else {
                return ReturnEvent(.error(code: 1, message: "no room \(roomId)"))
            }
            rooms[index]["targetCelsius"] = .number(celsius)
            return ReturnEvent(.result(rooms[index].jsonValue))
        }
    }
}
