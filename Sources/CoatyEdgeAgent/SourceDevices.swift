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
    /// The sensor of each of `devices.sensors`, made once: a sensor's label can take a read (a thermal zone's
    /// `type`), and the device status needs the labels before the polling starts.
    private let sensors: [any Sensor]
    /// Every value, associated or not, for the plain MQTT topics and Home Assistant.
    private let feed: PointFeed
    /// The IoSource objectIds the devices publish on, each once, in configuration order: the index of one is its
    /// slot in `published`.
    private let sourceIds: [String]
    /// The slot of each of `sourceIds`. Sensors find theirs once, so that a value of theirs is looked up by text
    /// only where the MQTT route and the Home Assistant feed are.
    private let slots: [String: Int]
    private let published: Mutex<PublishedSources>
    /// How long after an Associate a source sends its latest value. The actor reads the same Associate (the broker
    /// hands it to both at once) and subscribes to the route only then: a value sent at once reaches the broker
    /// before that subscription and is lost (Coaty JS actors missed it every time). The delay lets the actor's
    /// SUBSCRIBE reach the broker first: that takes a coaty-edge actor milliseconds and a Coaty JS actor one turn
    /// of its event loop, so a second leaves room for a busy Pi or a slow network. Readings made meanwhile go out
    /// as usual; the latest of them is sent once more, so an actor that subscribed in time may see it twice.
    static let latestValueDelay: Duration = .seconds(1)

    init(
        devices: DeviceConfiguration, sources: IoSourceController<ContinuousClock>, status: DeviceStatus,
        buses: I2CBusPool, feed: PointFeed
    ) {
        self.devices = devices
        self.feed = feed
        self.sources = sources
        self.status = status
        sensors = devices.sensors.map { $0.makeSensor(buses: buses, sysfsRoot: devices.sysfsRoot) }
        var sourceIds: [String] = []
        var slots: [String: Int] = [:]
        let deviceSourceIds =
            devices.sensors.flatMap(\.sources).map(\.ioSourceId) + devices.inputs.map(\.ioSourceId)
            + devices.counters.flatMap(\.sourceIds) + devices.pwmOutputs.compactMap(\.dutySourceId)
        for id in deviceSourceIds where slots[id] == nil {
            slots[id] = sourceIds.count
            sourceIds.append(id)
        }
        self.sourceIds = sourceIds
        self.slots = slots
        published = Mutex(PublishedSources(count: sourceIds.count))
    }

    /// Per slot (`slots`), what publishing a source's values needs to keep.
    private struct PublishedSources {
        /// The latest value of each source. A source's first reading comes before any router associated it and is
        /// dropped; a deadband then holds back readings that do not move (until the heartbeat, minutes later) and an
        /// input publishes only on a change, so a source that becomes associated sends its latest value, after
        /// `latestValueDelay`. Sources of a failing device have none: that value would be stale.
        var latest: [JSONValue?]
        /// The source's handle at the IoSource controller, from its first value on. Its `isRaw` says whether values
        /// go out as the UTF-8 bytes of the value's JSON text (`21.5`, `true`), the same bytes a JSON source sends,
        /// so that raw actors (Coaty JS ones too) can take them.
        var handles: [IoSourceHandle?]

        init(count: Int) {
            latest = Array(repeating: nil, count: count)
            handles = Array(repeating: nil, count: count)
        }
    }

    /// The entries of the sensors in the device status, in configuration order.
    var sensorStatusEntries: [DeviceStatus.Entry] {
        zip(devices.sensors, sensors).map { device, sensor in
            DeviceStatus.Entry(
                label: sensor.label, kind: device.driver.rawValue, ioPoints: device.sources.map(\.ioSourceId))
        }
    }

    /// The entries of the inputs in the device status, in configuration order.
    var inputStatusEntries: [DeviceStatus.Entry] {
        devices.inputs.map {
            DeviceStatus.Entry(label: "GPIO input \($0.line)", kind: "gpio-input", ioPoints: [$0.ioSourceId])
        }
    }

    /// Polls, watches and publishes until cancelled.
    func run(sources sourcesById: [String: IoSource], logger: Logger) async {
        // Sensors with the same interval are spread evenly over it. Those whose reads never wait (sysfs attributes)
        // share one thread; each of the others (chips with conversion times, 1-Wire) has a task of its own, and they
        // share one timer.
        let counts = MetricsSystem.hasBackend
        let sensorCounts = Dictionary(devices.sensors.map { ($0.pollInterval, 1) }, uniquingKeysWith: +)
        var sensorIndices: [Duration: Int] = [:]
        var together: [SensorPollLoop.Entry] = []
        var togetherWirings: [SensorWiring] = []
        var alone: [(SensorDevice, any Sensor, Duration)] = []
        for (device, sensor) in zip(devices.sensors, sensors) {
            let index = sensorIndices[device.pollInterval, default: 0]
            sensorIndices[device.pollInterval] = index + 1
            let phase = PollScheduler<ContinuousClock>.phase(
                of: index, among: sensorCounts[device.pollInterval] ?? 1, interval: device.pollInterval)
            if let sensor = sensor as? any ImmediateSensor {
                together.append(
                    .init(
                        sensor: sensor, interval: device.pollInterval, backoff: device.retry,
                        pipelines: device.pipelines,
                        phase: phase))
                togetherWirings.append(SensorWiring(device, label: sensor.label, slots: slots, counts: counts))
            } else {
                alone.append((device, sensor, phase))
            }
        }
        let scheduler = PollScheduler(clock: ContinuousClock())
        await withDiscardingTaskGroup { [together, togetherWirings, alone] group in
            if !together.isEmpty {
                group.addTask {
                    await SensorPollLoop(together).runOnPollThread(
                        together: { delivery in self.sources.publishingTogether(delivery) }
                    ) { index, event in
                        self.handle(event, of: togetherWirings[index], logger: logger)
                    }
                }
            }
            if !alone.isEmpty { group.addTask { await scheduler.run() } }
            for (device, sensor, phase) in alone {
                group.addTask {
                    await self.poll(
                        device, sensor: sensor, scheduler: scheduler, phase: phase, counts: counts, logger: logger)
                }
            }
            for input in devices.inputs {
                group.addTask { await self.watch(input, logger: logger) }
            }
            let definedIds = Set(sourceIds.filter { sourcesById[$0] != nil })
            if !definedIds.isEmpty {
                group.addTask {
                    await self.publishLatestValues(of: definedIds, sourcesById: sourcesById, logger: logger)
                }
            }
        }
    }

    // MARK: - Sensors

    /// What a sensor's events go to: its sources by quantity, and its counters. A class: an event hands on one
    /// reference, not each of the fields.
    private final class SensorWiring: Sendable {
        let label: String
        /// The source (its slot) of each published quantity, with the counter of its readings.
        let sources: [(quantity: Quantity, slot: Int, read: Counter?)]
        /// Counts failures (a sensor that stops answering, or then fails for another reason), not the retries that
        /// fail alike.
        let errors: Counter?

        /// The counters are made only with a metrics backend (`MetricsSystem.hasBackend`): without one they cost
        /// about 300 bytes of heap per sensor and a cache miss per value, for nobody.
        init(_ device: SensorDevice, label: String, slots: [String: Int], counts: Bool) {
            self.label = label
            var sources: [(quantity: Quantity, slot: Int, read: Counter?)] = []
            for binding in device.sources where !sources.contains(where: { $0.quantity == binding.quantity }) {
                // Every device source has a slot (`init`).
                guard let slot = slots[binding.ioSourceId] else { continue }
                let read =
                    counts
                    ? Counter(label: "coaty_edge_values_read_total", dimensions: [("source", binding.ioSourceId)]) : nil
                sources.append((binding.quantity, slot, read))
            }
            self.sources = sources
            errors = counts ? Counter(label: "coaty_edge_sensor_errors_total", dimensions: [("sensor", label)]) : nil
        }
    }

    private func poll(
        _ device: SensorDevice, sensor: any Sensor, scheduler: PollScheduler<ContinuousClock>, phase: Duration,
        counts: Bool, logger: Logger
    ) async {
        let poller = SensorPoller(
            sensor: sensor, interval: device.pollInterval, backoff: device.retry, pipelines: device.pipelines,
            scheduler: scheduler, phase: phase)
        let wiring = SensorWiring(device, label: sensor.label, slots: slots, counts: counts)
        for await event in poller {
            handle(event, of: wiring, logger: logger)
        }
    }

    private func handle(_ event: SensorEvent, of wiring: SensorWiring, logger: Logger) {
        switch event {
        case .value(let quantity, let value):
            guard let source = wiring.sources.first(where: { $0.quantity == quantity }) else { return }
            source.read?.increment()
            do {
                try publish(.number(value), toSlot: source.slot)
            } catch {
                logger.error("cannot publish \(wiring.label) \(quantity.rawValue): \(error)")
            }
        case .failed(let error):
            wiring.errors?.increment()
            forgetLatest(ofSlots: wiring.sources.map(\.slot))
            logger.error("\(wiring.label) fails, retrying with backoff: \(error)")
            status.set(wiring.label, error: error.description)
        case .recovered(let attempts):
            logger.notice("\(wiring.label) answers again after \(attempts) failed reads")
            status.set(wiring.label, error: nil)
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
                    chip: line.chipPath, line: line.offset, activeLow: device.activeLow, debounceWindow: device.debounce
                )
                status.set(label, error: nil)
                failures = 0
                for try await value in InputValues(input: input, mapping: device.mapping) {
                    try publish(value, from: device.ioSourceId)
                }
            } catch {
                guard !Task.isCancelled else { return }
                forgetLatest(ofSlots: slots[device.ioSourceId].map { [$0] } ?? [])
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
        guard let slot = slots[sourceId] else { throw .unknownIoPoint(sourceId) }
        try publish(value, toSlot: slot)
    }

    private func publish(_ value: JSONValue, toSlot slot: Int) throws(CoatyError) {
        feed.send(value, of: sourceIds[slot])
        try published.withLock { published throws(CoatyError) in
            let handle = try sourceHandle(ofSlot: slot, in: &published)
            try sources.publish(ioValue(value, isRaw: handle.isRaw), from: handle)
            published.latest[slot] = value
        }
    }

    /// The controller's handle of the slot's source, found at its first value (the controller knows its sources
    /// once it was initialized).
    private func sourceHandle(ofSlot slot: Int, in published: inout PublishedSources) throws(CoatyError)
        -> IoSourceHandle
    {
        if let handle = published.handles[slot] { return handle }
        let handle = try sources.handle(of: sourceIds[slot])
        published.handles[slot] = handle
        return handle
    }

    private func ioValue(_ value: JSONValue, isRaw: Bool) -> IoValue {
        isRaw ? .raw(value.serializedBytes()) : .json(value)
    }

    private func forgetLatest(ofSlots slots: [Int]) {
        published.withLock { published in
            for slot in slots { published.latest[slot] = nil }
        }
    }

    /// `latestValueDelay` after each Associate that leaves one of `sourceIds` associated (a later one starts its wait
    /// again), publishes the source's latest value if it still is associated. One task for every source: the
    /// Associates come in one stream, and the waits, all equally long, end in the order they began.
    private func publishLatestValues(of sourceIds: Set<String>, sourcesById: [String: IoSource], logger: Logger) async {
        let resends = LatestValueResends()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await id in self.sources.associates() where sourceIds.contains(id) {
                    resends.add(id, due: ContinuousClock.now.advanced(by: Self.latestValueDelay))
                }
                resends.finish()
            }
            while let (id, due) = await resends.next() {
                guard (try? await Task.sleep(until: due, clock: .continuous)) != nil else { break }
                guard resends.take(id, due: due), let source = sourcesById[id], let slot = slots[id],
                    sources.isAssociated(source)
                else {
                    continue
                }
                do {
                    try published.withLock { published throws(CoatyError) in
                        guard let value = published.latest[slot] else { return }
                        let handle = try sourceHandle(ofSlot: slot, in: &published)
                        try sources.publish(ioValue(value, isRaw: handle.isRaw), from: handle)
                    }
                } catch {
                    logger.error("cannot publish the latest value of \(source.name): \(error)")
                }
            }
            group.cancelAll()
        }
    }
}

