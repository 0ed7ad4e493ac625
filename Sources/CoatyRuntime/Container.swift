import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatySharedObjects
import Logging
import ServiceLifecycle
import Synchronization

/// An agent: its identity, communication manager, presence view and controllers, run together.
///
/// `run()` (a `Service`, for a `ServiceGroup` that handles SIGTERM) starts the agent, keeps it running until a
/// graceful shutdown or cancellation, then stops it: controllers' `onStopping`, their tasks cancelled, the
/// manager's Deadvertise and clean disconnect.
public final class Container: Service, Sendable {
    public let configuration: Configuration
    public let communicationManager: CommunicationManager
    public let presence: AgentPresence
    public let sharedObjects: SharedObjects
    public let logger: Logger
    private let controllers: [(name: String, controller: any Controller, context: ControllerContext)]
    private let running = Mutex<Task<Void, Never>?>(nil)

    /// Builds the agent and initialises its controllers in the given order.
    public static func resolve(
        configuration: Configuration, controllers: [(name: String, controller: any Controller)] = [],
        logger: Logger = Logger(label: "coaty.container"),
        makeTransport: @escaping @Sendable () throws(MQTTError) -> any MQTTTransport = { () throws(MQTTError) in
            try MosquittoTransport()
        }
    ) async throws -> Container {
        let container = Container(
            configuration: configuration, controllers: controllers, logger: logger, makeTransport: makeTransport)
        for (name, controller, context) in container.controllers {
            do {
                try await controller.onInit(context)
            } catch {
                throw ControllerError(controller: name, underlying: error)
            }
        }
        return container
    }

    private init(
        configuration: Configuration, controllers: [(name: String, controller: any Controller)], logger: Logger,
        makeTransport: @escaping @Sendable () throws(MQTTError) -> any MQTTTransport
    ) {
        self.configuration = configuration
        self.logger = logger
        let manager = CommunicationManager(
            identity: configuration.identity, options: configuration.communication, ioNodes: configuration.ioNodes,
            logger: Logger(label: "coaty.communication"), makeTransport: makeTransport)
        communicationManager = manager
        // Only a controller that looks at other agents makes the agent track them (see `PresenceTracking`).
        let presence = AgentPresence(manager: manager, tracking: .onFirstUse)
        self.presence = presence
        let sharedObjects = SharedObjects(manager: manager, logger: Logger(label: "coaty.shared"))
        self.sharedObjects = sharedObjects
        self.controllers = controllers.map { name, controller in
            let options =
                configuration.controllerOptions[name]
                ?? JSONCursor(.object([:]), path: JSONPath([.key("controllers"), .key(name)]))
            let context = ControllerContext(
                name: name, communicationManager: manager, presence: presence, sharedObjects: sharedObjects,
                options: options,
                configurationSource: configuration.source, logger: Logger(label: "coaty.controller.\(name)"))
            return (name, controller, context)
        }
    }

    public var identity: Identity { communicationManager.identity }

    public func controller<C: Controller>(named name: String, as type: C.Type = C.self) -> C? {
        controllers.first { $0.name == name }?.controller as? C
    }

    /// Starts the manager and runs presence, shared objects (hosting the configured ones) and every controller's
    /// `whileStarted` until `stop()`.
    public func start() {
        communicationManager.start()
        let task = Task { [controllers, presence, sharedObjects, configuration, logger] in
            await withDiscardingTaskGroup { group in
                group.addTask { await presence.run() }
                group.addTask { await sharedObjects.run() }
                for definition in configuration.sharedObjects {
                    do {
                        try await sharedObjects.host(definition)
                    } catch {
                        logger.error("cannot host shared object \(definition.name): \(error)")
                    }
                }
                for (_, controller, context) in controllers {
                    group.addTask { await controller.whileStarted(context) }
                }
            }
        }
        let previous = running.withLock { running in
            defer { running = task }
            return running
        }
        previous?.cancel()
    }

    /// Stops handling inbound messages (they are dropped and counted: a stop does not wait for a backlog), lets
    /// controllers publish their last events, cancels their tasks, and stops the manager.
    public func stop() async {
        guard
            let task = running.withLock({ running in
                defer { running = nil }; return running
            })
        else { return }
        communicationManager.stopReceiving()
        for (_, controller, context) in controllers {
            await controller.onStopping(context)
        }
        task.cancel()
        await task.value
        await communicationManager.stop()
    }

    /// Stops and disposes the controllers.
    public func shutdown() async {
        await stop()
        for (_, controller, context) in controllers {
            await controller.onDispose(context)
        }
    }

    /// Runs the agent until a graceful shutdown is requested or the task is cancelled, then shuts it down.
    public func run() async throws {
        start()
        logger.info("agent \(identity.name) (\(identity.objectId)) started")
        try? await gracefulShutdown()
        await shutdown()
        logger.info("agent \(identity.name) stopped")
    }
}

public struct ControllerError: Error, CustomStringConvertible {
    public var controller: String
    public var underlying: any Error

    public var description: String { "controller \(controller): \(underlying)" }
}
