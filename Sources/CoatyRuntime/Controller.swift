import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatySharedObjects
import Logging

/// What a controller gets from its container.
public struct ControllerContext: Sendable {
    /// The name the controller was registered under; its options are `controllers.<name>` in the configuration.
    public let name: String
    public let communicationManager: CommunicationManager
    /// The agents online; the agent starts to track them (a census on every connect, every advertisement) when a
    /// controller first reads it or watches its changes.
    public let presence: AgentPresence
    public let sharedObjects: SharedObjects
    /// The controller's options (an empty object when the configuration has none), with their JSON path.
    public let options: JSONCursor
    /// The configuration file, for error messages about the options.
    public let configurationSource: String
    public let logger: Logger

    public var identity: Identity { communicationManager.identity }

    /// An error about the controller's options that names the file, the JSON path and the reason.
    public func optionsError(_ error: JSONShapeError) -> ConfigurationError {
        ConfigurationError(file: configurationSource, path: error.path, reason: error.reason)
    }
}

/// A unit of an agent's behaviour, with Coaty's lifecycle:
/// - `onInit` once, when the container is resolved;
/// - `whileStarted` from each start of the communication manager until it stops (Coaty's
///   onCommunicationManagerStarting): set up observations and handle events here; the container cancels it on
///   stop and runs it again after a restart;
/// - `onStopping` before the manager stops, while it can still publish but no longer receives (Coaty's
///   onCommunicationManagerStopping);
/// - `onDispose` once, when the container shuts down.
public protocol Controller: AnyObject, Sendable {
    func onInit(_ context: ControllerContext) async throws
    func whileStarted(_ context: ControllerContext) async
    func onStopping(_ context: ControllerContext) async
    func onDispose(_ context: ControllerContext) async
}

extension Controller {
    public func onInit(_ context: ControllerContext) async throws {}
    public func whileStarted(_ context: ControllerContext) async {}
    public func onStopping(_ context: ControllerContext) async {}
    public func onDispose(_ context: ControllerContext) async {}
}
