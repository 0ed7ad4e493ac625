import Foundation
import Synchronization

/// A child process started with every signal unblocked and at its default action.
///
/// Foundation's `Process` passes on the spawning thread's signal mask, and Swift concurrency's threads block SIGTERM:
/// mosquitto restores that mask around its event loop and would never see SIGTERM.
package final class SpawnedProcess: Sendable {
    package let pid: pid_t
    private let exitStatus = Mutex<Int32?>(nil)

    /// Runs `executable` with standard output discarded and standard error written to `errorFile`.
    package init(_ executable: URL, arguments: [String], errorFile: URL) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, errorFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, executable.path, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw TestSupportError("cannot start \(executable.path): errno \(rc)") }
        self.pid = pid
    }

    deinit {
        if isRunning {
            Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    package var isRunning: Bool {
        exitStatus.withLock { exitStatus in
            guard exitStatus == nil else { return false }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return true }
            exitStatus = status
            return false
        }
    }

    package func signal(_ signal: Int32) {
        if isRunning { Glibc.kill(pid, signal) }
    }

    /// Waits until the process has exited; polls, as a child's exit is not awaitable otherwise without SIGCHLD.
    package func waitForExit() async throws {
        try await waitUntil("process \(pid) to exit") { !isRunning }
    }
}
