import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel
import CoatyRuntime
import CoatySharedObjects
import EdgeHardware
import Logging
import Metrics
import Synchronization

/// Runs the agent's devices: polls each sensor and publishes its values through the IoSource controller (so
/// the router's rate and the source's strategy apply), drives GPIO outputs from the values routed to their
/// IoActors (falling back to their safe state when the association is lost and on shutdown), and publishes GPIO
/// inputs. Devices that fail are retried with backoff and recover by themselves.
///
/// The state of every device is advertised as a `coaty-edge.DeviceStatus` object whenever it changes, and
/// answered to Discover, so that `coaty-edge observe` and `agents` show failing sensors of every agent.
final class DeviceController: Controller {
    static let statusObjectType = EdgeAgent.deviceStatusObjectType

    private let devices: DeviceConfiguration
    private let sources: IoSourceController<ContinuousClock>
    private let actors: IoActorController
    private let emulation: DeviceEmulation?
    private let buses = I2CBusPool()
    private let state = Mutex(State())
    /// The latest value of each source. A source's first reading comes before any router associated it and is
    /// dropped; a deadband then holds back readings that do not move (until the heartbeat, minutes later) and an
    /// input publishes only on a change, so a source that becomes associated sends its latest value at once. Sources
    /// of a failing device have none: that value would be stale.
    private let latest = Mutex<[String: LatestValue]>([:])

    private struct LatestValue {
        var value: JSONValue
        /// Whether the source controller took it while the source had its current association.
        var isSent: Bool
    }

    private struct State {
        var statusObjectId = CoatyUUID.random()
        /// Per device label: "ok" or the error, in configuration order.
        var health: [(label: String, kind: String, ioPoints: [String], error: String?)] = []
        var outputs: [String: OutputDriver] = [:]
        /// The data of the shared objects that output thresholds read, by object name.
        var sharedData: [String: JSONObject] = [:]
        /// Set by `onStopping`: an output whose line is requested after it goes to its safe state at once.
        var isStopping = false
        var statusChanges: AsyncStream<Void>.Continuation?
    }

    init(devices: DeviceConfiguration, sources: IoSourceController<ContinuousClock>, actors: IoActorController) throws {
        self.sources = sources
        self.actors = actors
        if devices.emulated {
            let emulation = try DeviceEmulation(devices)
            self.emulation = emulation
            var emulated = devices
            emulated.sysfsRoot = emulation.sysfsRoot
            self.devices = emulated
        } else {
            emulation = nil
            self.devices = devices
        }
    }

    func whileStarted(_ context: ControllerContext) async {
        let manager = context.communicationManager
        let logger = context.logger
        let actorsById = Dictionary(
            manager.ioNodeDefinitions.flatMap(\.ioActors).map { ($0.objectId, $0) }, uniquingKeysWith: { first, _ in first })
        let sourcesById = Dictionary(
            manager.ioNodeDefinitions.flatMap(\.ioSources).map { ($0.objectId, $0) }, uniquingKeysWith: { first, _ in first })
        let deviceSourceIds = devices.sensors.flatMap(\.sources).map(\.ioSourceId) + devices.inputs.map(\.ioSourceId)
        let (statusChanges, notify) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        state.withLock { state in
            state.isStopping = false
            state.statusChanges = notify
            state.health = devices.sensors.map { sensor in
                (sensor.makeSensor(buses: buses, sysfsRoot: devices.sysfsRoot).label, sensor.driver.rawValue, sensor.sources.map(\.ioSourceId), nil)
            }
                + devices.outputs.map { ("GPIO output \($0.line)", "gpio-output", [$0.ioActorId], nil) }
                + devices.inputs.map { ("GPIO input \($0.line)", "gpio-input", [$0.ioSourceId], nil) }
        }

        await withDiscardingTaskGroup { group in
            if let emulation {
                group.addTask { await emulation.simulate() }
            }
            for device in devices.sensors {
                group.addTask { await self.poll(device, logger: logger) }
            }
            for output in devices.outputs {
                guard let actor = actorsById[output.ioActorId] else { continue }
                group.addTask { await self.drive(output, from: actor, manager: manager, logger: logger) }
                if case .sharedHysteresis(let thresholds) = output.control {
                    group.addTask {
                        await self.follow(thresholds, of: output, actor: actor, sharedObjects: context.sharedObjects, logger: logger)
                    }
                }
            }
            for input in devices.inputs {
                group.addTask { await self.watch(input, logger: logger) }
            }
            for source in deviceSourceIds.compactMap({ sourcesById[$0] }) {
                group.addTask { await self.publishMissedValues(of: source, logger: logger) }
            }
            group.addTask { await self.advertiseStatus(on: statusChanges, manager: manager, logger: logger) }
            let discovers = manager.observeDiscover()
            group.addTask {
                for await request in discovers where request.event.isObjectTypeCompatible(Self.statusObjectType) {
                    try? await request.respond(ResolveEvent(object: self.statusObject(of: manager)))
                }
            }
        }
        state.withLock { $0.statusChanges = nil }
    }

