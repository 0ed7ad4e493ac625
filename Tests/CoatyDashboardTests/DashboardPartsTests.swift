import CoatyEdgeCLI
import FoundationEssentials
import Testing

@testable import CoatyDashboard

/// The dashboard's parts on their own: the bounded history, the listen address and its token rule, the token check.
/// The page and the server are tested in chromium against real agents (Tests/Browser).
struct DashboardPartsTests {
    @Test func historyKeepsTheWindowInAFixedNumberOfBuckets() {
        var history = ValueHistory(window: 3_600_000, capacity: 720)
        #expect(history.bucketWidth == 5000)
        // Two hours at 10 Hz: 72 000 values.
        let start: Int64 = 1_700_000_000_000
        for step in 0..<72_000 {
            history.record(Double(step % 100), at: start + Int64(step) * 100)
        }
        #expect(history.buckets.count <= 720)
        #expect(history.buckets.count >= 719)
        let newest = start + 71_999 * 100
        #expect(history.buckets.first!.time >= newest - 3_600_000 - 5000)
        #expect(history.buckets.last!.time == newest - newest % 5000)
        // Each full bucket of 5 s holds 50 values of 0...99 in order: mean, minimum and maximum of what it got.
        let full = history.buckets[history.buckets.count / 2]
        #expect(full.count == 50)
        #expect(full.minimum == Double(full.minimum.rounded()))
        #expect(full.maximum - full.minimum == 49)
        #expect(abs(full.mean - (full.minimum + full.maximum) / 2) < 1e-9)
    }

    @Test func historyCountsALateValueInTheNewestBucketAndSkipsNonFiniteOnes() {
        var history = ValueHistory(window: 60_000, capacity: 6)
        history.record(10, at: 100_000)
        history.record(20, at: 95_000)
        history.record(.nan, at: 100_500)
        history.record(.infinity, at: 100_600)
        #expect(history.buckets == [ValueHistory.Bucket(time: 100_000, mean: 15, minimum: 10, maximum: 20, count: 2)])
        // A gap longer than the window leaves only the new value.
        history.record(1, at: 500_000)
        #expect(history.buckets.map(\.time) == [500_000])
    }

    @Test func listenAddressesAndTheTokenRule() throws {
        var settings = DashboardSettings()
        try settings.setListen("0.0.0.0:8443")
        #expect((settings.host, settings.port) == ("0.0.0.0", 8443))
        #expect(throws: CommandFailure.self) { try settings.check() }
        settings.token = "secret"
        try settings.check()

        try settings.setListen("[::1]:9000")
        #expect((settings.host, settings.port) == ("::1", 9000))
        try settings.setListen("8081")
        #expect((settings.host, settings.port) == ("::1", 8081))
        for bad in ["host:", "host:70000", ":80", "[::1]9000", "a:b"] {
            #expect(throws: CommandFailure.self, "\(bad)") { try settings.setListen(bad) }
        }
        settings.token = nil
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "::1"] {
            settings.host = host
            try settings.check()
        }
    }

    @Test func theTokenIsTakenAsBearerOrAsBasicPasswordAndNothingElse() {
        let token = "s3cret"
        func basic(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }
        #expect(TokenCheck.authorizes("Bearer s3cret", token: token))
        #expect(TokenCheck.authorizes(basic("anyone:s3cret"), token: token))
        #expect(TokenCheck.authorizes(basic(":s3cret"), token: token))
        for wrong in [
            nil, "", "Bearer s3cre", "Bearer s3cret ", basic("s3cret"), basic("s3cret:x"), "Basic !!!", "Digest s3cret",
        ] {
            #expect(!TokenCheck.authorizes(wrong, token: token), "\(wrong ?? "nil")")
        }
    }

    @Test func contextChangesAreReadAsTheCommandLineReadsThem() throws {
        let change = try DashboardServer.contextChange(
            Array(#"{"context": "C", "key": "operatingState", "value": "emergency"}"#.utf8))
        #expect(change.0 == "C")
        #expect(change.1 == "operatingState")
        #expect(change.2 == .string("emergency"))
        #expect(change.3 == nil)
        let number = try DashboardServer.contextChange(
            Array(#"{"key": "limit", "value": "21.5", "expectedVersion": 3}"#.utf8))
        #expect(number.0 == nil)
        #expect(number.2 == .number(21.5))
        #expect(number.3 == 3)
        for (body, reason) in [
            ("[]", "the request is not a JSON object"), (#"{"value": 1}"#, "the request has no key"),
            (#"{"key": "a"}"#, "the request has no value"),
            (#"{"key": "objectId", "value": 1}"#, "objectId identifies the context and cannot be changed"),
            (#"{"key": "a", "value": 1, "expectedVersion": -1}"#, "expectedVersion must be a whole number, at least 0"),
        ] {
            #expect(throws: CommandFailure.self) { try DashboardServer.contextChange(Array(body.utf8)) }
            do {
                _ = try DashboardServer.contextChange(Array(body.utf8))
            } catch {
                #expect(error.description == reason)
            }
        }
    }
}