/// The latest-value resends waiting for their time, in the order they are due (they all wait equally long), and for
/// each source the deadline of its latest Associate: an earlier one of the same source is skipped when its turn comes.
private final class LatestValueResends: Sendable {
    private struct State {
        var queue: [(id: String, due: ContinuousClock.Instant)] = []
        var head = 0
        var latestDue: [String: ContinuousClock.Instant] = [:]
        var waiter: CheckedContinuation<(String, ContinuousClock.Instant)?, Never>?
        var isFinished = false
    }

    private let state = Mutex(State())

    func add(_ id: String, due: ContinuousClock.Instant) {
        let waiter = state.withLock { state in
            state.latestDue[id] = due
            guard let waiter = state.waiter else {
                state.queue.append((id, due))
                return nil as CheckedContinuation<(String, ContinuousClock.Instant)?, Never>?
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: (id, due))
    }

    func finish() {
        let waiter = state.withLock { state in
            state.isFinished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next resend in line, waiting for one if there is none; nil once finished or cancelled.
    func next() async -> (String, ContinuousClock.Instant)? {
        await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<(String, ContinuousClock.Instant)?, Never>) in
                let now: (String, ContinuousClock.Instant)?? = state.withLock { state in
                    if state.head < state.queue.count {
                        let next = state.queue[state.head]
                        state.head += 1
                        if state.head == state.queue.count || state.head >= 1024 && state.head * 2 >= state.queue.count
                        {
                            state.queue.removeFirst(state.head)
                            state.head = 0
                        }
                        return .some(next)
                    }
                    if state.isFinished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Whether the resend due at `due` is the latest of its source; it is no longer waited for then.
    func take(_ id: String, due: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            guard state.latestDue[id] == due else { return false }
            state.latestDue[id] = nil
            return true
        }
    }
}