    /// Outputs go to their safe state before the agent leaves.
    func onStopping(_ context: ControllerContext) async {
        state.withLock { $0.isStopping = true }
        enterSafeState(context.logger, reason: "the agent stops")
    }

    func onDispose(_ context: ControllerContext) async {
        emulation?.removeFiles()
    }

    // MARK: - Sensors

    private func poll(_ device: SensorDevice, logger: Logger) async {
        let sensor = device.makeSensor(buses: buses, sysfsRoot: devices.sysfsRoot)
        let poller = SensorPoller(sensor: sensor, interval: device.pollInterval, backoff: device.retry, pipelines: device.pipelines)
        let bindings = Dictionary(device.sources.map { ($0.quantity, $0) }, uniquingKeysWith: { first, _ in first })
        let read = Dictionary(device.sources.map {
            ($0.ioSourceId, Counter(label: "coaty_edge_values_read_total", dimensions: [("source", $0.ioSourceId)]))
        }, uniquingKeysWith: { first, _ in first })
        // Counts failures (a sensor that stops answering, or then fails for another reason), not the retries that fail alike.
        let errors = Counter(label: "coaty_edge_sensor_errors_total", dimensions: [("sensor", sensor.label)])
        for await event in poller {
            switch event {
            case .value(let quantity, let value):
                guard let binding = bindings[quantity] else { continue }
                read[binding.ioSourceId]?.increment()
                do {
                    try publish(.number(value), from: binding.ioSourceId)
                } catch {
                    logger.error("cannot publish \(sensor.label) \(quantity.rawValue): \(error)")
                }
            case .failed(let error):
                errors.increment()
                forgetLatest(of: device.sources.map(\.ioSourceId))
                logger.error("\(sensor.label) fails, retrying with backoff: \(error)")
                setHealth(of: sensor.label, error: error.description)
            case .recovered(let attempts):
                logger.notice("\(sensor.label) answers again after \(attempts) failed reads")
                setHealth(of: sensor.label, error: nil)
            }
        }
    }

    // MARK: - Outputs

