import Foundation
import ProcessSpawning
import Synchronization

/// A child process started with every signal unblocked and at its default action.
///
/// Foundation's `Process` passes on the spawning thread's signal mask, and Swift concurrency's threads block SIGTERM:
/// mosquitto restores that mask around its event loop and would never see SIGTERM (see `spawnWithDefaultSignals`).
package final class SpawnedProcess: Sendable {
    package let pid: pid_t
    private let exitStatus = Mutex<Int32?>(nil)

    /// Runs `executable` with standard output discarded and standard error written to `errorFile`.
    package init(_ executable: URL, arguments: [String], errorFile: URL) throws {
        do {
            pid = try spawnWithDefaultSignals(executable.path, arguments: arguments, errorFile: errorFile.path)
        } catch {
            throw TestSupportError("cannot start \(executable.path): errno \(error.code)")
        }
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
