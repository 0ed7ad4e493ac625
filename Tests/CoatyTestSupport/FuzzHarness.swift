import Logging

/// The fuzzer's one entry: an input that starts with a line `#rules` goes to the rules and router evaluation, one
/// that starts with `#output` to the actor/output path, any other to the communication manager's inbound path
/// (topic line and payload). Used by the fuzz target and by the corpus regression test.
public final class FuzzHarness: Sendable {
    public enum Path: String, Sendable, CaseIterable {
        case inbound
        case rules = "#rules"
        case output = "#output"
    }

    public let inbound: InboundFuzzHarness
    public let rules: RoutingFuzzHarness
    public let output: OutputFuzzHarness

    public static func make() async throws -> FuzzHarness {
        let inbound = InboundFuzzHarness()
        await inbound.waitUntilOnline()
        return FuzzHarness(inbound: inbound, rules: RoutingFuzzHarness(), output: try await OutputFuzzHarness.make())
    }

    private init(inbound: InboundFuzzHarness, rules: RoutingFuzzHarness, output: OutputFuzzHarness) {
        self.inbound = inbound
        self.rules = rules
        self.output = output
    }

    /// The path an input takes, and the input without its selector line.
    public static func path(of bytes: [UInt8]) -> (Path, ArraySlice<UInt8>) {
        for path in [Path.rules, .output] {
            let marker = Array((path.rawValue + "\n").utf8)
            if bytes.starts(with: marker) { return (path, bytes[marker.count...]) }
        }
        return (.inbound, bytes[...])
    }

    public func feed(_ bytes: [UInt8]) {
        let (path, input) = Self.path(of: bytes)
        switch path {
        case .inbound: inbound.feed(Array(input))
        case .rules: rules.feed(Array(input))
        case .output: output.feed(Array(input))
        }
    }

    /// The fuzzer runs millions of inputs; logging rejections would only slow it down.
    public static func silenceLogging() {
        LoggingSystem.bootstrap { _ in SwiftLogNoOpLogHandler() }
    }
}