    private func drive(_ output: OutputDevice, from actor: IoActor, manager: CommunicationManager, logger: Logger) async {
        let label = "GPIO output \(output.line)"
        let backoff = Backoff(minimum: .seconds(1), maximum: .seconds(30))
        var failures = 0
        while !Task.isCancelled {
            do {
                let line = try GPIOOutput(chip: output.line.chipPath, line: output.line.offset, activeLow: output.activeLow,
                    initiallyActive: output.initial)
                var driver = try OutputDriver(line: line, logic: output.logic)
                let isStopping = state.withLock { state in
                    // Shared thresholds that arrived while the line was being requested.
                    if case .sharedHysteresis(let thresholds) = output.control, let hysteresis = thresholds.hysteresis(state.sharedData) {
                        _ = driver.retune(hysteresis)
                    }
                    state.outputs[output.ioActorId] = driver
                    return state.isStopping
                }
                setHealth(of: label, error: nil)
                // A stop that came while the line was being requested found no output to put in its safe state.
                if isStopping {
                    enterSafeState(of: output.ioActorId, label: label, logger: logger, reason: "the agent stops")
                    return
                }
                break
            } catch {
                failures += 1
                if failures == 1 { logger.error("cannot request \(label) for \(actor.name), retrying: \(error)") }
                setHealth(of: label, error: error.description)
                try? await Task.sleep(for: backoff.delay(afterFailures: failures))
            }
        }
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await value in self.actors.values(of: actor) {
                    guard case .json(let json) = value else { continue }
                    self.apply(json, to: output.ioActorId, label: label, actor: actor, logger: logger)
                }
            }
            guard let ioStates = try? manager.observeIoState(of: actor.objectId) else { return }
            group.addTask {
                // Only a lost association counts: an actor that was never associated keeps its initial state. Coaty
                // reports an actor unassociated after any disassociation, even while other sources still feed it,
                // so the routing table, which knows whether one does, decides.
                var wasAssociated = false
                for await _ in ioStates {
                    let isAssociated = manager.ioState(of: actor.objectId).hasAssociations
                    if wasAssociated && !isAssociated {
                        self.enterSafeState(of: output.ioActorId, label: label, logger: logger, reason: "\(actor.name) lost its association")
                    }
                    wasAssociated = isAssociated
                }
            }
        }
    }

    /// Applies the thresholds of an output whose hysteresis reads shared objects, whenever their data changes. While
    /// an object's host is away the last values stay in force; a deleted object's values give way to the defaults.
    private func follow(
        _ thresholds: SharedHysteresis, of output: OutputDevice, actor: IoActor, sharedObjects: SharedObjects, logger: Logger
    ) async {
        let label = "GPIO output \(output.line)"
        await withDiscardingTaskGroup { group in
            for name in thresholds.sharedObjectNames.sorted() {
                group.addTask {
                    for await data in sharedObjects.data(of: name) {
                        guard let (on, off) = self.state.withLock({ state in
                            state.sharedData[name] = data
                            return thresholds.thresholds(state.sharedData)
                        }) else { continue }
                        guard let hysteresis = thresholds.hysteresis(on: on, off: off) else {
                            logger.warning("\(label) (\(actor.name)) keeps its thresholds: on \(on) and off \(off) from shared objects leave no band")
                            continue
                        }
                        self.retune(output.ioActorId, to: hysteresis, label: label, actor: actor, logger: logger)
                    }
                }
            }
        }
    }

    private func retune(_ actorId: String, to hysteresis: Hysteresis, label: String, actor: IoActor, logger: Logger) {
        let (outcome, previous) = state.withLock { state -> (OutputOutcome?, Hysteresis?) in
            let previous = state.outputs[actorId]?.logic.hysteresis
            return (state.outputs[actorId]?.retune(hysteresis), previous)
        }
        if previous != hysteresis {
            logger.info("\(label) (\(actor.name)) thresholds now on \(hysteresis.on), off \(hysteresis.off)")
        }
        switch outcome {
        case .switched(let on)?:
            logger.info("\(label) (\(actor.name)) switched \(on ? "on" : "off") by new thresholds")
        case .failed(let error)?:
            logger.error("\(label) (\(actor.name)) failed to switch: \(error)")
            setHealth(of: label, error: error.description)
        case .rejected?, .unchanged?, nil:
            break
        }
    }

    private func apply(_ value: JSONValue, to actorId: String, label: String, actor: IoActor, logger: Logger) {
        let outcome = state.withLock { state -> OutputOutcome? in state.outputs[actorId]?.receive(value) }
        switch outcome {
        case .switched(let on)?:
            logger.info("\(label) (\(actor.name)) switched \(on ? "on" : "off") by \(value)")
        case .rejected(let rejected)?:
            logger.warning("\(label) (\(actor.name)) ignored \(rejected): not a value it understands")
        case .failed(let error)?:
            logger.error("\(label) (\(actor.name)) failed to switch: \(error)")
            setHealth(of: label, error: error.description)
        case .unchanged?, nil:
            break
        }
    }

    private func enterSafeState(of actorId: String, label: String, logger: Logger, reason: String) {
        let outcome = state.withLock { state -> OutputOutcome? in state.outputs[actorId]?.enterSafeState() }
        if case .switched(let on)? = outcome {
            logger.notice("\(label) to its safe state (\(on ? "on" : "off")): \(reason)")
        }
    }

    private func enterSafeState(_ logger: Logger, reason: String) {
        for output in devices.outputs {
            enterSafeState(of: output.ioActorId, label: "GPIO output \(output.line)", logger: logger, reason: reason)
        }
    }

    // MARK: - Inputs

    private func watch(_ device: InputDevice, logger: Logger) async {
        let label = "GPIO input \(device.line)"
        let backoff = Backoff(minimum: .seconds(1), maximum: .seconds(30))
        var failures = 0
        while !Task.isCancelled {
            do {
                let input = try GPIOInput(
                    chip: device.line.chipPath, line: device.line.offset, activeLow: device.activeLow,
                    debounceWindow: device.debounce)
                setHealth(of: label, error: nil)
                failures = 0
                for try await value in InputValues(input: input, mapping: device.mapping) {
                    try publish(value, from: device.ioSourceId)
                }
            } catch {
                guard !Task.isCancelled else { return }
                forgetLatest(of: [device.ioSourceId])
                failures += 1
                logger.error("\(label) fails, retrying: \(error)")
                setHealth(of: label, error: "\(error)")
                try? await Task.sleep(for: backoff.delay(afterFailures: failures))
            }
        }
    }

    // MARK: - Values

    /// Hands a device's value to the source controller and keeps it as the source's latest. Under the lock, so that a
    /// value sent on association can never overtake a newer reading.
    private func publish(_ value: JSONValue, from sourceId: String) throws(CoatyError) {
        try latest.withLock { latest throws(CoatyError) in
            let isSent = try sources.publish(.json(value), from: sourceId)
            latest[sourceId] = LatestValue(value: value, isSent: isSent)
        }
    }

    private func forgetLatest(of sourceIds: [String]) {
        latest.withLock { latest in
            for id in sourceIds { latest[id] = nil }
        }
    }

    /// Each time `source` becomes associated, publishes its latest value unless a reading went out since. The source
    /// controller has applied the association when its stream reports it, so the value is not dropped again.
    private func publishMissedValues(of source: IoSource, logger: Logger) async {
        for await isAssociated in sources.associations(of: source) {
            do {
                try latest.withLock { latest throws(CoatyError) in
                    guard var entry = latest[source.objectId] else { return }
                    if !isAssociated {
                        entry.isSent = false
                    } else if !entry.isSent {
                        entry.isSent = try sources.publish(.json(entry.value), from: source.objectId)
                    }
                    latest[source.objectId] = entry
                }
            } catch {
                logger.error("cannot publish the latest value of \(source.name): \(error)")
            }
        }
    }

    // MARK: - Status

    private func setHealth(of label: String, error: String?) {
        state.withLock { state in
            guard let index = state.health.firstIndex(where: { $0.label == label }), state.health[index].error != error
            else { return }
            state.health[index].error = error
            state.statusChanges?.yield()
        }
    }

    private func statusObject(of manager: CommunicationManager) -> CoatyObject {
        let (objectId, health) = state.withLock { ($0.statusObjectId, $0.health) }
        var object = CoatyObject(
            coreType: .coatyObject, objectType: Self.statusObjectType, objectId: objectId, name: "\(manager.identity.name) devices")
        object.parentObjectId = manager.identity.objectId
        object["devices"] = .array(health.map { device in
            var entry: JSONObject = [
                "label": .string(device.label), "driver": .string(device.kind),
                "ioPoints": .array(device.ioPoints.map(JSONValue.string)),
                "state": .string(device.error == nil ? "ok" : "failing"),
            ]
            entry.set("error", ifPresent: device.error.map(JSONValue.string))
            return .object(entry)
        })
        return object
    }

    private func advertiseStatus(on changes: AsyncStream<Void>, manager: CommunicationManager, logger: Logger) async {
        try? await manager.publishAdvertise(AdvertiseEvent(object: statusObject(of: manager)))
        for await _ in changes {
            do {
                try await manager.publishAdvertise(AdvertiseEvent(object: statusObject(of: manager)))
            } catch {
                logger.error("cannot advertise the device status: \(error)")
            }
        }
    }
}
