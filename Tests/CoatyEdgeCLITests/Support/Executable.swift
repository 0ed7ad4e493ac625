import CoatyTestSupport
import Foundation
import MQTTTestSupport

/// The built `coaty-edge`, next to the test bundle in the build products directory (the test target depends on
/// the executable, so `swift build --build-tests` builds it).
enum Executable {
    static let path: String = {
        let bundle =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: bundle).deletingLastPathComponent().appendingPathComponent("coaty-edge").path
    }()

    /// Variables of this process a child must not inherit besides the emulation's (which ChildProcess drops, so
    /// that `run` with emulated devices sets them up itself, as it does outside the tests): systemd's
    /// notification socket.
    static let isolated = ["NOTIFY_SOCKET"]

    /// Runs `coaty-edge ARGUMENTS` to its end (killed after `timeout`).
    static func run(
        _ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(60),
        allowRoot: Bool = true
    ) async throws -> CommandResult {
        try await command(arguments, environment: environment, allowRoot: allowRoot).run(timeout: timeout)
    }

    /// Starts `coaty-edge ARGUMENTS`; every wait on it has a time limit.
    static func start(
        _ arguments: [String], environment: [String: String] = [:], allowRoot: Bool = true
    ) async throws -> CoatyTestSupport.ChildProcess {
        try await CoatyTestSupport.ChildProcess(command(arguments, environment: environment, allowRoot: allowRoot))
    }

    /// Children start through env(1), which drops the isolated variables the test does not set itself. Every
    /// `coaty-edge run` of the tests starts here: with `allowRoot` it gets `--allow-root`, since the tests may run as
    /// root (in containers and CI they do), which `run` refuses otherwise.
    static func command(_ arguments: [String], environment: [String: String], allowRoot: Bool = true) -> Command {
        let unset = isolated.filter { environment[$0] == nil }.flatMap { ["-u", $0] }
        let rootFlag =
            allowRoot && arguments.first == "run" && !arguments.contains("--allow-root") ? ["--allow-root"] : []
        return Command(unset + [path] + arguments + rootFlag, environment: environment)
    }
}

/// The objects of `observe --json` output, parsed.
func jsonLines(_ text: String) -> [[String: Any]] {
    text.split(separator: "\n").compactMap { line in
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}
