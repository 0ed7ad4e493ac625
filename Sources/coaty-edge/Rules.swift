import ArgumentParser
import CoatyEdgeCLI
import CoatyEdgeOptions

struct Rules: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Routing rule files, and what the routers associated by them.", subcommands: [Check.self, Show.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check rule files: each directory as one router's rule set, each file on its own.",
            discussion:
                "Prints a summary when all are valid; else each error with file, JSON path and reason, and exits 78. "
                + "Warnings (a property Coaty does not define, read by a condition) are printed too; alone they exit 0.")

        @Argument(help: ArgumentHelp("Rule files or directories of rule files.", valueName: "file-or-directory"))
        var paths: [String]

        func validate() throws {
            guard !paths.isEmpty else { throw ValidationError("name at least one rule file or directory") }
        }

        func run() throws {
            try report(Checks.rules(paths))
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask every coaty-edge router for its context and associations (source → actor, rule, rate).",
            discussion: "Exits 1 when no router answers.")

        @OptionGroup var connection: ConnectionOptions

        @Option(help: ArgumentHelp("Seconds to wait for the routers' answers.", valueName: "seconds"))
        var timeout = Seconds(2)

        @Flag(help: "One JSON object per router and line.")
        var json = false

        func run() async throws {
            try await perform {
                let timeout = self.timeout.duration
                let answers = try await connection.withSession { session in
                    try await RouterReport.collect(session, timeout: timeout)
                }
                guard !answers.isEmpty else { throw CommandFailure(.failure, "no router answered within \(timeout)") }
                StandardOutput.write(json ? RouterReport.jsonLines(answers) : RouterReport.text(answers))
            }
        }
    }
}
