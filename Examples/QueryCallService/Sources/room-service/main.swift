import CoatyCommunication
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import Foundation
import RoomService

// room-service [mqtt://host:port]: the room controller in an agent of its own, until it is interrupted.
let brokerText = CommandLine.arguments.dropFirst().first ?? "mqtt://127.0.0.1:1883"
let broker: MQTTBrokerURL
do {
    broker = try MQTTBrokerURL(parsing: brokerText)
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}
let configuration = Configuration(
    identity: Identity(name: "room-service"),
    communication: CommunicationOptions(host: broker.host, port: broker.port))
let rooms = [
    RoomController.room(name: "Kitchen", floor: 0, targetCelsius: 21),
    RoomController.room(name: "Office", floor: 1, targetCelsius: 20),
    RoomController.room(name: "Attic", floor: 2, targetCelsius: 16),
]
let agent = try await Container.resolve(
    configuration: configuration, controllers: [("Rooms", RoomController(rooms: rooms))])
try await agent.run()
