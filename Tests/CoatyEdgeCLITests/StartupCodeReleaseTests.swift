import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeCLI

/// `coaty-edge run` unmaps the read-only pages of the program and its libraries a few seconds after it came online, so that the code only
/// starting up ran does not stay resident; the code it runs afterwards comes back on first use.
@Suite(.serialized) struct StartupCodeReleaseTests {
    /// Kilobytes resident of the main program's mappings that are not writable, from /proc/self/smaps.
    static func residentReadOnlyProgramKiB() throws -> Int {
        let program = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let smaps = try procFile("/proc/self/smaps")
        var total = 0
        var counting = false
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let range = fields.first, range.contains("-"), fields.count >= 5, range.first?.isHexDigit == true,
                !line.hasSuffix(":")
            {
                counting =
                    fields.count >= 6 && fields[5...].joined(separator: " ") == program
                    && !fields[1].contains("w")
            } else if counting, fields.first == "Rss:", fields.count >= 2, let kib = Int(fields[1]) {
                total += kib
            }
        }
        return total
    }

    @Test func unmapsTheReadOnlyPagesOfTheProgramItRunsIn() throws {
        let before = try Self.residentReadOnlyProgramKiB()
        #expect(before > 0, "the test program's code is resident while it runs")
        let line = StartupCodeRelease.release()
        #expect(line.hasPrefix("unmapped the read-only pages of the program and its libraries"), "\(line)")
        // This process goes on running (the rest of this test is code of the program), with less of it resident.
        let after = try Self.residentReadOnlyProgramKiB()
        #expect(after < before, "resident read-only pages of the program: \(before) KiB before, \(after) KiB after")
    }

    @Test func theAgentReleasesItsStartUpCodeAndGoesOnPublishing() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let (sourceAgent, routerAgent, actorAgent) = try await RouterCensusTests.startAgents(
            broker: broker, in: scratch, sourceArguments: ["--log-level", "debug"])
        try await sourceAgent.line(
            containing: "unmapped the read-only pages of the program and its libraries", onErrors: true,
            within: .seconds(60))
        // Values keep coming from the source after its release (read, published, routed: code that comes back).
        let received = RouterCensusTests.count("Display received", in: actorAgent.errors)
        try await waitUntil("fresh values at the actor", within: .seconds(30)) {
            RouterCensusTests.count("Display received", in: actorAgent.errors) >= received + 10
        }
        #expect(RouterCensusTests.count("cannot unmap", in: sourceAgent.errors) == 0, "\(sourceAgent.errors.text)")

        for agent in [sourceAgent, actorAgent, routerAgent] { try await agent.stop() }
        try await broker.stop()
    }
}
