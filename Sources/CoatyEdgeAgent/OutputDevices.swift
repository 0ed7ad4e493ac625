import CoatyCommunication
import CoatyIORouting
import CoatyHomeAssistant
import CoatyJSON
import CoatyModel
import CoatySharedObjects
import EdgeHardware
import Logging
import Metrics
import Synchronization

/// The agent's GPIO outputs, driven from the values routed to their IoActors, with their switching rules and their
/// safe state.
///
/// Every change of a line goes through one lock, with its log line, so the log shows the switches in the order
/// they happened. Once the agent stops (`enterSafeStateForStop`), the outputs take their safe state, last: no routed
/// value, hysteresis follow-up, shared threshold or held-back switch moves them afterwards. A switch that comes
/// before the output's `minOnTime` or `minOffTime` has passed is held back, counted and logged (with a budget); when
/// the minimum has passed, the state last asked for is applied. The safe state ignores the minimums.
final class OutputDevices: Sendable {
    private let devices: [OutputDevice]
    private let actors: IoActorController
    private let status: DeviceStatus
    /// The real state of each line after every change, for the plain MQTT topics and Home Assistant.
    private let feed: PointFeed
    private let clock = ContinuousClock()
    private let state = Mutex(OutputLifecycle.Outputs<Output>())

    /// One requested line, by its actor's objectId.
    private struct Output {
        let wiring: Wiring
        var driver: OutputDriver<ContinuousClock.Instant>
        /// When a held-back switch may happen; the output's task applies it then.
        var holdEnds: AsyncStream<ContinuousClock.Instant>.Continuation
    }

    /// What stays the same for an output while the agent runs.
    private struct Wiring: Sendable {
        var device: OutputDevice
        var actor: IoActor
        var label: String
        var logger: Logger
        let suppressed: Counter
        let suppressionLog = LogBudget()

        var name: String { "\(label) (\(actor.name))" }
    }

    init(devices: [OutputDevice], actors: IoActorController, status: DeviceStatus, feed: PointFeed) {
        self.devices = devices
        self.feed = feed
        self.actors = actors
        self.status = status
    }

    var statusEntries: [DeviceStatus.Entry] {
        devices.map { DeviceStatus.Entry(label: Self.label(of: $0), kind: "gpio-output", ioPoints: [$0.ioActorId]) }
    }

    private static func label(of device: OutputDevice) -> String { "GPIO output \(device.line)" }

    /// Drives the outputs until cancelled.
    func run(
        actors actorsById: [String: IoActor], manager: CommunicationManager, sharedObjects: SharedObjects,
        logger: Logger
    ) async {
        // The lines stay requested after a stop, holding their safe state until the process ends.
        defer { state.withLock { $0.endRun() } }
        await withDiscardingTaskGroup { group in
            for device in devices {
                guard let actor = actorsById[device.ioActorId] else { continue }
                let wiring = Wiring(
                    device: device, actor: actor, label: Self.label(of: device), logger: logger,
                    suppressed: Counter(
                        label: "coaty_edge_output_switches_suppressed_total", dimensions: [("actor", actor.objectId)]))
                group.addTask { await self.drive(wiring, manager: manager) }
                if case .sharedHysteresis(let thresholds) = device.control {
                    group.addTask { await self.follow(thresholds, of: wiring, sharedObjects: sharedObjects) }
                }
            }
        }
    }

    // MARK: - Driving

