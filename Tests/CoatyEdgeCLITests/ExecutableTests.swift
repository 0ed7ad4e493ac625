import CoatyTestSupport
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
}
