import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatyRuntime
import CoreMetrics
import Logging
import Synchronization

/// Where an IO actor stands, in the spirit of a data publisher's state.
public enum IoActorState: Sendable, Hashable {
    /// No value yet since the actor was (re)associated.
    case waiting
    /// Values are arriving.
    case receiving
    /// The actor was associated and lost its association.
    case sourceLost
    /// The last value did not decode as the actor's value type; it was dropped.
    case failed(String)
}

/// Which values each value type accepts. Values of unregistered types are accepted as they come.
public struct IoValueTypes: Sendable {
    private var checks: [String: @Sendable (IoValue) -> String?] = [:]

    public init() {}

    /// The value types of coaty-edge's own sensors and switches.
    public static let standard: IoValueTypes = {
        var types = IoValueTypes()
        for name in [EdgeValueType.temperature, EdgeValueType.humidity, EdgeValueType.pressure] {
            types.register(name) { value in
                guard case .json(.number) = value else { return "expected a number" }
                return nil
            }
        }
        types.register(EdgeValueType.switchState) { value in
            guard case .json(.bool) = value else { return "expected true or false" }
            return nil
        }
        return types
    }()

    /// `check` returns why a value is not of the type, or nil when it is.
    public mutating func register(_ valueType: String, check: @escaping @Sendable (IoValue) -> String?) {
        checks[valueType] = check
    }

    /// The check of a value type: it returns why a value is not of the type, or nil when it is.
    func check(of valueType: String) -> (@Sendable (IoValue) -> String?)? {
        checks[valueType]
    }
}

/// The value types coaty-edge's devices use.
public enum EdgeValueType {
    public static let temperature = "coaty-edge.Temperature[Celsius]"
    public static let humidity = "coaty-edge.Humidity[Percent]"
    public static let pressure = "coaty-edge.Pressure[Hectopascal]"
    public static let switchState = "coaty-edge.Switch"
}

/// Receives the values routed to this agent's IO actors. Each actor's value stream replays the latest value to a
/// new subscriber at once (also after a re-association), as Coaty's IoActorController does.
///
/// Values are taken from the communication manager as they arrive, on its network thread (`handleIoValues`), and
/// handed straight to the actors' value streams: a task of its own in between would add a hop to every value.
public final class IoActorController: Controller {
    private struct Actor {
        var actor: IoActor
        /// The check of the actor's value type, if the type is registered.
        let check: (@Sendable (IoValue) -> String?)?
        var latest: IoValue?
        var rejected = 0
        var received = 0
        let association = CurrentValueBroadcast(false)
        let state = CurrentValueBroadcast(IoActorState.waiting)
        var nextId = 0
        /// Kept as an array that `receive` hands on as it is, without copying per value.
        var valueWatchers: [(id: Int, continuation: ObservationStream<IoValue>.Continuation)] = []
        let receivedCounter: Counter
        let rejectedCounter: Counter

        init(actor: IoActor, check: (@Sendable (IoValue) -> String?)?) {
            self.actor = actor
            self.check = check
            receivedCounter = Counter(label: "coaty_edge_values_received_total", dimensions: [("actor", actor.objectId)])
            rejectedCounter = Counter(label: "coaty_edge_values_rejected_total", dimensions: [("actor", actor.objectId)])
        }
    }

    private let valueTypes: IoValueTypes
    private let state = Mutex<(actors: [String: Actor], logger: Logger)>(([:], Logger(label: "coaty.io-actor")))

    public init(valueTypes: IoValueTypes = .standard) {
        self.valueTypes = valueTypes
    }

    public func onInit(_ context: ControllerContext) async throws {
        let actors = context.communicationManager.ioNodeDefinitions.flatMap(\.ioActors)
        state.withLock { state in
            state.logger = context.logger
            for actor in actors {
                state.actors[actor.objectId] = Actor(actor: actor, check: valueTypes.check(of: actor.valueType))
            }
        }
    }

    public func whileStarted(_ context: ControllerContext) async {
        let manager = context.communicationManager
        let actors = state.withLock { $0.actors.values.map(\.actor) }
        await withDiscardingTaskGroup { group in
            for actor in actors {
                guard let ioStates = try? manager.observeIoState(of: actor.objectId) else { continue }
                group.addTask {
                    // Values arrive while the association is followed, until the manager stops or the task ends.
                    try? await manager.handleIoValues(of: actor, { value in self.receive(value, for: actor.objectId) }) {
                        for await ioState in ioStates { self.associate(ioState.hasAssociations, actor: actor) }
                    }
                }
            }
        }
        // The manager is stopping: no actor stays associated.
        for actor in actors { associate(false, actor: actor) }
    }

    private func receive(_ value: IoValue, for actorId: String) {
        let watchers = state.withLock { state -> [(id: Int, continuation: ObservationStream<IoValue>.Continuation)] in
            guard let index = state.actors.index(forKey: actorId) else { return [] }
            // The entry is changed in place: copying it out and back would copy its tables for every value.
            let entry = state.actors.values[index]
            if let problem = entry.check?(value) {
                state.actors.values[index].rejected += 1
                entry.rejectedCounter.increment()
                entry.state.send(.failed(problem))
                state.logger.warning("dropped a value for \(entry.actor.name) that is not \(entry.actor.valueType): \(problem)")
                return []
            }
            state.actors.values[index].received += 1
            state.actors.values[index].latest = value
            entry.receivedCounter.increment()
            entry.state.send(.receiving)
            return entry.valueWatchers
        }
        for watcher in watchers { watcher.continuation.yield(value) }
    }

    private func associate(_ isAssociated: Bool, actor: IoActor) {
        state.withLock { state in
            guard let entry = state.actors[actor.objectId], entry.association.value != isAssociated else { return }
            entry.association.send(isAssociated)
            entry.state.send(isAssociated ? .waiting : .sourceLost)
        }
    }

    /// The latest value at once (if there is one), then every value routed to the actor.
    public func values(of actor: IoActor) -> ObservationStream<IoValue> {
        let (stream, continuation) = ObservationStream.makeStream(of: IoValue.self)
        let id = state.withLock { state -> Int? in
            guard let index = state.actors.index(forKey: actor.objectId) else { return nil }
            let id = state.actors.values[index].nextId
            state.actors.values[index].nextId += 1
            state.actors.values[index].valueWatchers.append((id, continuation))
            if let latest = state.actors.values[index].latest { continuation.yield(latest) }
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination { [weak self] in
            self?.state.withLock { $0.actors[actor.objectId]?.valueWatchers.removeAll { $0.id == id } }
        }
        return stream
    }

    /// Whether the actor is associated now, then every change.
    public func associations(of actor: IoActor) -> ObservationStream<Bool> {
        state.withLock { $0.actors[actor.objectId]?.association.stream() } ?? .finished
    }

    /// The actor's state now, then every change.
    public func states(of actor: IoActor) -> ObservationStream<IoActorState> {
        state.withLock { $0.actors[actor.objectId]?.state.stream() } ?? .finished
    }

    public func latestValue(of actor: IoActor) -> IoValue? {
        state.withLock { $0.actors[actor.objectId]?.latest }
    }

    public func isAssociated(_ actor: IoActor) -> Bool {
        state.withLock { $0.actors[actor.objectId]?.association.value ?? false }
    }

    /// Values that did not decode as the actor's value type.
    public func rejectedValues(of actor: IoActor) -> Int {
        state.withLock { $0.actors[actor.objectId]?.rejected ?? 0 }
    }
}
