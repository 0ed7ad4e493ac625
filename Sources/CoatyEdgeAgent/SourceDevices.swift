import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyHomeAssistant
import CoatyModel
import EdgeHardware
import Logging
import Metrics
import Synchronization

/// The devices that feed IoSources: polls each sensor and watches each GPIO input, and publishes their values through
/// the IoSource controller (so the router's rate and the source's strategy apply). Devices that fail are retried with
/// backoff and recover by themselves.
final class SourceDevices: Sendable {
    private let devices: DeviceConfiguration
    private let sources: IoSourceController<ContinuousClock>
    private let status: DeviceStatus
    private let buses: I2CBusPool
    /// Every value, associated or not, for the plain MQTT topics and Home Assistant.
    private let feed: PointFeed
    /// The latest value of each source. A source's first reading comes before any router associated it and is
    /// dropped; a deadband then holds back readings that do not move (until the heartbeat, minutes later) and an
    /// input publishes only on a change, so a source that becomes associated sends its latest value, after
    /// `latestValueDelay`. Sources of a failing device have none: that value would be stale.
    private let latest = Mutex<[String: JSONValue]>([:])
    /// The sources with `useRawIoValues`: their values go out as the UTF-8 bytes of the value's JSON text (`21.5`,
    /// `true`), the same bytes a JSON source sends, so that raw actors (Coaty JS ones too) can take them. Set by `run`.
    private let rawSourceIds = Mutex<Set<String>>([])
    /// How long after an Associate a source sends its latest value. The actor reads the same Associate (the broker
    /// hands it to both at once) and subscribes to the route only then: a value sent at once reaches the broker
    /// before that subscription and is lost (Coaty JS actors missed it every time). The delay lets the actor's
    /// SUBSCRIBE reach the broker first: that takes a coaty-edge actor milliseconds and a Coaty JS actor one turn
    /// of its event loop, so a second leaves room for a busy Pi or a slow network. Readings made meanwhile go out
    /// as usual; the latest of them is sent once more, so an actor that subscribed in time may see it twice.
    static let latestValueDelay: Duration = .seconds(1)

    init(
        devices: DeviceConfiguration, sources: IoSourceController<ContinuousClock>, status: DeviceStatus, buses: I2CBusPool, feed: PointFeed
    ) {
        self.devices = devices
        self.feed = feed
        self.sources = sources
        self.status = status
        self.buses = buses
    }

    /// The entries of the sensors in the device status, in configuration order.
    var sensorStatusEntries: [DeviceStatus.Entry] {
        devices.sensors.map { sensor in
            DeviceStatus.Entry(
                label: sensor.makeSensor(buses: buses, sysfsRoot: devices.sysfsRoot).label, kind: sensor.driver.rawValue,
                ioPoints: sensor.sources.map(\.ioSourceId))
        }
    }

    /// The entries of the inputs in the device status, in configuration order.
    var inputStatusEntries: [DeviceStatus.Entry] {
        devices.inputs.map { DeviceStatus.Entry(label: "GPIO input \($0.line)", kind: "gpio-input", ioPoints: [$0.ioSourceId]) }
    }

    /// Polls, watches and publishes until cancelled.
    func run(sources sourcesById: [String: IoSource], logger: Logger) async {
        let deviceSourceIds = devices.sensors.flatMap(\.sources).map(\.ioSourceId) + devices.inputs.map(\.ioSourceId)
            + devices.counters.flatMap(\.sourceIds) + devices.pwmOutputs.compactMap(\.dutySourceId)
        rawSourceIds.withLock { $0 = Set(deviceSourceIds.filter { sourcesById[$0]?.useRawIoValues == true }) }
        // One timer for every sensor; sensors with the same interval are spread evenly over it.
        let scheduler = PollScheduler(clock: ContinuousClock())
        let sensorCounts = Dictionary(devices.sensors.map { ($0.pollInterval, 1) }, uniquingKeysWith: +)
        var sensorIndices: [Duration: Int] = [:]
        await withDiscardingTaskGroup { group in
            if !devices.sensors.isEmpty { group.addTask { await scheduler.run() } }
            for device in devices.sensors {
                let index = sensorIndices[device.pollInterval, default: 0]
                sensorIndices[device.pollInterval] = index + 1
                let phase = PollScheduler<ContinuousClock>.phase(
                    of: index, among: sensorCounts[device.pollInterval] ?? 1, interval: device.pollInterval)
                group.addTask { await self.poll(device, scheduler: scheduler, phase: phase, logger: logger) }
            }
            for input in devices.inputs {
                group.addTask { await self.watch(input, logger: logger) }
            }
            for source in deviceSourceIds.compactMap({ sourcesById[$0] }) {
                group.addTask { await self.publishLatestValue(of: source, logger: logger) }
            }
        }
    }

