import CoatyModel

/// `coaty-edge-bench decode`: the time to decode each of the frames the round trips receive (the Channel ping, the
/// Call and its Return, as the agents publish them), in nanoseconds per frame: topic parse, JSON parse, event
/// decode and object validation, as `CoatyCodec.decode` does for every inbound Coaty event. The round trips' ratios
/// move by a few percent at most for a change of this part, under the noise of a loaded machine; this figure shows
/// it. Prints one line per frame: the best and the median of `rounds` rounds of `decodes` decodes.
struct DecodeFigures {
    static let usage = """
        usage: coaty-edge-bench decode [--rounds N] [--decodes N]

        Decodes the frames of the round trips (Channel ping, Call, Return) N times per round (default 200000, 9
        rounds) and prints the best and the median nanoseconds per decode.
        """

    var rounds = 9
    var decodes = 200_000

    init(arguments: some Sequence<String>) throws(UsageError) {
        var arguments = ArgumentReader(arguments)
        while let argument = arguments.next() {
            switch argument {
            case "--rounds": rounds = try arguments.count(of: argument, atLeast: 1)
            case "--decodes": decodes = try arguments.count(of: argument, atLeast: 1)
            case "--help", "-h": throw UsageError(nil)
            default: throw UsageError("unknown option \(argument)")
            }
        }
    }

    /// The frames as the agents publish them, on topics of the same shape and length.
    static func frames() -> [(name: String, topic: String, payload: [UInt8])] {
        let sourceId = CoatyUUID.random()
        let correlationId = CoatyUUID.random()
        let ping = ChannelEvent(
            channelId: Agents.pingChannel,
            content: .object(CoatyObject(coreType: .coatyObject, objectType: "coaty-edge.bench.Ping", name: "ping")))
        let call = CallEvent(operation: Agents.echoOperation, parameters: ["value": 21.5])
        let returned = ReturnEvent(.result(["value": 21.5]))
        func frame(_ name: String, _ event: CoatyEvent, filter: String?, correlationId: String?) -> (
            name: String, topic: String, payload: [UInt8]
        ) {
            let topic = CoatyTopic(
                namespace: CoatyTopic.defaultNamespace, eventType: event.eventType, filter: filter, sourceId: sourceId,
                correlationId: correlationId)
            return (name, topic.description, event.payload.serializedBytes())
        }
        return [
            frame("Channel", .channel(ping), filter: Agents.pingChannel, correlationId: nil),
            frame("Call", .call(call), filter: Agents.echoOperation, correlationId: correlationId),
            frame("Return", .returnEvent(returned), filter: nil, correlationId: correlationId),
        ]
    }

    func run() throws(BenchmarkError) {
        print("ns per decode, best / median of \(rounds) rounds of \(decodes)")
        for frame in Self.frames() {
            var perDecode: [UInt64] = []
            for _ in 0..<rounds {
                var decoded = 0
                let start = monotonicNanoseconds()
                for _ in 0..<decodes {
                    if case .success(.event) = CoatyCodec.decode(topic: frame.topic, payload: frame.payload) {
                        decoded += 1
                    }
                }
                let elapsed = monotonicNanoseconds() - start
                guard decoded == decodes else { throw BenchmarkError.agent("the \(frame.name) frame does not decode") }
                perDecode.append(elapsed / UInt64(decodes))
            }
            perDecode.sort()
            print("  \(frame.name), \(frame.payload.count) bytes: \(perDecode[0]) / \(perDecode[perDecode.count / 2])")
        }
    }
}
