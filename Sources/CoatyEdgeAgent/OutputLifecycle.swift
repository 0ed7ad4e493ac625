import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel
import EdgeHardware
import Logging

/// The life of one output of the agent, whatever drives it (a GPIO line in `OutputDevices`, a PWM channel in
/// `PWMOutputs`): its device is opened with retries, then it follows the values routed to its actor, the wake-ups
/// its driver asks for, and its actor's association, until cancelled. What each step does to the driver, and how
/// it is logged, is the output kind's.
enum OutputLifecycle {
    typealias Instant = ContinuousClock.Instant

    /// The open outputs of one kind by their actor's objectId, the data of the shared objects their controls read, and
    /// whether the agent stops; the kind keeps it under one lock, with its log lines, so that the log has the changes in
    /// their order. Once the agent stops, only the safe state moves an output.
    struct Outputs<Output> {
        private(set) var byActor: [String: Output] = [:]
        /// The data of the shared objects that the outputs' controls read, by object name.
        var sharedData: [String: JSONObject] = [:]
        /// Set when the agent stops: the outputs hold their safe state.
        private(set) var isStopping = false

        /// Adds an output whose device is open; returns whether the agent stops (then it is to take its safe state).
        mutating func add(_ output: Output, for actorId: String) -> Bool {
            byActor[actorId] = output
            return isStopping
        }

        /// An output to change while the agent runs, for `update`: nil once the agent stops, and before the output's
        /// device is open.
        func running(_ actorId: String) -> Output? {
            isStopping ? nil : byActor[actorId]
        }

        /// Keeps an output that `running` gave and that was changed.
        mutating func update(_ output: Output, for actorId: String) {
            byActor[actorId] = output
        }

        /// Changes an output also when the agent stops, as the safe state does.
        @discardableResult
        mutating func enterSafeState<Result>(_ actorId: String, _ body: (inout Output) -> Result) -> Result? {
            guard var output = byActor[actorId] else { return nil }
            let result = body(&output)
            byActor[actorId] = output
            return result
        }

        /// The agent stops: `safeState` is applied to the outputs of `actorIds`, in their order, and from now on only
        /// `enterSafeState` changes an output.
        mutating func stop(_ actorIds: [String], _ safeState: (inout Output) -> Void) {
            isStopping = true
            for actorId in actorIds { enterSafeState(actorId, safeState) }
        }

        /// The run ended: a next start may change the outputs again. Cleared when the run ends, not when it starts: at
        /// the start it would undo a stop that came before the outputs' task first ran (a SIGTERM right after start, on
        /// a loaded machine).
        mutating func endRun() {
            isStopping = false
        }
    }

    /// How the opening ended.
    enum Opening {
        /// The device is open; the output runs.
        case running
        /// The device is open, but the agent stopped meanwhile: the output is to take its safe state, for good.
        case stopping
        /// Cancelled before the device could be opened.
        case cancelled
    }

    /// Calls `open` until it succeeds, at least once (also when the agent stopped before the output's task first ran:
    /// the device is then opened to be put in its safe state), after 1 s, then up to 30 s between failures; the first
    /// failure is logged (`cannot VERB LABEL for ACTOR, retrying: ...`), each is the device's status. `open` returns
    /// whether the agent stops.
    static func open(
        _ label: String, for actor: IoActor, verb: String, logger: Logger, status: DeviceStatus,
        _ open: () throws -> Bool
    ) async -> Opening {
        let backoff = Backoff(minimum: .seconds(1), maximum: .seconds(30))
        var failures = 0
        var hasTried = false
        while !Task.isCancelled || !hasTried {
            hasTried = true
            do {
                return try open() ? .stopping : .running
            } catch {
                failures += 1
                if failures == 1 { logger.error("cannot \(verb) \(label) for \(actor.name), retrying: \(error)") }
                guard !Task.isCancelled else { return .cancelled }
                status.set(label, error: "\(error)")
                try? await Task.sleep(for: backoff.delay(afterFailures: failures))
            }
        }
        return .cancelled
    }

    /// Until cancelled: hands each value routed to `actor` to `receive`, calls `wake` at each deadline `wakeups`
    /// brings (the newest one counts), and `lost` whenever the actor loses its last association. Only a lost
    /// association counts: an actor that was never associated keeps its initial state. Coaty reports an actor
    /// unassociated after any disassociation, even while other sources still feed it, so the routing table, which
    /// knows whether one does, decides.
    static func follow(
        _ actor: IoActor, actors: IoActorController, manager: CommunicationManager, wakeups: AsyncStream<Instant>,
        receive: @escaping @Sendable (JSONValue) -> Void, wake: @escaping @Sendable () -> Void,
        lost: @escaping @Sendable () -> Void
    ) async {
        let clock = ContinuousClock()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await value in actors.values(of: actor) { receive(json(of: value)) }
            }
            group.addTask {
                for await deadline in wakeups {
                    guard (try? await clock.sleep(until: deadline)) != nil else { return }
                    wake()
                }
            }
            guard let ioStates = try? manager.observeIoState(of: actor.objectId) else { return }
            group.addTask {
                var wasAssociated = false
                for await _ in ioStates {
                    let isAssociated = manager.ioState(of: actor.objectId).hasAssociations
                    if wasAssociated && !isAssociated { lost() }
                    wasAssociated = isAssociated
                }
            }
        }
    }

    /// A routed value as an output reads it. A raw actor receives bytes (Coaty hands a raw actor any payload):
    /// JSON text (`true`, `1`, `"on"`, `62.5`) is read as JSON, anything else as a string (`on`), which the output
    /// ignores unless it is one of its words.
    static func json(of value: IoValue) -> JSONValue {
        switch value {
        case .json(let json): json
        case .raw(let bytes): (try? JSONValue(parsing: bytes)) ?? .string(String(decoding: bytes, as: UTF8.self))
        }
    }
}
