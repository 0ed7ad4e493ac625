import CoatyTestSupport
import MQTTTestSupport
import Testing

@Suite struct ExecutableTests {
    /// The emulation loads libumockdev (and with it GLib, GIO, D-Bus, ...) only for emulated devices, so the agent
    /// on a Pi's real hardware neither needs those packages nor maps them.
    @Test func theExecutableDoesNotNeedUMockdevOrGLib() async throws {
        let result = try await Command(["ldd", Executable.path]).run()
        try #require(result.succeeded, "\(result.errors)")
        #expect(result.output.contains("libmosquitto"))
        for library in ["libumockdev", "libglib-2.0", "libgobject-2.0", "libgio-2.0"] {
            #expect(!result.output.contains(library), "\(library) is linked:\n\(result.output)")
        }
    }

    /// A client whose MQTT socket gets a descriptor from 1024 on still connects: libmosquitto's own loop waits with
    /// select(), which refuses such a descriptor ("Invalid function arguments provided"), and a client that used it
    /// until the broker accepted never connected in a process with many files open (a test process, a fleet
    /// simulation). bash fills the descriptors below 1100 before it runs the client.
    @Test func aClientConnectsWithASocketDescriptorBeyondSelectsLimit() async throws {
        let broker = try await TestBroker.started()
        let fill = #"for fd in $(seq 3 1100); do eval "exec $fd</dev/null" || exit 90; done; exec "$0" "$@""#
        let result = try await Command(
            [
                "bash", "-c", fill, Executable.path, "agents", "--json", "--census", "1", "--broker",
                "mqtt://127.0.0.1:\(broker.port)",
            ]
        ).run(timeout: .seconds(60))
        #expect(result.status != 90, "bash could not open 1100 files: \(result.errors)")
        #expect(result.succeeded, "exit \(result.status): \(result.errors)")
    }
}
