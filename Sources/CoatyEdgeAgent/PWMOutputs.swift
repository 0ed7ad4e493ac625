import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel
import CoatySharedObjects
import EdgeHardware
import Logging
import Synchronization

/// The agent's PWM outputs (fans, dimmers), driven from the values routed to their IoActors: a duty in percent, or a
/// temperature through a fan curve whose points may live in a shared object. Each output takes its safe duty when its
/// actor loses its association and, for good, when the agent stops. The duty each channel runs at is published by its
/// `dutySource`, if it has one.
///
/// Every change of a channel goes through one lock, with its log line, as `OutputDevices` does for GPIO lines; both
/// share the life of an output (`OutputLifecycle`).
final class PWMOutputs: Sendable {
    typealias Instant = ContinuousClock.Instant

    private let devices: [PWMOutputDevice]
    private let actors: IoActorController
    private let status: DeviceStatus
    private let sysfsRoot: String
    /// Publishes a duty from a `dutySource`.
    private let publishDuty: @Sendable (Double, String) -> Void
    private let clock = ContinuousClock()
    private let state = Mutex(OutputLifecycle.Outputs<Output>())

    private struct Output {
        let wiring: Wiring
        var driver: PWMOutputDriver<Instant>
        /// When the driver wants `advance` next (a kick-start ends, a slew steps).
        var wakeups: AsyncStream<Instant>.Continuation
    }

    private struct Wiring: Sendable {
        var device: PWMOutputDevice
        var actor: IoActor
        var logger: Logger

        var label: String { device.label }
        var name: String { "\(label) (\(actor.name))" }
    }

    init(
        devices: [PWMOutputDevice], actors: IoActorController, status: DeviceStatus, sysfsRoot: String,
        publishDuty: @escaping @Sendable (Double, String) -> Void
    ) {
        self.devices = devices
        self.actors = actors
        self.status = status
        self.sysfsRoot = sysfsRoot
        self.publishDuty = publishDuty
    }

    var statusEntries: [DeviceStatus.Entry] {
        devices.map { device in
            DeviceStatus.Entry(
                label: device.label, kind: "pwm-output",
                ioPoints: [device.ioActorId] + [device.dutySourceId].compactMap { $0 })
        }
    }

    /// Drives the outputs until cancelled.
    func run(
        actors actorsById: [String: IoActor], manager: CommunicationManager, sharedObjects: SharedObjects,
        logger: Logger
    ) async {
        defer { state.withLock { $0.endRun() } }
        await withDiscardingTaskGroup { group in
            for device in devices {
                guard let actor = actorsById[device.ioActorId] else { continue }
                let wiring = Wiring(device: device, actor: actor, logger: logger)
                group.addTask { await self.drive(wiring, manager: manager) }
                if case .curve(let curve) = device.control, case .shared(let object, let key, _) = curve.points {
                    group.addTask {
                        await self.follow(object: object, key: key, of: wiring, sharedObjects: sharedObjects)
                    }
                }
            }
        }
    }

    private func drive(_ wiring: Wiring, manager: CommunicationManager) async {
        let device = wiring.device
        let (wakeups, wakeupsContinuation) = AsyncStream.makeStream(
            of: Instant.self, bufferingPolicy: .bufferingNewest(1))
        let opening = await OutputLifecycle.open(
            wiring.label, for: wiring.actor, verb: "start", logger: wiring.logger, status: status
        ) {
            let channel = SysfsPWMChannel(sysfsRoot: sysfsRoot, chip: device.chip, channel: device.channel)
            var driver = try PWMOutputDriver<Instant>(
                channel: channel, settings: device.settings, control: device.control, at: clock.now)
            let isStopping = state.withLock { state in
                if case .curve(let curve) = device.control, case .shared(let object, let key, _) = curve.points,
                    let points = state.sharedData[object]?[key], let fanCurve = try? FanCurve(json: points)
                {
                    _ = driver.retune(fanCurve, at: clock.now)
                }
                return state.add(
                    Output(wiring: wiring, driver: driver, wakeups: wakeupsContinuation), for: device.ioActorId)
            }
            status.set(wiring.label, error: nil)
            wiring.logger.info(
                "\(wiring.name) runs at \(JSONValue.number(device.settings.frequency)) Hz, duty \(Self.percent(device.settings.initialDuty))"
            )
            if let source = device.dutySourceId { publishDuty(device.settings.initialDuty, source) }
            return isStopping
        }
        switch opening {
        case .cancelled:
            return
        case .stopping:
            state.withLock { $0.enterSafeState(device.ioActorId) { enterSafeState(&$0, reason: "the agent stops") } }
            return
        case .running:
            break
        }
        await OutputLifecycle.follow(
            wiring.actor, actors: actors, manager: manager, wakeups: wakeups,
            receive: { json in self.change(wiring, by: "\(json)") { driver, now in driver.receive(json, at: now) } },
            wake: { self.change(wiring, by: nil) { driver, now in driver.advance(at: now) } },
            lost: {
                self.state.withLock { state in
                    guard var output = state.running(device.ioActorId) else { return }
                    self.enterSafeState(&output, reason: "\(wiring.actor.name) lost its association")
                    state.update(output, for: device.ioActorId)
                }
            })
    }

