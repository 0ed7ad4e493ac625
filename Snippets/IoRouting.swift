// IO routing: an agent with an IO source and an IO actor in one IO context, and a router that associates them.
// The source publishes values only while it is associated; the actor receives them on the route the router chose.
import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel
import CoatyRuntime
import RoutingRules

// snippet.nodes
let temperature = IoSource(
    name: "Hall temperature", valueType: "com.example.Temperature[Celsius]", updateStrategy: .sample, updateRate: 1000)
let display = IoActor(name: "Hall display", valueType: "com.example.Temperature[Celsius]")
let node = IoNodeDefinition(
    contextName: "TemperatureMeasurement", ioSources: [temperature], ioActors: [display],
    characteristics: ["isResponsibleForOperatingState": "normal"])
// snippet.end

// snippet.router
var context = IoContext(name: "TemperatureMeasurement")
context["operatingState"] = "normal"
// Every compatible source and actor (same value type, both JSON or both raw) is associated; a rule set from JSON
// files (`RoutingRuleSet.load(directory:)`, JsonLogic conditions) or `IoAssociationRules` decide otherwise.
let router = IoRouter(context: context, rules: IoAssociationRules.all)
// snippet.end

// snippet.rules
// Rules as code: only sources and actors on nodes responsible for the context's operating state.
let byOperatingState = IoAssociationRules([
    IoAssociationRule(name: "by-operating-state", valueType: "com.example.Temperature[Celsius]") { candidate in
        candidate.actorNode.object["characteristics"]?["isResponsibleForOperatingState"]
            == candidate.context["operatingState"]
    }
])
router.setRules(byOperatingState)
// snippet.end

// snippet.controllers
let sources = IoSourceController()
let actors = IoActorController()
let container = try await Container.resolve(
    configuration: Configuration(identity: Identity(name: "Hall"), ioNodes: [node]),
    controllers: [("Sources", sources), ("Actors", actors), ("Router", router)])
container.start()
// snippet.end

// snippet.values
// The actor's side: associations and values as async sequences.
let received = Task {
    for await value in actors.values(of: display) {
        if case .json(let celsius) = value {
            print("display shows \(celsius) °C")
        }
    }
}
// The source's side: publish is false (and nothing is sent) while no router associated the source.
for await associated in sources.associations(of: temperature) where associated {
    _ = try sources.publish(21.5, from: temperature)
    break
}
received.cancel()
await container.shutdown()
// snippet.end
