import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel
import CoatyRuntime

/// Reads a probe every `interval` while the agent is started and publishes each reading on an IO source
/// through coaty-edge's `IoSourceController`, which applies the source's backpressure strategy and publishes
/// only while a router has associated the source with an actor. A failed read is logged and skipped.
public final class SoilMoistureSource<C: Clock>: Controller where C.Duration == Duration {
    public static var valueType: String { "com.example.SoilMoisture[Percent]" }

    public let source: IoSource
    private let probe: any SoilProbe
    private let sources: IoSourceController<ContinuousClock>
    private let interval: Duration
    private let clock: C

    /// `sources` must be registered in the same container; `source` must be one of the agent's IO sources.
    public init(
        source: IoSource, probe: any SoilProbe, sources: IoSourceController<ContinuousClock>, interval: Duration,
        clock: C
    ) {
        self.source = source
        self.probe = probe
        self.sources = sources
        self.interval = interval
        self.clock = clock
    }

    /// An IO source of this value type, for the agent's IO node.
    public static func makeSource(name: String) -> IoSource {
        IoSource(name: name, valueType: valueType)
    }

    public func whileStarted(_ context: ControllerContext) async {
        while !Task.isCancelled {
            do {
                let percent = try probe.readPercent()
                try sources.publish(["percent": .number(percent)], from: source)
            } catch {
                context.logger.warning("soil moisture \(source.name): \(error)")
            }
            do {
                try await clock.sleep(for: interval)
            } catch {
                return
            }
        }
    }
}
