import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel
import CoatyMQTT
import CoatyRuntime
import EdgeHardware
import Logging
import Synchronization

/// Feeds arbitrary bytes down the actor/output path: an output's configuration is parsed as an agent's `devices`
/// section is, and IoValue payloads arrive on an associated route, pass the manager's decoding and the
/// `IoActorController`'s value-type check, and drive the output's `OutputLogic` (switching, hysteresis, shared
/// thresholds, pulses, safe state). The decisions are checked against what the configuration promises. Used by the
/// fuzzer and by the corpus regression test.
///
/// An input is lines: the first is the JSON of one `devices.outputs` entry (an entry that does not parse leaves
/// a fan with hysteresis 60/55); every further line is one of
/// - `shared {"setpoints": {"fanOn": 61}}`: new data of shared objects, which retunes shared thresholds;
/// - `safe`: the actor lost its association or the agent stops;
/// - `~payload`: an IoValue for an actor whose value type has no check (any JSON reaches the logic);
/// - `payload`: an IoValue for an actor of the output's value type (numbers for hysteresis, booleans otherwise).
public final class OutputFuzzHarness: Sendable {
    public struct Statistics: Sendable {
        public var valuesDelivered = 0
        public var valuesRejectedByType = 0
        public var valuesRejectedByOutput = 0
        public var switches = 0
        public var outputsConfigured = 0
    }

    private let container: Container
    private let actors: IoActorController
    private let transport: CapturingTransport
    private let counts = Mutex(Statistics())

    /// One actor per kind of value check, each associated on a route of its own.
    private static let temperatureActor = IoActor(
        objectId: "fuzz-temperature", name: "fan", valueType: EdgeValueType.temperature)
    private static let switchActor = IoActor(
        objectId: "fuzz-switch", name: "relay", valueType: EdgeValueType.switchState)
    private static let uncheckedActor = IoActor(objectId: "fuzz-unchecked", name: "any", valueType: "coaty-edge.Fuzz")
    private static let actorList = [temperatureActor, switchActor, uncheckedActor]

    private static func route(of actor: IoActor) -> String { "coaty/3/-/IOV/source-\(actor.objectId)" }

    /// The fallback when the input's configuration does not parse.
    private static let defaultOutput = OutputLogic(
        control: .hysteresis(Hysteresis(onAbove: 60, offBelow: 55)!), initial: false, safeState: .off)

