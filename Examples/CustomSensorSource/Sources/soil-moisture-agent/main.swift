import CoatyCommunication
import CoatyIORouting
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import Foundation
import SoilMoisture

// soil-moisture-agent PROBE-FILE [mqtt://host:port]: publishes the probe's reading every 10 s on an IO source in the
// IO context "garden", for whatever actor a router in that context associates with it.
let arguments = CommandLine.arguments.dropFirst()
guard let probeFile = arguments.first else {
    FileHandle.standardError.write(Data("usage: soil-moisture-agent PROBE-FILE [mqtt://host:port]\n".utf8))
    exit(2)
}
let broker: MQTTBrokerURL
do {
    broker = try MQTTBrokerURL(parsing: arguments.dropFirst().first ?? "mqtt://127.0.0.1:1883")
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}
let source = SoilMoistureSource<ContinuousClock>.makeSource(name: "bed 1")
let sources = IoSourceController()
let configuration = Configuration(
    identity: Identity(name: "soil-moisture"),
    ioNodes: [IoNodeDefinition(contextName: "garden", ioSources: [source])],
    communication: CommunicationOptions(host: broker.host, port: broker.port))
let probe = SoilMoistureSource(
    source: source, probe: FileSoilProbe(path: probeFile), sources: sources, interval: .seconds(10),
    clock: ContinuousClock())
let agent = try await Container.resolve(
    configuration: configuration, controllers: [("Sources", sources), ("Probe", probe)])
try await agent.run()
