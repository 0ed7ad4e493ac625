import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// `coaty-edge run` with an emulated relay whose actor's route is flooded with alternating values: SIGTERM mid-flood
/// leaves the relay in its safe state, with no switch after it, and ends the agent at once whatever is queued; and
/// minOnTime/minOffTime hold the relay's switches back under the same flood.
@Suite(.serialized) struct StopUnderLoadTests {
    static let sourceId = "flood"
    static let route = "coaty/3/-/IOV/flood"

    /// A router agent that associates every compatible pair of the context Board.
    static func router(broker: Int) -> String {
        """
        {"common": {"agentIdentity": {"name": "Router"}},
         "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker)"},
         "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "Board", "operatingState": "normal"}}}}
        """
    }

    /// An agent with a relay on an emulated GPIO line 17, initially off, safe state on, driven by its actor; and the
    /// IoSource the test floods, which no device feeds.
    static func relay(broker: Int, limits: String = "") -> String {
        """
        {"common": {"agentIdentity": {"name": "Relay"}, "ioContextNodes": {"Board": {
           "ioSources": [{"objectId": "\(sourceId)", "name": "Flood", "valueType": "coaty-edge.Switch"}],
           "ioActors": [{"objectId": "relay", "name": "Fan relay", "valueType": "coaty-edge.Switch"}]}}},
         "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker)"},
         "devices": {"emulated": true, "outputs": [
           {"driver": "gpio-output", "ioActor": "relay", "chip": "gpiochip0", "line": 17, "initial": "off",
            "safeState": "on"\(limits)}]}}
        """
    }

    /// `mosquitto_pub -l` publishing `values` values true, false, true, ... on the route as fast as it can: about a
    /// second's work for it, many seconds' for the relay, which logs every switch. A bounded flood, so that it does not
    /// starve the suites that run beside this one. Kill its process group to end it early.
    static func flood(broker: Int, values: Int = 20000) async throws -> CoatyTestSupport.ChildProcess {
        let publisher =
            "yes \"$(printf 'true\\nfalse')\" | head -n \(values) | mosquitto_pub -l -h 127.0.0.1 -p \(broker) -t \(route)"
        return try await CoatyTestSupport.ChildProcess(Command("sh", "-c", publisher))
    }

    /// The router, and the relay agent once its relay was associated.
    static func agents(broker: TestBroker, scratch: ScratchDirectory, limits: String = "", extra: [String] = [])
        async throws
        -> (router: CoatyTestSupport.ChildProcess, relay: CoatyTestSupport.ChildProcess)
    {
        let router = try await Executable.start([
            "run", "--config", try scratch.write(Self.router(broker: broker.port), to: "router.json").path,
        ])
        let relay = try await Executable.start(
            [
                "run", "--config",
                try scratch.write(Self.relay(broker: broker.port, limits: limits), to: "relay.json").path,
            ]
                + extra)
        try await router.line(containing: "associated Flood with Fan relay", onErrors: true, within: .seconds(30))
        return (router, relay)
    }

    static let output = "GPIO output line 17 of gpiochip0"

    /// The stop under a flood: SIGTERM reaches the relay agent with a backlog of toggling values; the relay goes to its
    /// safe state (on), the safe state is logged (also when the relay happened to be on) and no switch follows it, and
    /// the agent ends well within a second by its own log (it used to work off its backlog first). The test runs
    /// beside the other suites, so the flood is bounded and the process's exit, seen from outside on a loaded
    /// machine, is given more time.
    @Test(.emulatedHardware) func sigtermMidFloodLeavesTheOutputInItsSafeStateAndEndsAtOnce() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let (router, relay) = try await Self.agents(broker: broker, scratch: scratch)
        // The relay agent is held (SIGSTOP) while the flood goes out, so that a backlog waits for it whatever the
        // machine's speed (in its socket and in the broker's queue for it), and SIGTERM reaches it with that backlog:
        // as it goes on, it switches the relay while the signal is being handled, and then stops.
        kill(relay.processIdentifier, SIGSTOP)
        let flood = try await Self.flood(broker: broker.port)
        _ = try await flood.finished(within: .seconds(30))
        let signalled = ContinuousClock.now
        kill(relay.processIdentifier, SIGTERM)
        kill(relay.processIdentifier, SIGCONT)
        let stopped = try await relay.finished(within: .seconds(60))
        let stopTime = ContinuousClock.now - signalled
        kill(-flood.processIdentifier, SIGKILL)
        _ = try? await flood.finished(within: .seconds(10))

