import CoatyCommunication
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import Foundation
import Ventilation

// ventilation-agent [mqtt://host:port]: follows the shared object "greenhouse" until it is interrupted.
let broker: MQTTBrokerURL
do {
    broker = try MQTTBrokerURL(parsing: CommandLine.arguments.dropFirst().first ?? "mqtt://127.0.0.1:1883")
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}
let configuration = Configuration(
    identity: Identity(name: "ventilation"), communication: CommunicationOptions(host: broker.host, port: broker.port))
let agent = try await Container.resolve(
    configuration: configuration, controllers: [("Ventilation", VentilationController())])
try await agent.run()
