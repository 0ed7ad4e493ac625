import CoatyJSON

/// The targets the agent is held to, as ratios to the bare client.
enum Target {
    static let roundTripRatio = 1.1
    static let throughputRatio = 0.8
}

extension Report {
    // MARK: - Text

    var text: String {
        var lines = [
            "coaty-edge-bench: libmosquitto \(libmosquitto), \(broker)",
            "\(options.rounds) rounds after a warm-up round, the figures taking turns (latencies every \(requestsPerTurn) requests)",
            "latencies: the median round; ratios: the median of each round's ratio to the bare figure of the same round",
            "rates: the best round",
        ]
        if hasAny(latency: [
            .bareRoundTrip, .bareCoatyTopicsRoundTrip, .handoffRoundTrip, .channelRoundTrip, .pooledChannelRoundTrip,
            .callRoundTrip,
        ]) {
            lines += [
                "",
                "1. Event round trip, one request in flight, \(options.requests) per round (payload \(payloads["roundTrip"] ?? 0) bytes)",
                latencyHeader,
                latencyRow("bare libmosquitto pair, ping and echo in the callbacks", .bareRoundTrip, baseline: nil),
                latencyRow(
                    "  the same on the Channel's Coaty topics and filters", .bareCoatyTopicsRoundTrip,
                    baseline: .bareRoundTrip),
                latencyRow(
                    "bare pair, echo from a thread woken by the callback", .handoffRoundTrip, baseline: .bareRoundTrip),
                latencyRow("Channel answered by Channel, two managers", .channelRoundTrip, baseline: .bareRoundTrip),
                latencyRow("  the same, tasks on the global pool", .pooledChannelRoundTrip, baseline: .bareRoundTrip),
                latencyRow("Call answered by Return, two managers", .callRoundTrip, baseline: .bareRoundTrip),
                roundRatios("Channel", .channelRoundTrip),
                roundRatios("Call/Return", .callRoundTrip),
                verdict(
                    "Channel round trip p50", ratio(.channelRoundTrip, .bareRoundTrip, \.p50),
                    atMost: Target.roundTripRatio)
                    + againstCoatyTopics(.channelRoundTrip),
                verdict(
                    "Call/Return round trip p50", ratio(.callRoundTrip, .bareRoundTrip, \.p50),
                    atMost: Target.roundTripRatio)
                    + againstCoatyTopics(.callRoundTrip),
            ]
        }
        if hasAny(throughput: [.directThroughput]) {
            lines += [
                "",
                "2. IoValue throughput, \(options.messages) values of \(payloads["value"] ?? 0) bytes per round, at most \(options.window) in flight",
                throughputHeader,
                throughputRow("bare libmosquitto pair", .bareThroughput, baseline: nil),
                throughputRow(
                    "publishIoValue to observeIoValue, two managers", .directThroughput, baseline: .bareThroughput),
                verdict("IoValue throughput", throughputRatio(.directThroughput), atLeast: Target.throughputRatio),
            ]
        }
        if hasAny(latency: [.bareOneWay, .directOneWay, .routedOneWay]) || hasAny(throughput: [.routedThroughput]) {
            lines += [
                "",
                "3. IoValues routed by an IoRouter (IoAssociationRules.all) across three agents",
                "   one value in flight, \(options.requests) per round",
                latencyHeader,
                latencyRow("bare libmosquitto pair, publish to callback", .bareOneWay, baseline: nil),
                latencyRow("publishIoValue to observeIoValue, two managers", .directOneWay, baseline: .bareOneWay),
                latencyRow("IoSourceController to IoActorController.values", .routedOneWay, baseline: .bareOneWay),
                "   sustained, \(options.messages) values per round, at most \(options.window) in flight",
                throughputHeader,
                throughputRow("bare libmosquitto pair", .bareThroughput, baseline: nil),
                throughputRow(
                    "IoSourceController to IoActorController.values", .routedThroughput, baseline: .bareThroughput),
            ]
        }
        return lines.joined(separator: "\n")
    }

    private func hasAny(latency figures: [Figure]) -> Bool { figures.contains { latencies[$0] != nil } }
    private func hasAny(throughput figures: [Figure]) -> Bool { figures.contains { throughputs[$0] != nil } }

    private var latencyHeader: String {
        row("", ["p50", "p90", "p99", "p50 of rounds", "ratio p50", "p90", "p99"])
    }

    private var throughputHeader: String {
        row("", ["values/s", "lost", "CPU/value", "rounds", "ratio"])
    }