    /// Starts an agent with the three actors on a transport that is always connected, and associates each actor.
    public static func make() async throws -> OutputFuzzHarness {
        let transport = CapturingTransport()
        let actors = IoActorController()
        let container = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(objectId: "00000000-0000-4000-8000-000000000002", name: "output-fuzz"),
                ioNodes: [IoNodeDefinition(contextName: "ctx", ioActors: actorList)]),
            controllers: [("actors", actors)],
            logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }),
            makeTransport: { transport })
        container.start()
        for await state in container.communicationManager.communicationStates() where state == .online { break }
        for actor in actorList {
            let associate: JSONValue = [
                "ioSourceId": .string("source-\(actor.objectId)"), "ioActorId": .string(actor.objectId),
                "associatingRoute": .string(route(of: actor)),
            ]
            transport.deliver(MQTTMessage(topic: "coaty/3/-/ASC:ctx/fuzz-router", payload: associate.serializedBytes()))
        }
        // The controller takes values once its handler is registered, which it does before it follows associations.
        for actor in actorList {
            for await isAssociated in actors.associations(of: actor) where isAssociated { break }
        }
        return OutputFuzzHarness(container: container, actors: actors, transport: transport)
    }

    private init(container: Container, actors: IoActorController, transport: CapturingTransport) {
        self.container = container
        self.actors = actors
        self.transport = transport
    }

    public var statistics: Statistics { counts.withLock { $0 } }

    public func stop() async {
        await container.shutdown()
    }

    public func feed(_ bytes: [UInt8]) {
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)[...]
        let configured = lines.popFirst().flatMap(Self.output)
        var logic = configured?.logic ?? Self.defaultOutput
        var shared: [String: JSONObject] = [:]
        var statistics = Statistics(outputsConfigured: configured == nil ? 0 : 1)
        for line in lines {
            let before = logic.state
            if line.starts(with: Array("shared ".utf8)) {
                guard let objects = (try? JSONValue(parsing: line.dropFirst(7)))?.objectValue else { continue }
                for member in objects { shared[member.key] = member.value.objectValue }
                guard case .sharedHysteresis(let thresholds) = logic.control,
                    let hysteresis = thresholds.hysteresis(shared)
                else { continue }
                if let state = logic.retune(hysteresis) {
                    precondition(state == logic.state, "retune returned another state than it keeps")
                }
                precondition(logic.hysteresis == hysteresis, "retune did not apply the thresholds")
            } else if line.elementsEqual("safe".utf8) {
                let state = logic.enterSafeState(lineState: before)
                switch logic.safeState {
                case .on: precondition(state, "safe state on left the output off")
                case .off: precondition(!state, "safe state off left the output on")
                case .keep: precondition(state == before, "safe state keep changed the output")
                }
            } else {
                let unchecked = line.first == UInt8(ascii: "~")
                let actor =
                    unchecked
                    ? Self.uncheckedActor : logic.control == .switching ? Self.switchActor : Self.temperatureActor
                guard let value = deliver(Array(unchecked ? line.dropFirst() : line), to: actor) else {
                    statistics.valuesRejectedByType += 1
                    continue
                }
                statistics.valuesDelivered += 1
                guard case .json(let json) = value else { continue }
                guard let state = logic.receive(json) else {
                    precondition(logic.state == before, "a rejected value changed the output")
                    statistics.valuesRejectedByOutput += 1
                    continue
                }
                Self.check(state, after: json, before: before, logic)
            }
            if logic.state != before { statistics.switches += 1 }
        }
        counts.withLock { counts in
            counts.valuesDelivered += statistics.valuesDelivered
            counts.valuesRejectedByType += statistics.valuesRejectedByType
            counts.valuesRejectedByOutput += statistics.valuesRejectedByOutput
            counts.switches += statistics.switches
            counts.outputsConfigured += statistics.outputsConfigured
        }
    }

    /// Hands the payload to the manager as the broker would, on the actor's route; the value the controller
    /// accepted for the actor, or nil when it rejected the payload.
    private func deliver(_ payload: [UInt8], to actor: IoActor) -> IoValue? {
        let rejected = actors.rejectedValues(of: actor)
        transport.deliver(MQTTMessage(topic: Self.route(of: actor), payload: payload))
        guard actors.rejectedValues(of: actor) == rejected else { return nil }
        let value = actors.latestValue(of: actor)
        precondition(value != nil, "a value that was not rejected did not arrive")
        return value
    }

    /// What the configuration promises for a value the output took.
    private static func check(_ state: Bool, after value: JSONValue, before: Bool, _ logic: OutputLogic) {
        precondition(state == logic.state, "receive returned another state than it keeps")
        switch (logic.control, value) {
        case (.switching, .bool(let on)):
            precondition(state == on, "a switching output did not follow \(on)")
        case (.switching, _):
            break
        case (.pulse, .bool(let on)):
            precondition(state == on, "a pulse output did not follow \(on)")
        case (.pulse, .number(let seconds)):
            precondition(state == (seconds > 0), "a pulse output took \(seconds) s as \(state)")
        case (.pulse, _):
            break
        case (_, .number(let number)):
            guard let hysteresis = logic.hysteresis else {
                precondition(state == before, "an output without thresholds switched")
                return
            }
            let expected: Bool? =
                hysteresis.onWhenHigh
                ? (number > hysteresis.on ? true : number < hysteresis.off ? false : nil)
                : (number < hysteresis.on ? true : number > hysteresis.off ? false : nil)
            precondition(
                state == (expected ?? before), "hysteresis \(hysteresis) gave \(state) for \(number) from \(before)")
        default:
            preconditionFailure("a hysteresis output took \(value)")
        }
    }

    /// One `devices.outputs` entry, as the agent's configuration parser reads it.
    private static func output(_ line: ArraySlice<UInt8>) -> OutputDevice? {
        guard let entry = try? JSONValue(parsing: line) else { return nil }
        let devices = JSONCursor(["outputs": [entry]], path: JSONPath([.key("devices")]))
        return (try? DeviceConfiguration(parsing: devices, file: "fuzz.json"))?.outputs.first
    }
}
