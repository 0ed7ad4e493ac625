import ArgumentParser
import CoatyEdgeCLI
import CoatyEdgeOptions

struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Agent configuration files.", subcommands: [Check.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check an agent configuration (routers, rules, devices) without starting anything.",
            discussion:
                "Prints a summary when it is valid; else each error with file, JSON path and reason, and exits 78. "
                + "Warnings about what the rules read are printed too; alone they exit 0.")

        @Argument(help: ArgumentHelp("The agent configuration.", valueName: "file"))
        var file: String

        @Flag(
            help: "Accept a passwordFile that its group or others may read, as `run --allow-open-password-file` does.")
        var allowOpenPasswordFile = false

        func run() throws {
            try report(Checks.configuration(file, allowsOpenPasswordFile: allowOpenPasswordFile))
        }
    }
}

/// Prints a check's report and exits with its status.
func report(_ report: Checks.Report) throws {
    if !report.output.isEmpty { StandardOutput.write(report.output) }
    if !report.errors.isEmpty { StandardError.write(report.errors) }
    try exit(report.status)
}
