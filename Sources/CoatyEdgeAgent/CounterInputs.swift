import CoatyJSON
import EdgeHardware
import Logging
import Synchronization

/// The agent's pulse counters: each counts a GPIO line's edges (`GPIOPulseCounter`) and publishes, every
/// `publishInterval` when they changed, its total, its rate over the window and its scaled quantity.
///
/// With a `stateFile` the total goes on from the stored one after a restart, and it is stored (atomically) before it
/// is published, so that no total once published is ever followed by a smaller one, crash or not. A state file that
/// exists but cannot be read stops the counter (the device status says why) instead of starting again from zero.
final class CounterInputs: Sendable {
    typealias Instant = ContinuousClock.Instant

    private let devices: [CounterDevice]
    private let status: DeviceStatus
    private let publish: @Sendable (JSONValue, String) -> Void
    private let clock = ContinuousClock()

    init(devices: [CounterDevice], status: DeviceStatus, publish: @escaping @Sendable (JSONValue, String) -> Void) {
        self.devices = devices
        self.status = status
        self.publish = publish
    }

    var statusEntries: [DeviceStatus.Entry] {
        devices.map { DeviceStatus.Entry(label: $0.label, kind: "pulse-counter", ioPoints: $0.sourceIds) }
    }

    func run(logger: Logger) async {
        await withDiscardingTaskGroup { group in
            for device in devices {
                group.addTask { await self.count(device, logger: logger) }
            }
        }
    }

    private func count(_ device: CounterDevice, logger: Logger) async {
        let backoff = Backoff(minimum: .seconds(1), maximum: .seconds(30))
        let stateFile = device.stateFile.map(CounterStateFile.init(path:))
        var failures = 0
        // The total from before this start: the stored one, plus what earlier requests of the line counted.
        var base: UInt64 = 0
        while !Task.isCancelled {
            do throws(CounterStateFile.Failure) {
                base = try stateFile?.load() ?? 0
                break
            } catch {
                failures += 1
                if failures == 1 { logger.error("\(device.label) does not count: \(error)") }
                status.set(device.label, error: error.description)
                try? await Task.sleep(for: backoff.delay(afterFailures: failures))
            }
        }
        failures = 0
        var rate = PulseRate<Instant>(window: device.rateWindow, per: device.ratePer)
        var published = Published()
        var stored = base
        while !Task.isCancelled {
            let counter: GPIOPulseCounter
            do throws(GPIOError) {
                let line = try GPIOChips.resolve(device.line)
                counter = try GPIOPulseCounter(
                    chip: line.chipPath, line: line.offset, activeLow: device.activeLow, edge: device.edge,
                    debounce: device.debounce)
                if failures == 0 { logger.info("\(device.label) counts on \(line), from \(base)") }
            } catch {
                failures += 1
                if failures == 1 { logger.error("\(device.label) fails, retrying: \(error)") }
                status.set(device.label, error: error.description)
                try? await Task.sleep(for: backoff.delay(afterFailures: failures))
                continue
            }
            status.set(device.label, error: nil)
            failures = 0
            let lineFailure = LineFailure()
            await withDiscardingTaskGroup { group in
                group.addTask {
                    do throws(GPIOError) {
                        try await counter.count()
                    } catch {
                        lineFailure.error.withLock { $0 = error }
                    }
                }
                var next = clock.now
                while !Task.isCancelled, lineFailure.error.withLock({ $0 }) == nil {
                    let total = base + counter.total
                    if let stateFile, total != stored {
                        do throws(CounterStateFile.Failure) {
                            try stateFile.store(total)
                            stored = total
                        } catch {
                            // The total goes out only once stored, so that it never goes back after a restart.
                            logger.error("\(device.label) cannot store its total: \(error)")
                            status.set(device.label, error: error.description)
                        }
                    }
                    published.publish(
                        total: stateFile == nil || stored == total ? total : nil,
                        rate: rate.sample(total, at: clock.now),
                        of: device, with: publish)
                    next = next.advanced(by: device.publishInterval)
                    guard (try? await clock.sleep(until: next)) != nil else { break }
                }
                group.cancelAll()
            }
            base += counter.total
            if let stateFile, base != stored {
                do throws(CounterStateFile.Failure) {
                    try stateFile.store(base)
                    stored = base
                } catch {
                    logger.error("\(device.label) cannot store its total: \(error)")
                }
            }
            guard let lineFailure = lineFailure.error.withLock({ $0 }), !Task.isCancelled else { return }
            failures += 1
            logger.error("\(device.label) fails, retrying: \(lineFailure)")
            status.set(device.label, error: lineFailure.description)
            try? await Task.sleep(for: backoff.delay(afterFailures: failures))
        }
    }

    /// How the line failed while its counter counted, for the loop that publishes.
    private final class LineFailure: Sendable {
        let error = Mutex<GPIOError?>(nil)
    }

    /// What a counter published last, so that an unchanged value is not sent again.
    private struct Published {
        var total: UInt64?
        var rate: Double?

        mutating func publish(
            total: UInt64?, rate: Double?, of device: CounterDevice, with publish: @Sendable (JSONValue, String) -> Void
        ) {
            if let total, total != self.total {
                self.total = total
                if let source = device.totalSourceId { publish(.number(Double(total)), source) }
                if let source = device.quantitySourceId, let perUnit = device.pulsesPerUnit {
                    publish(.number(scaledQuantity(total, pulsesPerUnit: perUnit)), source)
                }
            }
            if let rate, let source = device.rateSourceId {
                // Three decimals: a window's rate is no more exact, and a steady rate then repeats exactly.
                let rounded = (rate * 1000).rounded() / 1000
                if rounded != self.rate {
                    self.rate = rounded
                    publish(.number(rounded), source)
                }
            }
        }
    }
}
