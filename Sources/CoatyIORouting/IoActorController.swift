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
    /// The last payload did not decode as the actor's value type (or not at all); it was dropped.
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
        types.register(EdgeValueType.dutyPercent) { value in
            guard case .json(.number(let duty)) = value, (0...100).contains(duty) else {
                return "expected a duty in percent, 0...100"
            }
            return nil
        }
        types.register(EdgeValueType.count) { value in
            guard case .json(.number(let count)) = value, count >= 0, count == count.rounded(), count.isFinite else {
                return "expected a count, a whole number not below zero"
            }
            return nil
        }
        for name in [EdgeValueType.ratePerSecond, EdgeValueType.ratePerMinute, EdgeValueType.ratePerHour] {
            types.register(name) { value in
                guard case .json(.number(let rate)) = value, rate >= 0, rate.isFinite else {
                    return "expected a rate, a number not below zero"
                }
                return nil
            }
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
    /// A PWM duty, 0...100.
    public static let dutyPercent = "coaty-edge.Duty[Percent]"
    /// A pulse count, a whole number that never goes back.
    public static let count = "coaty-edge.Count"
    public static let ratePerSecond = "coaty-edge.Rate[PerSecond]"
    public static let ratePerMinute = "coaty-edge.Rate[PerMinute]"
    public static let ratePerHour = "coaty-edge.Rate[PerHour]"
}

/// Receives the values routed to this agent's IO actors. Each actor's value stream replays the latest value to a
/// new subscriber at once (also after a re-association), as Coaty's IoActorController does. A stream holds at most
/// `valueBufferLimit` values its consumer has not taken: under a flood the oldest give way, counted in
/// `coaty_edge_values_overflowed_total{actor}` and logged with a budget, so that a slow consumer (an output that
/// switches a relay and logs each switch) costs bounded memory and works on recent values. With zero-loss delivery
/// (`CommunicationOptions.zeroLoss`) nothing gives way: a value from a zero-loss source that finds a full stream is
/// held back, unacknowledged, and the source sends it again once its consumer has taken values.
///
/// Values are taken from the communication manager as they arrive, on its network thread (`handleIoValues`), and
/// handed straight to the actors' value streams: a task of its own in between would add a hop to every value.
public final class IoActorController: Controller {
    public static let valueBufferLimit = 1000
    private let valueTypes: IoValueTypes
    /// Set once, by `onInit`.
    private let actors = Mutex<[String: ActorEntry]>([:])

    public init(valueTypes: IoValueTypes = .standard) {
        self.valueTypes = valueTypes
    }

    public func onInit(_ context: ControllerContext) async throws {
        let entries = context.communicationManager.ioNodeDefinitions.flatMap(\.ioActors).map { actor in
            // A raw actor takes any payload, as in Coaty JS: the value type's check is for JSON values.
            ActorEntry(
                actor: actor, check: actor.useRawIoValues ? nil : valueTypes.check(of: actor.valueType),
                logger: context.logger)
        }
        actors.withLock { actors in
            for entry in entries { actors[entry.actor.objectId] = entry }
        }
    }

    private func entry(_ actor: IoActor) -> ActorEntry? {
        actors.withLock { $0[actor.objectId] }
    }

    public func whileStarted(_ context: ControllerContext) async {
        let manager = context.communicationManager
        let entries = actors.withLock { Array($0.values) }
        for entry in entries { entry.resumeDelivery() }
        await withDiscardingTaskGroup { group in
            for entry in entries {
                guard let ioStates = try? manager.observeIoState(of: entry.actor.objectId) else { continue }
                group.addTask {
                    // Values arrive while the association is followed, until the manager stops or the task ends.
                    try? await manager.handleIoValues(
                        of: entry.actor, entry.receive, rejected: entry.reject, hasRoom: entry.hasRoom
                    ) {
                        for await ioState in ioStates { entry.associate(ioState.hasAssociations) }
                    }
                }
            }
        }
        // The manager is stopping: no actor stays associated.
        for entry in entries { entry.associate(false) }
    }

    /// The agent stops: values routed to the actors from now on, and those their consumers have not taken yet, are
    /// dropped (counted in `coaty_edge_inbound_dropped_on_stop_total` and logged), so that no output moves after the
    /// stop began and the stop does not wait for a backlog.
    public func onStopping(_ context: ControllerContext) async {
        let entries = actors.withLock { Array($0.values) }
        for entry in entries {
            let dropped = entry.stopDelivery()
            if dropped > 0 {
                context.logger.notice(
                    "dropped \(dropped) values for \(entry.actor.name) that were pending when the agent stopped")
            }
        }
    }

    /// The latest value at once (if there is one), then every value routed to the actor.
    public func values(of actor: IoActor) -> ObservationStream<IoValue> {
        guard let entry = entry(actor) else { return .finished }
        return entry.values()
    }

    /// Whether the actor is associated now, then every change.
    public func associations(of actor: IoActor) -> ObservationStream<Bool> {
        entry(actor)?.association.stream() ?? .finished
    }

    /// The actor's state now, then every change.
    public func states(of actor: IoActor) -> ObservationStream<IoActorState> {
        entry(actor)?.state.stream() ?? .finished
    }

    public func latestValue(of actor: IoActor) -> IoValue? {
        entry(actor)?.shared.withLock { $0.latest }
    }

    public func isAssociated(_ actor: IoActor) -> Bool {
        entry(actor)?.association.value ?? false
    }

    /// Values that gave way in a value stream whose consumer fell behind (`coaty_edge_values_overflowed_total`).
    package func overflowedValues(of actor: IoActor) -> Int {
        entry(actor)?.shared.withLock { $0.overflowed } ?? 0
    }

