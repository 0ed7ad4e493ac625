import CSpawnActions
import Glibc

/// Why a child could not be started: the error number posix_spawn returned.
package struct SpawnError: Error {
    package let code: Int32
}

/// Starts `executable` with standard input and output on /dev/null, standard error written to `errorFile` and no other
/// descriptor, with every signal unblocked and at its default action, and returns its process id.
///
/// A child inherits the spawning thread's signal mask, and Swift concurrency's threads block SIGTERM: mosquitto restores
/// that mask around its event loop and would never see the SIGTERM that stops it. Foundation's `Process` passes the
/// mask on; this does not, and needs no Foundation (the bench keeps it out of its process).
package func spawnWithDefaultSignals(
    _ executable: String, arguments: [String], errorFile: String
) throws(SpawnError) -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, errorFile, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    // Nothing else of this process: a descriptor another thread holds open meanwhile without close-on-exec (the
    // write end of a pipe whose reader waits for its end, a script being written) would stay open as long as the
    // child lives, which for a broker is the whole test.
    c_spawn_actions_close_from(&actions, 3)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var signals = sigset_t()
    sigemptyset(&signals)
    posix_spawnattr_setsigmask(&attributes, &signals)
    sigfillset(&signals)
    posix_spawnattr_setsigdefault(&attributes, &signals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    var pid = pid_t()
    let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
    guard rc == 0 else { throw SpawnError(code: rc) }
    return pid
}