        #expect(stopped.status == 0, "\(stopped.errors.suffix(2000))")
        let lines = stopped.errors.split(separator: "\n").map(String.init)
        let safe = lines.lastIndex {
            $0.hasSuffix("\(Self.output) to its safe state (on): the agent stops")
                || $0.hasSuffix("\(Self.output) in its safe state (on) already: the agent stops")
        }
        #expect(safe != nil, "no safe-state line in \(lines.suffix(20))")
        if let safe {
            let later = lines[(safe + 1)...].filter { $0.contains(" switched ") }
            #expect(later.isEmpty, "\(later.count) switches after the safe state: \(later.prefix(5))")
        }
        // What was still waiting when the stop began is dropped and counted (in the actor's queue, or not yet read);
        // how much that is depends on the machine's speed, so ObservationStreamTests and the stress script show it.
        #expect(stopTime < .seconds(10), "the agent took \(stopTime) to end after SIGTERM")
        // The agent's own clock, from its safe-state line (written as the stop begins) to its last line.
        let first = safe.flatMap { Self.time(of: lines[$0]) }
        let last = lines.last.flatMap(Self.time)
        if let first, let last {
            #expect(
                last.timeIntervalSince(first) < 1, "the stop took \(last.timeIntervalSince(first)) s by the agent's log"
            )
        }
        #expect(lines.last?.hasSuffix("agent Relay stopped") == true, "\(lines.suffix(5))")

        #expect(try await router.stop(with: SIGTERM).status == 0)
        try await broker.stop()
    }

    /// minOnTime and minOffTime of 1 s under the flood: the relay switches at most about once a second, the switches
    /// held back are counted in the metrics and logged within a budget, and after the flood the relay ends in the state
    /// last asked for, even when that came while a switch was held back.
    @Test(.emulatedHardware) func minimumOnAndOffTimesHoldSwitchesBackUnderAFlood() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let metricsPort = try freeLoopbackPort()
        let started = ContinuousClock.now
        let (router, relay) = try await Self.agents(
            broker: broker, scratch: scratch, limits: #", "minOnTime": "1s", "minOffTime": "1s""#,
            extra: ["--metrics-port", "\(metricsPort)"])
        let flood = try await Self.flood(broker: broker.port)
        try await relay.line(containing: "held back a switch", onErrors: true)
        try await Task.sleep(for: .milliseconds(500))
        kill(-flood.processIdentifier, SIGKILL)
        _ = try? await flood.finished(within: .seconds(10))
        let suppressed =
            try await scrape(port: metricsPort)["coaty_edge_output_switches_suppressed_total{actor=\"relay\"}"] ?? 0
        #expect(suppressed > 10, "\(suppressed) switches held back")

        // The broker delivers what it queued for the agent during the flood for a while: wait until no value comes
        // for half a second. Then off for sure; then on, off, on within a millisecond: the relay ends on, by one switch.
        let received = "coaty_edge_values_received_total{actor=\"relay\"}"
        var count = -1.0
        try await waitUntil("the flood's values to end", within: .seconds(60)) {
            let previous = count
            try await Task.sleep(for: .milliseconds(500))
            count = try await scrape(port: metricsPort)[received] ?? 0
            return count == previous
        }
        try await Self.publish(["false"], broker: broker.port)
        try await Task.sleep(for: .milliseconds(1500))
        let before = relay.errors.text.count
        try await Self.publish(["true", "false", "true"], broker: broker.port)
        try await waitUntil("the relay to switch on", within: .seconds(20)) {
            relay.errors.text.dropFirst(before).contains("(Fan relay) switched on")
        }
        try await Task.sleep(for: .milliseconds(1500))
        let elapsed = ContinuousClock.now - started
        let stopped = try await relay.stop(with: SIGTERM, within: .seconds(20))
        #expect(stopped.status == 0)

        let after = stopped.errors.dropFirst(before).split(separator: "\n").filter { $0.contains(" switched ") }
        #expect(
            after.count == 1 && after.first?.contains("switched on") == true,
            "\(stopped.errors.dropFirst(before - 3000))")
        let lines = stopped.errors.split(separator: "\n")
        let switches = lines.filter { $0.contains("(Fan relay) switched ") }.count
        #expect(switches <= Int(elapsed / .seconds(1)) + 2, "\(switches) switches in \(elapsed)")
        let logged = lines.filter { $0.contains("(Fan relay) held back a switch") }.count
        #expect(logged >= 1 && logged <= 20, "\(logged) lines about held-back switches")
        #expect(try await router.stop(with: SIGTERM).status == 0)
        try await broker.stop()
    }

    /// The time of a log line (`2026-06-01T12:00:00.123Z info ...`).
    static func time(of line: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return line.split(separator: " ").first.flatMap { formatter.date(from: String($0)) }
    }

    /// Publishes the values on the flooded route, one connection, one after the other.
    static func publish(_ values: [String], broker: Int) async throws {
        let lines = values.joined(separator: "\\n")
        let result = try await Command(
            "sh", "-c", "printf '\(lines)\\n' | mosquitto_pub -l -h 127.0.0.1 -p \(broker) -t \(route)"
        ).run(timeout: .seconds(20))
        #expect(result.status == 0, "\(result.errors)")
    }
}