    /// Payloads that did not decode as the actor's value type (or not at all, as JSON).
    public func rejectedValues(of actor: IoActor) -> Int {
        entry(actor)?.shared.withLock { $0.rejected } ?? 0
    }
}

/// One actor: what it received, its state, and the streams of its values. Each has a lock of its own, and the
/// manager's handler holds the entry itself, so a value takes no lookup and no lock shared with other actors.
private final class ActorEntry: Sendable {
    struct Shared {
        var latest: IoValue?
        var rejected = 0
        var received = 0
        var overflowed = 0
        /// Mirrors `state`, so that a value does not take the broadcast's lock only to find it unchanged.
        var currentState = IoActorState.waiting
        var nextId = 0
        /// Set while the agent stops: values are dropped, not handed on.
        var isStopped = false
        /// Kept as an array that `receive` hands on as it is, without copying per value.
        var valueWatchers: [(id: Int, continuation: ObservationStream<IoValue>.Continuation)] = []
    }

    let actor: IoActor
    /// The check of the actor's value type, if the type is registered.
    let check: (@Sendable (IoValue) -> String?)?
    let logger: Logger
    let association = CurrentValueBroadcast(false)
    let state = CurrentValueBroadcast(IoActorState.waiting)
    let shared = Mutex(Shared())
    let receivedCounter: Counter
    let rejectedCounter: Counter
    let droppedOnStopCounter = Counter(label: "coaty_edge_inbound_dropped_on_stop_total")
    let overflowCounter: Counter
    let overflowLog = LogBudget()
    /// A source that sends the wrong type sends it at its full rate: every value is counted, a few are logged.
    let rejectionLog = LogBudget()

    init(actor: IoActor, check: (@Sendable (IoValue) -> String?)?, logger: Logger) {
        self.actor = actor
        self.check = check
        self.logger = logger
        receivedCounter = Counter(label: "coaty_edge_values_received_total", dimensions: [("actor", actor.objectId)])
        rejectedCounter = Counter(label: "coaty_edge_values_rejected_total", dimensions: [("actor", actor.objectId)])
        overflowCounter = Counter(label: "coaty_edge_values_overflowed_total", dimensions: [("actor", actor.objectId)])
    }

    /// Called on the manager's network thread for every value.
    func receive(_ value: IoValue) {
        let watchers = shared.withLock { shared -> [(id: Int, continuation: ObservationStream<IoValue>.Continuation)] in
            guard !shared.isStopped else {
                droppedOnStopCounter.increment()
                return []
            }
            if let problem = check?(value) {
                count(rejection: problem, in: &shared)
                if case .log(let suppressed) = rejectionLog.admit() {
                    if suppressed > 0 {
                        logger.warning("\(suppressed) more values for \(actor.name) were dropped without a log line")
                    }
                    logger.warning("dropped a value for \(actor.name) that is not \(actor.valueType): \(problem)")
                }
                return []
            }
            shared.received += 1
            shared.latest = value
            receivedCounter.increment()
            change(to: .receiving, in: &shared)
            return shared.valueWatchers
        }
        for watcher in watchers where !watcher.continuation.yield(value) {
            overflowCounter.increment()
            shared.withLock { $0.overflowed += 1 }
            if case .log(let suppressed) = overflowLog.admit() {
                if suppressed > 0 {
                    logger.warning("\(suppressed) more values for \(actor.name) gave way without a log line")
                }
                logger.warning(
                    "a consumer of \(actor.name) falls behind: the oldest of \(IoActorController.valueBufferLimit) values waiting for it gave way"
                )
            }
        }
    }

    /// Whether every value stream takes a value now without dropping its oldest; called on the manager's network
    /// thread before a zero-loss value is handed on.
    func hasRoom() -> Bool {
        let watchers = shared.withLock { $0.isStopped ? [] : $0.valueWatchers }
        return watchers.allSatisfy { $0.continuation.hasRoom }
    }

    /// Called on the manager's network thread for a payload the manager could not decode; the manager logs it.
    func reject(_ problem: String) {
        shared.withLock { count(rejection: problem, in: &$0) }
    }

    private func count(rejection problem: String, in shared: inout Shared) {
        shared.rejected += 1
        rejectedCounter.increment()
        change(to: .failed(problem), in: &shared)
    }

    /// Drops what comes from now on and what the value streams hold; returns how many values the streams held.
    func stopDelivery() -> Int {
        let watchers = shared.withLock { shared in
            shared.isStopped = true
            return shared.valueWatchers
        }
        let dropped = watchers.reduce(0) { $0 + $1.continuation.discardBuffered() }
        droppedOnStopCounter.increment(by: Int64(dropped))
        return dropped
    }

    func resumeDelivery() {
        shared.withLock { $0.isStopped = false }
    }

    func associate(_ isAssociated: Bool) {
        shared.withLock { shared in
            guard association.value != isAssociated else { return }
            association.send(isAssociated)
            change(to: isAssociated ? .waiting : .sourceLost, in: &shared)
        }
    }

    private func change(to newState: IoActorState, in shared: inout Shared) {
        guard shared.currentState != newState else { return }
        shared.currentState = newState
        state.send(newState)
    }

    func values() -> ObservationStream<IoValue> {
        let (stream, continuation) = ObservationStream.makeStream(
            of: IoValue.self, bufferLimit: IoActorController.valueBufferLimit)
        let id = shared.withLock { shared in
            let id = shared.nextId
            shared.nextId += 1
            shared.valueWatchers.append((id, continuation))
            if let latest = shared.latest { continuation.yield(latest) }
            return id
        }
        continuation.onTermination { [weak self] in
            self?.shared.withLock { $0.valueWatchers.removeAll { $0.id == id } }
        }
        return stream
    }
}