    /// Applies the curve points of a shared object whenever they change; points that are not a valid curve are logged
    /// and the curve in force stays. A deleted object's points give way to the configured default.
    private func follow(object: String, key: String, of wiring: Wiring, sharedObjects: SharedObjects) async {
        for await data in sharedObjects.data(of: object) {
            state.withLock { $0.sharedData[object] = data }
            let curve: FanCurve
            if let points = data[key] {
                do {
                    curve = try FanCurve(json: points)
                } catch {
                    wiring.logger.warning(
                        "\(wiring.name) keeps its curve: \(object).\(key) is not a fan curve: \(error)")
                    continue
                }
            } else {
                guard case .curve(let settings) = wiring.device.control, let fallback = settings.initialCurve else {
                    continue
                }
                curve = fallback
            }
            change(wiring, by: "new curve points") { driver, now in
                if driver.follower?.curve != curve {
                    wiring.logger.info(
                        "\(wiring.name) curve now \(curve.points.map { "\(JSONValue.number($0.input)): \(Self.percent($0.duty))" }.joined(separator: ", "))"
                    )
                }
                return driver.retune(curve, at: now)
            }
        }
    }

    /// Makes one change to an output's driver under the lock and logs it; nothing changes once the agent stops. A nil
    /// cause is a step the driver asked for (a kick-start's end, a slew step), logged at debug level.
    private func change(
        _ wiring: Wiring, by cause: @autoclosure () -> String?,
        _ body: (inout PWMOutputDriver<Instant>, Instant) -> PWMOutputDriver<Instant>.Outcome
    ) {
        let actorId = wiring.device.ioActorId
        state.withLock { state in
            guard var output = state.running(actorId) else { return }
            let outcome = body(&output.driver, clock.now)
            state.update(output, for: actorId)
            if let next = outcome.next { output.wakeups.yield(next) }
            switch outcome {
            case .set(let duty, _):
                if let cause = cause() {
                    wiring.logger.info("\(wiring.name) duty \(Self.percent(duty)) by \(cause)")
                } else {
                    wiring.logger.debug("\(wiring.name) duty \(Self.percent(duty))")
                }
                if let source = wiring.device.dutySourceId { publishDuty(duty, source) }
                status.set(wiring.label, error: nil)
            case .rejected(let value, let reason):
                wiring.logger.warning("\(wiring.name) ignored \(value): \(reason)")
            case .failed(let error):
                wiring.logger.error("\(wiring.name) failed to set its duty: \(error)")
                status.set(wiring.label, error: error.description)
            case .unchanged:
                break
            }
        }
    }

    /// Puts every output at its safe duty and keeps it there.
    func enterSafeStateForStop() {
        state.withLock { state in
            state.stop(devices.map(\.ioActorId)) { enterSafeState(&$0, reason: "the agent stops") }
        }
    }

    /// Under the lock, through `OutputLifecycle.Outputs`.
    private func enterSafeState(_ output: inout Output, reason: String) {
        let wiring = output.wiring
        let outcome = output.driver.enterSafeState(at: clock.now)
        switch outcome {
        case .set(let duty, _):
            wiring.logger.notice("\(wiring.label) to its safe duty (\(Self.percent(duty))): \(reason)")
            if let source = wiring.device.dutySourceId { publishDuty(duty, source) }
        case .failed(let error):
            wiring.logger.error("\(wiring.label) cannot go to its safe duty: \(error); \(reason)")
            status.set(wiring.label, error: error.description)
        case .unchanged, .rejected:
            let duty = output.driver.applied.map(Self.percent) ?? "unknown"
            wiring.logger.notice(
                wiring.device.settings.safeDuty == nil
                    ? "\(wiring.label) keeps its duty (\(duty)), its safe state: \(reason)"
                    : "\(wiring.label) at its safe duty (\(duty)) already: \(reason)")
        }
    }

    /// A duty as the log shows it: "45%", "37.5%".
    static func percent(_ duty: Double) -> String {
        let rounded = (duty * 10).rounded() / 10
        return "\(JSONValue.number(rounded))%"
    }
}
