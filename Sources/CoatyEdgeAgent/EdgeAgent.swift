import CoatyCommunication
import CoatyHomeAssistant
import CoatyIORouting
import CoatyJSON
import CoatyMQTT
import CoatyRuntime
import Logging

/// A coaty-edge agent as its configuration describes it: its IO sources and actors, its routers with their
/// rules, its devices, all in one container.
public enum EdgeAgent {
    /// The object type of the device status an agent with devices advertises on every change and resolves to
    /// Discover: `devices: [{label, driver, ioPoints, state: "ok"|"failing", error?}]`.
    public static let deviceStatusObjectType = "coaty-edge.DeviceStatus"

    /// Builds the agent's container; run it (it is a `Service`) or start and stop it.
    public static func make(
        _ configuration: AgentConfiguration,
        makeTransport: @escaping @Sendable () throws(MQTTError) -> any MQTTTransport = { () throws(MQTTError) in
            try MosquittoTransport()
        }
    ) async throws -> Container {
        let sources = IoSourceController()
        let actors = IoActorController()
        var controllers: [(name: String, controller: any Controller)] = [("IoSources", sources), ("IoActors", actors)]
        for router in configuration.routers {
            switch router.rules {
            case .allCompatiblePairs:
                controllers.append((router.name, IoRouter(context: router.context, nodeLimit: router.nodeLimit)))
            case .directory(let path, let rules), .file(let path, let rules):
                let ioRouter = IoRouter(context: router.context, rules: rules, nodeLimit: router.nodeLimit)
                controllers.append((router.name, ioRouter))
                controllers.append(
                    ("\(router.name).rules", RuleFilesController(router: ioRouter, path: path, initial: rules)))
            }
        }
        var pointHost: any PointHost = NoDevicePoints()
        if let devices = configuration.devices {
            let deviceController = try DeviceController(
                devices: devices, sources: sources, actors: actors, feedsBridge: configuration.bridge != nil)
            pointHost = deviceController
            controllers.append(("Devices", deviceController))
        }
        // After the devices: on a stop, the outputs take their safe state before the bridge publishes its last states.
        if let bridge = configuration.bridge {
            let connection = MQTTTopicsBridge.ConnectionSettings(
                communication: configuration.base.communication, settings: bridge)
            controllers.append(
                (
                    "MQTTTopics",
                    MQTTTopicsBridge(
                        settings: bridge, host: pointHost, connection: connection, makeTransport: makeTransport)
                ))
        }
        if configuration.printsReceivedValues {
            controllers.append(("Console", ConsoleController(actors: actors)))
        }
        return try await Container.resolve(
            configuration: configuration.base, controllers: controllers,
            logger: Logger(label: "coaty-edge.\(configuration.base.identity.name)"), makeTransport: makeTransport)
    }
}

/// The point host of an agent without devices: its bridge shows only setpoints.
private struct NoDevicePoints: PointHost {
    let feed = PointFeed()
    func command(_ value: JSONValue, toOutput ioActorId: String, origin: String) -> Bool { false }
}