    private func drive(_ wiring: Wiring, manager: CommunicationManager) async {
        let device = wiring.device
        let (holdEnds, holdEndsContinuation) = AsyncStream.makeStream(
            of: ContinuousClock.Instant.self, bufferingPolicy: .bufferingNewest(1))
        let opening = await OutputLifecycle.open(
            wiring.label, for: wiring.actor, verb: "request", logger: wiring.logger, status: status
        ) {
            let resolved = try GPIOChips.resolve(device.line)
            let line = try GPIOOutput(
                chip: resolved.chipPath, line: resolved.offset, activeLow: device.activeLow,
                initiallyActive: device.initial)
            if !GPIOChips.isDeviceName(device.line.chip) || device.line.offset == nil {
                wiring.logger.info("\(wiring.label) is \(resolved)")
            }
            var driver = try OutputDriver(line: line, logic: device.logic, limits: device.limits, at: clock.now)
            let isStopping = state.withLock { state in
                // Shared thresholds that arrived while the line was being requested.
                if case .sharedHysteresis(let thresholds) = device.control,
                    let hysteresis = thresholds.hysteresis(state.sharedData)
                {
                    _ = driver.retune(hysteresis, at: clock.now)
                }
                if let line = driver.lineState { feed.send(.bool(line), of: device.ioActorId) }
                return state.add(
                    Output(wiring: wiring, driver: driver, holdEnds: holdEndsContinuation), for: device.ioActorId)
            }
            status.set(wiring.label, error: nil)
            return isStopping
        }
        switch opening {
        case .cancelled:
            return
        case .stopping:
            // A stop that came while the line was being requested found no output to put in its safe state.
            state.withLock { $0.enterSafeState(device.ioActorId) { enterSafeState(&$0, reason: "the agent stops") } }
            return
        case .running:
            break
        }
        await OutputLifecycle.follow(
            wiring.actor, actors: actors, manager: manager, wakeups: holdEnds,
            receive: { json in self.change(wiring, by: "\(json)") { driver, now in driver.receive(json, at: now) } },
            wake: {
                let pulseEnded = self.state.withLock { state in
                    state.byActor[device.ioActorId]?.driver.pulseDeadline.map { $0 <= self.clock.now } ?? false
                }
                self.change(
                    wiring, by: pulseEnded ? "the end of its pulse" : "the state last asked for, after its minimum time"
                ) {
                    driver, now in driver.settle(at: now)
                }
            },
            lost: {
                self.state.withLock { state in
                    guard var output = state.running(device.ioActorId) else { return }
                    self.enterSafeState(&output, reason: "\(wiring.actor.name) lost its association")
                    state.update(output, for: device.ioActorId)
                }
            })
    }

    /// Hands a value to an output as if it had been routed to its actor (a command from Home Assistant or a `/set`
    /// topic): the same hysteresis, minimum times and stop rules apply. False when the output's line is not
    /// requested (no such output, or its line failed).
    func command(_ value: JSONValue, toOutput actorId: String, origin: String) -> Bool {
        guard let wiring = state.withLock({ $0.byActor[actorId]?.wiring }) else { return false }
        change(wiring, by: "\(value) from \(origin)") { driver, now in driver.receive(value, at: now) }
        return true
    }

    /// Applies the thresholds of an output whose hysteresis reads shared objects, whenever their data changes. While
    /// an object's host is away the last values stay in force; a deleted object's values give way to the defaults.
    private func follow(_ thresholds: SharedHysteresis, of wiring: Wiring, sharedObjects: SharedObjects) async {
        await withDiscardingTaskGroup { group in
            for name in thresholds.sharedObjectNames.sorted() {
                group.addTask {
                    for await data in sharedObjects.data(of: name) {
                        guard
                            let (on, off) = self.state.withLock({ state in
                                state.sharedData[name] = data
                                return thresholds.thresholds(state.sharedData)
                            })
                        else { continue }
                        guard let hysteresis = thresholds.hysteresis(on: on, off: off) else {
                            wiring.logger.warning(
                                "\(wiring.name) keeps its thresholds: on \(on) and off \(off) from shared objects leave no band"
                            )
                            continue
                        }
                        self.change(wiring, by: "new thresholds") { driver, now in
                            if driver.logic.hysteresis != hysteresis {
                                wiring.logger.info(
                                    "\(wiring.name) thresholds now on \(hysteresis.on), off \(hysteresis.off)")
                            }
                            return driver.retune(hysteresis, at: now)
                        }
                    }
                }
            }
        }
    }