    private func latencyRow(_ name: String, _ figure: Figure, baseline: Figure?) -> String {
        guard let median = latency(figure), let rounds = latencies[figure] else { return row(name, ["not measured"]) }
        let p50s = rounds.map(\.p50)
        var cells = [
            micro(median.p50), micro(median.p90), micro(median.p99),
            "\(decimal(p50s.min() ?? .nan))-\(decimal(p50s.max() ?? .nan))",
        ]
        if let baseline {
            cells += [\LatencyRound.p50, \.p90, \.p99].map { times(ratio(figure, baseline, $0)) }
        }
        return row(name, cells)
    }

    private func throughputRow(_ name: String, _ figure: Figure, baseline: Figure?) -> String {
        guard let best = throughput(figure), let rounds = throughputs[figure] else {
            return row(name, ["not measured"])
        }
        let rates = rounds.map(\.perSecond)
        var cells = [
            grouped(best.perSecond), "\(best.lost)", micro(best.cpuMicrosecondsPerMessage),
            "\(grouped(rates.min() ?? .nan))-\(grouped(rates.max() ?? .nan))",
        ]
        if baseline != nil { cells.append(times(throughputRatio(figure))) }
        return row(name, cells)
    }

    /// Each round's p50 ratio to the bare round trip of the same round, so that a round where the machine changed
    /// state shows as one.
    private func roundRatios(_ name: String, _ figure: Figure) -> String {
        let ratios = pairedRatios(figure, .bareRoundTrip, \.p50)
        guard !ratios.isEmpty else { return "" }
        return "   \(name) p50 ratio per round: " + ratios.map { times($0) }.joined(separator: " ")
    }

    /// The figure's p50 ratio to the bare pair on the Channel's Coaty topics, after its verdict: the agent's own
    /// cost, the topics' shape taken out.
    private func againstCoatyTopics(_ figure: Figure) -> String {
        guard let ratio = ratio(figure, .bareCoatyTopicsRoundTrip, \.p50) else { return "" }
        return "; \(times(ratio)) of the bare pair on Coaty topics"
    }

    private func verdict(_ what: String, _ ratio: Double?, atMost limit: Double) -> String {
        guard let ratio else { return "" }
        return
            "   \(what): \(times(ratio)) of the bare client; target at most \(times(limit)): \(ratio <= limit ? "met" : "MISSED")"
    }

    private func verdict(_ what: String, _ ratio: Double?, atLeast limit: Double) -> String {
        guard let ratio else { return "" }
        return
            "   \(what): \(times(ratio)) of the bare client; target at least \(times(limit)): \(ratio >= limit ? "met" : "MISSED")"
    }

    private func row(_ name: String, _ cells: [String]) -> String {
        let widths = [11, 11, 11, 14, 10, 7, 7]
        var line = "   " + name.padding(to: 50)
        for (cell, width) in zip(cells, widths) {
            line += String(repeating: " ", count: max(1, width - cell.count)) + cell
        }
        return line
    }

    // MARK: - Ratios

    /// The median of the paired ratios: each round of the figure against the same round of its baseline.
    func ratio(_ figure: Figure, _ baseline: Figure, _ statistic: KeyPath<LatencyRound, Double>) -> Double? {
        let ratios = pairedRatios(figure, baseline, statistic)
        return ratios.isEmpty ? nil : median(ratios)
    }

    /// Round by round, the figure's statistic over its baseline's in the same round.
    func pairedRatios(_ figure: Figure, _ baseline: Figure, _ statistic: KeyPath<LatencyRound, Double>) -> [Double] {
        guard let rounds = latencies[figure], let bases = latencies[baseline] else { return [] }
        return zip(rounds, bases).map { $0[keyPath: statistic] / $1[keyPath: statistic] }
    }

    func throughputRatio(_ figure: Figure) -> Double? {
        guard let value = throughput(figure), let base = throughput(.bareThroughput) else { return nil }
        return value.perSecond / base.perSecond
    }

    // MARK: - JSON

