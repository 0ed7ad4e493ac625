import CProgramPages
import CoatyRuntime
import Logging
import ServiceLifecycle

#if canImport(Glibc)
    import Glibc
#endif

/// Unmaps the read-only pages of the program and its libraries once, a few seconds after the agent first came online,
/// so that the code only starting up ran (parsing the arguments and the configuration, building the controllers and
/// devices, the first advertisements) stops counting in its resident memory; what runs afterwards comes back on
/// first use.
///
/// Why it pays: the kernel maps a program's file pages 64 KiB at a time around each page touched (fault-around), and
/// starting up touches most of the static binary's 14 MiB of code: about 11 MiB of it stayed resident for good,
/// while a running agent uses about 3 MiB; libc, libstdc++ and libcrypto kept about 2.5 MiB more, of which it uses
/// less than a third. The pages are clean file pages that stay in the page cache (shared, and reclaimable under
/// memory pressure); only this process's mapping of them goes.
struct StartupCodeRelease: Service {
    let agent: Container
    let logger: Logger
    /// Time for what follows the start (associations, the first reads and publications) to run before the release.
    var delay: Duration = .seconds(5)

    func run() async throws {
        let line = try? await cancelWhenGracefulShutdown { [agent, delay] in
            for await state in agent.communicationManager.operatingStates() where state == .started {
                break
            }
            try await Task.sleep(for: delay)  // throws when the shutdown began meanwhile
            return Self.release()
        }
        if let line { logger.debug("\(line)") }
        try? await gracefulShutdown()
    }

    /// Unmaps the read-only pages of the program and its libraries now; a line for the log.
    static func release() -> String {
        var advised = 0
        guard coaty_program_unmap_read_only_segments(&advised) == 0 else {
            return
                "cannot unmap some start-up pages: \(String(cString: strerror(errno))) (\(advised / 1024) KiB unmapped)"
        }
        return
            "unmapped the read-only pages of the program and its libraries (\(advised / 1024) KiB) once started; "
            + "they come back as used"
    }
}
