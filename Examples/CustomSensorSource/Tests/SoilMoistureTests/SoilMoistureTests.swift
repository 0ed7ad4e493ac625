import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel
import CoatyRuntime
import CoatyTesting
import Foundation
import SoilMoisture
import Testing

/// The probe's readings reach an actor on another agent through a router, read on a manual clock.
@Suite struct SoilMoistureTests {
    let probeFile = FileManager.default.temporaryDirectory.appending(path: "soil-probe-\(UUID().uuidString)").path
    let clock = ManualClock()
    let interval = Duration.seconds(10)

    func writeProbe(_ text: String) throws {
        try text.write(toFile: probeFile, atomically: true, encoding: .utf8)
    }

    @Test func readingsReachTheActor() async throws {
        defer { try? FileManager.default.removeItem(atPath: probeFile) }
        try writeProbe("523\n")
        let broker = InMemoryBroker()
        let source = SoilMoistureSource<ManualClock>.makeSource(name: "bed 1")
        let sources = IoSourceController()
        let probe = SoilMoistureSource(
            source: source, probe: FileSoilProbe(path: probeFile), sources: sources, interval: interval, clock: clock)
        let field = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "field"),
                ioNodes: [IoNodeDefinition(contextName: "garden", ioSources: [source])]),
            controllers: [("Sources", sources), ("Probe", probe)], makeTransport: { broker.makeTransport() })

        let actor = IoActor(name: "display", valueType: SoilMoistureSource<ManualClock>.valueType)
        let actors = IoActorController()
        let display = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "display"),
                ioNodes: [IoNodeDefinition(contextName: "garden", ioActors: [actor])]),
            controllers: [("Actors", actors), ("Router", IoRouter(context: IoContext(name: "garden")))],
            makeTransport: { broker.makeTransport() })
        let values = Recorder(actors.values(of: actor))
        field.start()
        display.start()
        try await poll { sources.isAssociated(source) && actors.isAssociated(actor) }

        try await readUntil(values) { $0 == 52.3 }
        // A reading the probe's driver garbled is skipped; the next good one arrives.
        try writeProbe("garbage")
        let before = values.elements.count
        for _ in 1...3 { try await tick() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(values.elements.count == before)
        try writeProbe("700")
        try await readUntil(values) { $0 == 70 }

        await display.shutdown()
        await field.shutdown()
    }

    @Test func theProbeRefusesWhatIsNotPerMille() throws {
        defer { try? FileManager.default.removeItem(atPath: probeFile) }
        try writeProbe("1001")
        #expect(throws: SoilProbeError.self) { try FileSoilProbe(path: probeFile).readPercent() }
        try writeProbe("0")
        #expect(try FileSoilProbe(path: probeFile).readPercent() == 0)
    }

    /// Lets the sampling loop's sleep end once it sleeps.
    func tick() async throws {
        try await poll { clock.sleeperCount == 1 }
        clock.advance(by: interval)
    }

    /// Advances the clock one interval at a time until the actor received a reading `matching`.
    func readUntil(_ values: Recorder<IoValue>, _ matching: @escaping @Sendable (Double) -> Bool) async throws {
        let received: @Sendable ([IoValue]) -> Bool = { values in
            values.contains { value in
                guard case .json(let json) = value, let percent = json["percent"]?.numberValue else { return false }
                return matching(percent)
            }
        }
        for _ in 1...50 {
            if received(values.elements) { return }
            try await tick()
            _ = try? await values.wait(within: .milliseconds(200), until: received)
        }
        Issue.record("no matching reading in \(values.elements)")
    }
}
