// An agent: a container with a controller of its own that answers Call and Query requests, started against a
// broker on 127.0.0.1:1883 and run until SIGTERM or SIGINT.
import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatyRuntime

// snippet.controller
/// A light switch: answers the Call "com.example.lights.switch" for the floor it is on.
final class LightController: Controller {
    let floor: Double

    init(floor: Double) {
        self.floor = floor
    }

    func onInit(_ context: ControllerContext) async throws {
        context.logger.info("light controller on floor \(floor) ready")
    }

    // Runs from each start of the communication manager until it stops: observe here.
    func whileStarted(_ context: ControllerContext) async {
        var room = CoatyObject(coreType: .coatyObject, objectType: "com.example.Room", name: "Room")
        room["floor"] = .number(floor)
        guard
            let calls = try? context.communicationManager.observeCall(
                operation: "com.example.lights.switch", context: room)
        else { return }
        for await call in calls {
            guard let on = call.event.parameter(named: "on")?.boolValue else {
                try? await call.respond(ReturnEvent(ReturnEvent.invalidParameters))
                continue
            }
            try? await call.respond(ReturnEvent(.result(["on": .bool(on)]), executionInfo: ["floor": .number(floor)]))
        }
    }

    func onStopping(_ context: ControllerContext) async {
        context.logger.info("light controller stopping")
    }
}
// snippet.end

// snippet.container
let configuration = Configuration(
    identity: Identity(name: "Light Agent"),
    communication: CommunicationOptions(host: "127.0.0.1", port: 1883))
let container = try await Container.resolve(
    configuration: configuration, controllers: [("Lights", LightController(floor: 7))])
// Starts the communication manager and the controllers, runs until SIGTERM or SIGINT, then shuts down.
try await container.run()
// snippet.end
