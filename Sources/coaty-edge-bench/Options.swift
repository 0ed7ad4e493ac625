import CoatyMQTT

/// What one run measures and how long, from the command line.
struct BenchmarkOptions: Sendable {
    enum Scenario: String, Sendable, CaseIterable {
        case roundTrip = "round-trip"
        case throughput
        case routing
    }

    /// Measured rounds per figure, after one warm-up round: the median round of a latency, each round's ratio
    /// to the bare figure of the same round, and the best round of a rate are reported.
    var rounds = 5
    /// Requests per latency round, one in flight.
    var requests = 5_000
    /// Messages per throughput round.
    var messages = 50_000
    /// Messages a publisher may have on their way (published, not yet received): the flow control that both the
    /// bare clients and the agents get.
    var window = 1_000
    /// An existing broker; without it, the benchmark starts a mosquitto of its own on 127.0.0.1.
    var broker: MQTTBrokerURL?
    /// Starts mosquitto as installed, without coaty-edge's `set_tcp_nodelay true`.
    var stockBroker = false
    var scenarios = Set(Scenario.allCases)
    /// Only these figures of the chosen scenarios (nil: all), so that a profiler sees one path at a time.
    var figures: Set<Figure>?
    var json = false

    static let usage = """
        usage: coaty-edge-bench [options]

        Measures the agent against a bare libmosquitto client on the same broker: event round trips, IoValue
        throughput, and IoValues routed across three agents.

          --rounds N       measured rounds per figure, after one warm-up round (default 5): latencies show the
                           median round and each round's ratio to the bare pair, rates the best round
          --requests N     requests per latency round, one in flight (default 5000)
          --messages N     messages per throughput round (default 50000)
          --window N       messages in flight during a throughput round, for every publisher (default 1000)
          --quick          --rounds 3 --requests 1000 --messages 10000
          --only LIST      comma-separated scenarios: round-trip, throughput, routing (default all)
          --figures LIST   only these figures of the scenarios, for a profiler (perf stat, valgrind): comma-separated
                           names as in --json (bareRoundTrip, channelRoundTrip, directThroughput, ...)
          --broker URL     use this broker (mqtt://host:port) instead of starting mosquitto on 127.0.0.1
          --stock-broker   start mosquitto without coaty-edge's set_tcp_nodelay true (Nagle's algorithm on)
          --json           print the figures as one JSON object
          --help           print this text
        """

    init(arguments: some Sequence<String>) throws(UsageError) {
        var arguments = ArgumentReader(arguments)
        func value(of option: String) throws(UsageError) -> String { try arguments.value(of: option) }
        func count(of option: String) throws(UsageError) -> Int { try arguments.count(of: option, atLeast: 1) }
        while let argument = arguments.next() {
            switch argument {
            case "--rounds": rounds = try count(of: argument)
            case "--requests": requests = try count(of: argument)
            case "--messages": messages = try count(of: argument)
            case "--window": window = try count(of: argument)
            case "--quick":
                rounds = 3
                requests = 1_000
                messages = 10_000
            case "--only":
                var chosen = Set<Scenario>()
                for name in try value(of: argument).split(separator: ",") {
                    guard let scenario = Scenario(rawValue: String(name)) else {
                        throw UsageError("unknown scenario \"\(name)\"; choose from round-trip, throughput, routing")
                    }
                    chosen.insert(scenario)
                }
                scenarios = chosen
            case "--figures":
                var chosen = Set<Figure>()
                for name in try value(of: argument).split(separator: ",") {
                    guard let figure = Figure(rawValue: String(name)) else {
                        let names = Figure.allCases.map(\.rawValue).joined(separator: ", ")
                        throw UsageError("unknown figure \"\(name)\"; choose from \(names)")
                    }
                    chosen.insert(figure)
                }
                figures = chosen
            case "--broker":
                let url = try value(of: argument)
                do {
                    broker = try MQTTBrokerURL(parsing: url)
                } catch {
                    throw UsageError(error.description)
                }
                if broker?.usesTLS == true {
                    throw UsageError("the benchmark connects without TLS; use an mqtt:// broker")
                }
            case "--stock-broker": stockBroker = true
            case "--json": json = true
            case "--help", "-h": throw UsageError(nil)
            default: throw UsageError("unknown option \"\(argument)\"")
            }
        }
    }
}

/// A command line that cannot run; without a message, the user asked for help.
struct UsageError: Error {
    var message: String?
    init(_ message: String?) { self.message = message }
}

/// A command line read option by option, each taking its value from the next argument.
struct ArgumentReader {
    private var arguments: IndexingIterator<[String]>

    init(_ arguments: some Sequence<String>) {
        self.arguments = Array(arguments).makeIterator()
    }

    mutating func next() -> String? { arguments.next() }

    mutating func value(of option: String) throws(UsageError) -> String {
        guard let value = arguments.next() else { throw UsageError("\(option) needs a value") }
        return value
    }

    /// The option's value as a whole number of at least `minimum` (0 or 1).
    mutating func count(of option: String, atLeast minimum: Int) throws(UsageError) -> Int {
        let text = try value(of: option)
        guard let number = Int(text), number >= minimum else {
            throw UsageError("\(option) needs \(minimum > 0 ? "a positive number" : "a number"), not \"\(text)\"")
        }
        return number
    }
}
