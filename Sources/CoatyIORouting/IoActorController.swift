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

    public func problem(with value: IoValue, as valueType: String) -> String? {
        checks[valueType]?(value)
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
public final class IoActorController: Controller {
    private struct Actor {
        var actor: IoActor
        var latest: IoValue?
        var rejected = 0
        var received = 0
        let association = CurrentValueBroadcast(false)
        let state = CurrentValueBroadcast(IoActorState.waiting)
        var nextId = 0
        var valueWatchers: [Int: AsyncStream<IoValue>.Continuation] = [:]
        let receivedCounter: Counter
        let rejectedCounter: Counter

        init(actor: IoActor) {
            self.actor = actor
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
            for actor in actors { state.actors[actor.objectId] = Actor(actor: actor) }
        }
    }

    public func whileStarted(_ context: ControllerContext) async {
        let manager = context.communicationManager
        let actors = state.withLock { $0.actors.values.map(\.actor) }
        await withDiscardingTaskGroup { group in
            for actor in actors {
                guard let values = try? manager.observeIoValue(of: actor),
                    let ioStates = try? manager.observeIoState(of: actor.objectId)
                else { continue }
                group.addTask {
                    for await value in values { self.receive(value, for: actor) }
                }
                group.addTask {
                    for await ioState in ioStates { self.associate(ioState.hasAssociations, actor: actor) }
                }
            }
        }
        // The manager is stopping: no actor stays associated.
        for actor in actors { associate(false, actor: actor) }
    }

    private func receive(_ value: IoValue, for actor: IoActor) {
        let problem = valueTypes.problem(with: value, as: actor.valueType)
        let watchers = state.withLock { state -> [AsyncStream<IoValue>.Continuation] in
            guard var entry = state.actors[actor.objectId] else { return [] }
            defer { state.actors[actor.objectId] = entry }
            if let problem {
                entry.rejected += 1
                entry.rejectedCounter.increment()
                entry.state.send(.failed(problem))
                state.logger.warning("dropped a value for \(actor.name) that is not \(actor.valueType): \(problem)")
                return []
            }
            entry.received += 1
            entry.receivedCounter.increment()
            entry.latest = value
            entry.state.send(.receiving)
            return Array(entry.valueWatchers.values)
        }
        for watcher in watchers { watcher.yield(value) }
    }

    private func associate(_ isAssociated: Bool, actor: IoActor) {
        state.withLock { state in
            guard let entry = state.actors[actor.objectId], entry.association.value != isAssociated else { return }
            entry.association.send(isAssociated)
            entry.state.send(isAssociated ? .waiting : .sourceLost)
        }
    }

    /// The latest value at once (if there is one), then every value routed to the actor.
    public func values(of actor: IoActor) -> AsyncStream<IoValue> {
        let (stream, continuation) = AsyncStream.makeStream(of: IoValue.self)
        let id = state.withLock { state -> Int? in
            guard var entry = state.actors[actor.objectId] else { return nil }
            defer { state.actors[actor.objectId] = entry }
            let id = entry.nextId
            entry.nextId += 1
            entry.valueWatchers[id] = continuation
            if let latest = entry.latest { continuation.yield(latest) }
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.actors[actor.objectId]?.valueWatchers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Whether the actor is associated now, then every change.
    public func associations(of actor: IoActor) -> AsyncStream<Bool> {
        state.withLock { $0.actors[actor.objectId]?.association.stream() } ?? AsyncStream { $0.finish() }
    }

    /// The actor's state now, then every change.
    public func states(of actor: IoActor) -> AsyncStream<IoActorState> {
        state.withLock { $0.actors[actor.objectId]?.state.stream() } ?? AsyncStream { $0.finish() }
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
