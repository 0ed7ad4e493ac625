import CoatyJSON
import CoatyModel

/// The IO sources and actors this agent contributes to one IO context (`ioContextNodes` in the configuration).
/// The manager makes an `IoNode` of it with a fresh objectId on every start, as Coaty JS does; the points keep
/// their configured objectIds.
public struct IoNodeDefinition: Sendable, Hashable {
    public var contextName: String
    public var ioSources: [IoSource]
    public var ioActors: [IoActor]
    public var characteristics: JSONObject?

    public init(
        contextName: String, ioSources: [IoSource] = [], ioActors: [IoActor] = [], characteristics: JSONObject? = nil
    ) {
        self.contextName = contextName
        self.ioSources = ioSources
        self.ioActors = ioActors
        self.characteristics = characteristics
    }

    func makeNode(parentObjectId: String) -> IoNode {
        IoNode(
            contextName: contextName, parentObjectId: parentObjectId, ioSources: ioSources, ioActors: ioActors,
            characteristics: characteristics)
    }
}