    // MARK: - Sensors

    private func poll(_ device: SensorDevice, scheduler: PollScheduler<ContinuousClock>, phase: Duration, logger: Logger) async {
        let sensor = device.makeSensor(buses: buses, sysfsRoot: devices.sysfsRoot)
        let poller = SensorPoller(
            sensor: sensor, interval: device.pollInterval, backoff: device.retry, pipelines: device.pipelines,
            scheduler: scheduler, phase: phase)
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
                status.set(sensor.label, error: error.description)
            case .recovered(let attempts):
                logger.notice("\(sensor.label) answers again after \(attempts) failed reads")
                status.set(sensor.label, error: nil)
            }
        }
    }

    // MARK: - Inputs

    private func watch(_ device: InputDevice, logger: Logger) async {
        let label = "GPIO input \(device.line)"
        let backoff = Backoff(minimum: .seconds(1), maximum: .seconds(30))
        var failures = 0
        while !Task.isCancelled {
            do {
                let line = try GPIOChips.resolve(device.line)
                let input = try GPIOInput(
                    chip: line.chipPath, line: line.offset, activeLow: device.activeLow, debounceWindow: device.debounce)
                status.set(label, error: nil)
                failures = 0
                for try await value in InputValues(input: input, mapping: device.mapping) {
                    try publish(value, from: device.ioSourceId)
                }
            } catch {
                guard !Task.isCancelled else { return }
                forgetLatest(of: [device.ioSourceId])
                failures += 1
                logger.error("\(label) fails, retrying: \(error)")
                status.set(label, error: "\(error)")
                try? await Task.sleep(for: backoff.delay(afterFailures: failures))
            }
        }
    }

    // MARK: - Values

    /// Hands a device's value to the source controller and keeps it as the source's latest. Under the lock, so that a
    /// value sent on association can never overtake a newer reading. Counters and PWM outputs publish through it too.
    func publish(_ value: JSONValue, from sourceId: String) throws(CoatyError) {
        feed.send(value, of: sourceId)
        try latest.withLock { latest throws(CoatyError) in
            try sources.publish(ioValue(value, from: sourceId), from: sourceId)
            latest[sourceId] = value
        }
    }

    private func ioValue(_ value: JSONValue, from sourceId: String) -> IoValue {
        rawSourceIds.withLock { $0.contains(sourceId) } ? .raw(value.serializedBytes()) : .json(value)
    }

    private func forgetLatest(of sourceIds: [String]) {
        latest.withLock { latest in
            for id in sourceIds { latest[id] = nil }
        }
    }

    /// `latestValueDelay` after each Associate that leaves `source` associated (a later one starts the wait again),
    /// publishes its latest value if it still is associated.
    private func publishLatestValue(of source: IoSource, logger: Logger) async {
        var pending: Task<Void, Never>?
        defer { pending?.cancel() }
        for await count in sources.associates(of: source) where count > 0 {
            pending?.cancel()
            // Cancelled by the next Associate, and when this task ends.
            pending = Task {
                guard (try? await Task.sleep(for: Self.latestValueDelay)) != nil, sources.isAssociated(source) else { return }
                do {
                    try latest.withLock { latest throws(CoatyError) in
                        guard let value = latest[source.objectId] else { return }
                        try sources.publish(ioValue(value, from: source.objectId), from: source.objectId)
                    }
                } catch {
                    logger.error("cannot publish the latest value of \(source.name): \(error)")
                }
            }
        }
    }
}
