import CoatyCommunication
import CoatyHomeAssistant
import CoatyIORouting
import CoatyJSON
import CoatyRuntime
import EdgeHardware
import Logging

/// Runs the agent's devices, each job in a part of its own: the sensors and inputs that feed IoSources
/// (`SourceDevices`), the outputs driven by IoActors with their switching rules and safe state (`OutputDevices`), and
/// the device status every agent can see (`DeviceStatus`).
final class DeviceController: Controller, PointHost {
    private let emulation: DeviceEmulation?
    private let status = DeviceStatus()
    private let sourceDevices: SourceDevices
    private let outputs: OutputDevices
    private let pwmOutputs: PWMOutputs
    private let counters: CounterInputs
    let feed: PointFeed

    /// `feedsBridge`: whether a bridge reads the devices' values (`feed`); without one the feed takes none.
    init(
        devices: DeviceConfiguration, sources: IoSourceController<ContinuousClock>, actors: IoActorController,
        feedsBridge: Bool
    ) throws {
        let feed = PointFeed(isRead: feedsBridge)
        self.feed = feed
        var devices = devices
        if devices.emulated {
            let emulation = try DeviceEmulation(devices)
            self.emulation = emulation
            devices.sysfsRoot = emulation.sysfsRoot
        } else {
            emulation = nil
        }
        let sourceDevices = SourceDevices(
            devices: devices, sources: sources, status: status, buses: I2CBusPool(), feed: feed)
        self.sourceDevices = sourceDevices
        outputs = OutputDevices(devices: devices.outputs, actors: actors, status: status, feed: feed)
        let publish: @Sendable (JSONValue, String) -> Void = { value, sourceId in
            // A source that is not associated yet drops the value; it is kept as the source's latest all the same.
            try? sourceDevices.publish(value, from: sourceId)
        }
        pwmOutputs = PWMOutputs(
            devices: devices.pwmOutputs, actors: actors, status: status, sysfsRoot: devices.sysfsRoot,
            publishDuty: { duty, sourceId in publish(.number(duty), sourceId) })
        counters = CounterInputs(devices: devices.counters, status: status, publish: publish)
    }

    func whileStarted(_ context: ControllerContext) async {
        let manager = context.communicationManager
        let actorsById = Dictionary(
            manager.ioNodeDefinitions.flatMap(\.ioActors).map { ($0.objectId, $0) },
            uniquingKeysWith: { first, _ in first })
        let sourcesById = Dictionary(
            manager.ioNodeDefinitions.flatMap(\.ioSources).map { ($0.objectId, $0) },
            uniquingKeysWith: { first, _ in first })
        status.reset(
            sourceDevices.sensorStatusEntries + outputs.statusEntries + pwmOutputs.statusEntries
                + sourceDevices.inputStatusEntries
                + counters.statusEntries)
        await withDiscardingTaskGroup { group in
            if let emulation {
                group.addTask { await emulation.simulate() }
                group.addTask { await emulation.recordOutputLevels() }
            }
            group.addTask { await self.sourceDevices.run(sources: sourcesById, logger: context.logger) }
            group.addTask {
                await self.outputs.run(
                    actors: actorsById, manager: manager, sharedObjects: context.sharedObjects, logger: context.logger)
            }
            group.addTask {
                await self.pwmOutputs.run(
                    actors: actorsById, manager: manager, sharedObjects: context.sharedObjects, logger: context.logger)
            }
            group.addTask { await self.counters.run(logger: context.logger) }
            group.addTask { await self.status.publish(on: manager, logger: context.logger) }
        }
    }

    func command(_ value: JSONValue, toOutput ioActorId: String, origin: String) -> Bool {
        outputs.command(value, toOutput: ioActorId, origin: origin)
    }

    /// Outputs go to their safe state, and stay there, before the agent leaves.
    func onStopping(_ context: ControllerContext) async {
        outputs.enterSafeStateForStop()
        pwmOutputs.enterSafeStateForStop()
    }

    func onDispose(_ context: ControllerContext) async {
        emulation?.removeFiles()
    }
}