    /// Makes one change to an output's driver and logs what it did, under the lock; nothing changes once the agent
    /// stops. The log line is written under the lock too, so that the log has the switches in their order.
    private func change(
        _ wiring: Wiring, by cause: @autoclosure () -> String,
        _ body: (inout OutputDriver<ContinuousClock.Instant>, ContinuousClock.Instant) -> OutputOutcome
    ) {
        let actorId = wiring.device.ioActorId
        state.withLock { state in
            guard var output = state.running(actorId) else { return }
            let now = clock.now
            let outcome = body(&output.driver, now)
            state.update(output, for: actorId)
            // The output's task wakes at the earliest of a held-back switch and the end of a pulse, and asks again.
            if case .suppressed(_, let remaining) = outcome {
                output.holdEnds.yield(
                    min(now.advanced(by: remaining), output.driver.pulseDeadline ?? now.advanced(by: remaining)))
            } else if let pulseEnds = output.driver.pulseDeadline {
                output.holdEnds.yield(pulseEnds)
            }
            if let line = output.driver.lineState { feed.send(.bool(line), of: actorId) }
            switch outcome {
            case .switched(let on):
                wiring.logger.info("\(wiring.name) switched \(on ? "on" : "off") by \(cause())")
            case .suppressed(let on, let remaining):
                wiring.suppressed.increment()
                if case .log(let suppressedBefore) = wiring.suppressionLog.admit() {
                    if suppressedBefore > 0 {
                        wiring.logger.notice(
                            "\(suppressedBefore) more switches of \(wiring.name) were held back without a log line")
                    }
                    let limit = on ? "minOffTime" : "minOnTime"
                    wiring.logger.notice(
                        "\(wiring.name) held back a switch \(on ? "on" : "off") by \(cause()) for \(Self.seconds(remaining)) (\(limit)); it takes the state last asked for then"
                    )
                }
            case .rejected(let rejected):
                wiring.logger.warning("\(wiring.name) ignored \(rejected): not a value it understands")
            case .failed(let error):
                wiring.logger.error("\(wiring.name) failed to switch: \(error)")
                status.set(wiring.label, error: error.description)
            case .unchanged:
                break
            }
        }
    }

    /// A wait as the log shows it, in seconds with one decimal: "0.9s", "41.0s".
    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = seconds * 10 + (attoseconds + 99_999_999_999_999_999) / 100_000_000_000_000_000
        return "\(tenths / 10).\(tenths % 10)s"
    }

    // MARK: - Safe state

    /// Puts every output in its safe state, whatever its minimum times, and keeps it there: nothing switches an
    /// output afterwards. Each output logs its safe state, also when its line had it already.
    func enterSafeStateForStop() {
        state.withLock { state in
            state.stop(devices.map(\.ioActorId)) { enterSafeState(&$0, reason: "the agent stops") }
        }
    }

    /// Under the lock, through `OutputLifecycle.Outputs`.
    private func enterSafeState(_ output: inout Output, reason: String) {
        let wiring = output.wiring
        let outcome = output.driver.enterSafeState(at: clock.now)
        if let line = output.driver.lineState { feed.send(.bool(line), of: wiring.device.ioActorId) }
        let safeState = output.driver.logic.safeState
        switch outcome {
        case .switched(let on):
            wiring.logger.notice("\(wiring.label) to its safe state (\(on ? "on" : "off")): \(reason)")
        case .failed(let error):
            wiring.logger.error(
                "\(wiring.label) cannot go to its safe state (\(safeState.rawValue)): \(error); \(reason)")
            status.set(wiring.label, error: error.description)
        case .unchanged, .suppressed, .rejected:
            let line = output.driver.lineState.map { $0 ? "on" : "off" } ?? "unknown"
            wiring.logger.notice(
                safeState == .keep
                    ? "\(wiring.label) keeps its state (\(line)), its safe state: \(reason)"
                    : "\(wiring.label) in its safe state (\(line)) already: \(reason)")
        }
    }
}
