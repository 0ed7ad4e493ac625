import ArgumentParser
import CoatyEdgeCLI

@main
struct CoatyEdge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coaty-edge",
        abstract: "A Coaty agent for sensors and GPIO on Linux single-board computers, and tools to watch and steer agents.",
        discussion: """
            Exit statuses: 0 success; 1 refused or unanswered; 64 wrong command line; 69 broker unreachable; \
            78 invalid configuration or rule files, a password file others may read, or run as root.
            """,
        version: BuildInfo.description,
        subcommands: [Run.self, Observe.self, Agents.self, Rules.self, Context.self, Shared.self, Config.self, HomeAssistant.self])
}

/// Runs a subcommand's work; a `CommandFailure` becomes its message on standard error and its exit status.
func perform(_ work: () async throws -> Void) async throws {
    do {
        try await work()
    } catch let failure as CommandFailure {
        StandardError.write("coaty-edge: \(failure.description)\n")
        throw ExitCode(failure.status.rawValue)
    }
}

/// Exits with `status`; a failing status without a message (the output said it all).
func exit(_ status: ExitStatus) throws {
    guard status == .success else { throw ExitCode(status.rawValue) }
}
