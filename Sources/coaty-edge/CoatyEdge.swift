import ArgumentParser
import CoatyEdgeCLI
import CoatyEdgeOptions

@main
struct CoatyEdge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coaty-edge",
        abstract:
            "A Coaty agent for sensors and GPIO on Linux single-board computers, and tools to watch and steer agents.",
        discussion: """
            Exit statuses: 0 success; 1 refused or unanswered; 64 wrong command line; 69 broker unreachable; \
            78 invalid configuration or rule files, a password file others may read, or run as root.
            """,
        version: BuildInfo.description(commit: buildCommit),
        subcommands: [
            Run.self, Observe.self, Agents.self, Rules.self, Context.self, Shared.self, Config.self, HomeAssistant.self,
            Dashboard.self,
        ])
}

/// Exits with `status`; a failing status without a message (the output said it all).
func exit(_ status: ExitStatus) throws {
    guard status == .success else { throw ExitCode(status.rawValue) }
}