    var json: JSONValue {
        var document: JSONObject = [
            "libmosquitto": .string(libmosquitto),
            "broker": .string(broker),
            "reported":
                "latencies: the median round of each statistic, ratios the median of the ratios paired round by round with the bare figure; throughput: the best round",
            "requestsPerTurn": .number(Double(requestsPerTurn)),
            "rounds": .number(Double(options.rounds)),
            "requestsPerRound": .number(Double(options.requests)),
            "messagesPerRound": .number(Double(options.messages)),
            "window": .number(Double(options.window)),
            "payloadBytes": .object(
                JSONObject(payloads.sorted { $0.key < $1.key }.map { ($0.key, .number(Double($0.value))) })),
        ]
        var figures = JSONObject()
        for figure in Figure.allCases {
            if let median = latency(figure), let rounds = latencies[figure] {
                var entry: JSONObject = [
                    "p50Microseconds": .number(median.p50), "p90Microseconds": .number(median.p90),
                    "p99Microseconds": .number(median.p99), "meanMicroseconds": .number(median.mean),
                    "samples": .number(Double(rounds.first?.samples ?? 0)),
                    "roundsP50Microseconds": .array(rounds.map { .number($0.p50) }),
                    "roundsP90Microseconds": .array(rounds.map { .number($0.p90) }),
                ]
                if let baseline = figure.baseline {
                    entry["ratioP50"] = ratio(figure, baseline, \.p50).map(JSONValue.number) ?? .null
                    entry["ratioP90"] = ratio(figure, baseline, \.p90).map(JSONValue.number) ?? .null
                    entry["ratioP99"] = ratio(figure, baseline, \.p99).map(JSONValue.number) ?? .null
                    entry["ratioMean"] = ratio(figure, baseline, \.mean).map(JSONValue.number) ?? .null
                    entry["roundsRatioP50"] = .array(pairedRatios(figure, baseline, \.p50).map { .number($0) })
                    entry["roundsRatioP90"] = .array(pairedRatios(figure, baseline, \.p90).map { .number($0) })
                }
                if figure.isAgentRoundTrip, let ratio = ratio(figure, .bareCoatyTopicsRoundTrip, \.p50) {
                    entry["ratioP50ToCoatyTopics"] = .number(ratio)
                    entry["roundsRatioP50ToCoatyTopics"] = .array(
                        pairedRatios(figure, .bareCoatyTopicsRoundTrip, \.p50).map { .number($0) })
                }
                figures[figure.rawValue] = .object(entry)
            }
            if let best = throughput(figure), let rounds = throughputs[figure] {
                var entry: JSONObject = [
                    "valuesPerSecond": .number(best.perSecond), "sent": .number(Double(best.sent)),
                    "cpuMicrosecondsPerValue": .number(best.cpuMicrosecondsPerMessage),
                    "lost": .number(Double(best.lost)),
                    "roundsValuesPerSecond": .array(rounds.map { .number($0.perSecond) }),
                ]
                if figure.baseline != nil { entry["ratio"] = throughputRatio(figure).map(JSONValue.number) ?? .null }
                figures[figure.rawValue] = .object(entry)
            }
        }
        document["figures"] = .object(figures)
        return .object(document)
    }
}

extension Figure {
    /// The bare figure this one is compared with.
    var baseline: Figure? {
        switch self {
        case .bareRoundTrip, .bareOneWay, .bareThroughput: nil
        case .bareCoatyTopicsRoundTrip, .handoffRoundTrip, .channelRoundTrip, .pooledChannelRoundTrip, .callRoundTrip:
            .bareRoundTrip
        case .directOneWay, .routedOneWay: .bareOneWay
        case .directThroughput, .routedThroughput: .bareThroughput
        }
    }

    /// A round trip through two agents, also compared with the bare pair on Coaty topics.
    var isAgentRoundTrip: Bool {
        switch self {
        case .channelRoundTrip, .pooledChannelRoundTrip, .callRoundTrip: true
        default: false
        }
    }
}

private func micro(_ value: Double) -> String { "\(decimal(value)) µs" }

private func times(_ value: Double?) -> String {
    guard let value else { return "-" }
    return "\(decimal(value, places: 2))x"
}

/// A number with a fixed count of decimal places.
private func decimal(_ value: Double, places: Int = 1) -> String {
    guard value.isFinite else { return "-" }
    var scale = 1
    for _ in 0..<places { scale *= 10 }
    let scaled = Int((abs(value) * Double(scale)).rounded())
    let fraction = String(scaled % scale)
    return (value < 0 ? "-" : "") + "\(scaled / scale)." + String(repeating: "0", count: places - fraction.count)
        + fraction
}

/// A whole number with thin groups of three digits.
private func grouped(_ value: Double) -> String {
    guard value.isFinite else { return "-" }
    var digits = String(Int(value.rounded()))
    var groups: [Substring] = []
    while digits.count > 3 {
        groups.insert(digits.suffix(3), at: 0)
        digits.removeLast(3)
    }
    groups.insert(Substring(digits), at: 0)
    return groups.joined(separator: " ")
}

extension String {
    fileprivate func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
