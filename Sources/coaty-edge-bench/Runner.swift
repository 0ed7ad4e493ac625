import CMosquitto
import CoatyCommunication
import CoatyJSON
import CoatyModel
import Glibc

/// One figure of the report: what is measured, over which path.
enum Figure: String, CaseIterable, Sendable {
    case bareRoundTrip, bareCoatyTopicsRoundTrip, handoffRoundTrip, channelRoundTrip, pooledChannelRoundTrip
    case callRoundTrip
    case bareOneWay, directOneWay, routedOneWay
    case bareThroughput, directThroughput, routedThroughput
}

struct Report: Sendable {
    var options: BenchmarkOptions
    var broker: String
    var libmosquitto: String
    var payloads: [String: Int] = [:]
    /// Every measured round per figure, in order: round i of a figure and round i of its baseline were measured
    /// in turns with each other (`requestsPerTurn`), so they make a pair.
    var latencies: [Figure: [LatencyRound]] = [:]
    var throughputs: [Figure: [ThroughputRound]] = [:]

    /// The median of the figure's rounds, statistic by statistic.
    func latency(_ figure: Figure) -> LatencySummary? {
        latencies[figure].flatMap { $0.isEmpty ? nil : LatencySummary(rounds: $0) }
    }

    func throughput(_ figure: Figure) -> ThroughputRound? {
        throughputs[figure].flatMap { bestRound($0, by: \.perSecond) }
    }
}

/// Starts the broker (unless one is given), the bare clients and the agents, and measures in rounds. The figures
/// of one table take turns round by round, so that the noise of a shared machine falls on all of them alike; within
/// a round the latency figures take turns every `requestsPerTurn` requests, so that a figure and the bare pair it is
/// compared with see the same state of the machine (an idle machine wakes slower, and that state can change within
/// seconds): each round's ratio is a paired one.
func runBenchmarks(_ options: BenchmarkOptions) async throws -> Report {
    let broker = options.broker == nil ? try await LocalBroker.start(tcpNoDelay: !options.stockBroker) : nil
    defer { broker?.stop() }
    let host = options.broker?.host ?? "127.0.0.1"
    let port = options.broker?.port ?? broker?.port ?? 1883
    var major: Int32 = 0, minor: Int32 = 0, revision: Int32 = 0
    mosquitto_lib_version(&major, &minor, &revision)
    var report = Report(
        options: options,
        broker: broker == nil
            ? "mqtt://\(host):\(port)"
            : "mosquitto started on 127.0.0.1:\(port) with set_tcp_nodelay \(!options.stockBroker)",
        libmosquitto: "\(major).\(minor).\(revision)")

    progress("connecting the bare clients and the agents to \(host):\(port)")
    let bare = try BareClients(host: host, port: port)
    defer { bare.disconnect() }
    let agents = try await Agents(host: host, port: port)
    do {
        try await agents.start()
        try await measure(options, bare: bare, agents: agents, into: &report)
    } catch {
        await agents.stop()
        throw error
    }
    await agents.stop()
    return report
}

private func measure(_ options: BenchmarkOptions, bare: BareClients, agents: Agents, into report: inout Report)
    async throws
{
    let scenarios = options.scenarios
    // The bare clients carry the very bytes the agents put on the wire.
    let pingPayload = agents.ping.serializedBytes()
    let valuePayload = IoValue.json(.number(21.5)).payload
    report.payloads = ["roundTrip": pingPayload.count, "value": valuePayload.count]

    var latencies: [(Figure, @Sendable (Int) async throws -> [UInt64])] = []
    if scenarios.contains(.roundTrip) {
        latencies += [
            (
                .bareRoundTrip,
                { @Sendable in try await bare.roundTrips($0, payload: pingPayload, handoff: false) }
            ),
            (
                .bareCoatyTopicsRoundTrip,
                { @Sendable in try await bare.coatyTopicsRoundTrips($0, payload: pingPayload) }
            ),
            (
                .handoffRoundTrip,
                { @Sendable in try await bare.roundTrips($0, payload: pingPayload, handoff: true) }
            ),
            (.channelRoundTrip, { @Sendable in try await agents.channelRoundTrips($0) }),
            (.pooledChannelRoundTrip, { @Sendable in try await agents.pooledChannelRoundTrips($0) }),
            (.callRoundTrip, { @Sendable in try await agents.callRoundTrips($0) }),
        ]
    }
    if scenarios.contains(.routing) {
        latencies += [
            (.bareOneWay, { @Sendable in try await bare.oneWay($0, payload: valuePayload) }),
            (.directOneWay, { @Sendable in try await agents.directValues($0) }),
            (.routedOneWay, { @Sendable in try await agents.routedValues($0) }),
        ]
    }
    var throughputs: [(Figure, @Sendable () async throws -> ThroughputRound)] = []
    if scenarios.contains(.throughput) || scenarios.contains(.routing) {
        throughputs.append(
            (
                .bareThroughput,
                { @Sendable in try await bare.flood(options.messages, window: options.window, payload: valuePayload) }
            ))
    }
    if scenarios.contains(.throughput) {
        throughputs.append(
            (.directThroughput, { @Sendable in try await agents.floodDirect(options.messages, window: options.window) })
        )
    }
    if scenarios.contains(.routing) {
        throughputs.append(
            (.routedThroughput, { @Sendable in try await agents.floodRouted(options.messages, window: options.window) })
        )
    }

    if let chosen = options.figures {
        latencies.removeAll { !chosen.contains($0.0) }
        throughputs.removeAll { !chosen.contains($0.0) }
    }

    for round in 0...options.rounds {
        let label = round == 0 ? "warm-up round" : "round \(round) of \(options.rounds)"
        var samples: [Figure: [UInt64]] = [:]
        var measured = 0
        while measured < options.requests, !latencies.isEmpty {
            let turn = min(requestsPerTurn, options.requests - measured)
            for (figure, measurement) in latencies {
                progress("\(label): \(figure.rawValue), requests \(measured + 1)-\(measured + turn)")
                samples[figure, default: []] += try await measurement(turn)
            }
            measured += turn
        }
        if round > 0 {
            for (figure, nanoseconds) in samples {
                report.latencies[figure, default: []].append(LatencyRound(nanoseconds: nanoseconds))
            }
        }
        for (figure, measurement) in throughputs {
            progress("\(label): \(figure.rawValue)")
            let result = try await measurement()
            if round > 0 { report.throughputs[figure, default: []].append(result) }
        }
    }
}

/// Requests a latency figure makes before the next figure takes its turn: ~30 ms of round trips.
let requestsPerTurn = 500

/// Shows what runs now on a terminal, on one line that the next step overwrites.
func progress(_ text: String) {
    guard isatty(STDERR_FILENO) != 0 else { return }
    writeStandardError("\u{1B}[2K\r\(text)")
}

func endProgress() {
    guard isatty(STDERR_FILENO) != 0 else { return }
    writeStandardError("\u{1B}[2K\r")
}

func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}
