import ArgumentParser
import CoatyEdgeCLI
import CoatyEdgeOptions
import CoatyIORouting
import CoatyModel

struct Rules: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Routing rule files, and what the routers associated by them.", subcommands: [Check.self, Show.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check rule files: each directory as one router's rule set, each file on its own.",
            discussion:
                "Prints a summary when all are valid; else each error with file, JSON path and reason, and exits 78. "
                + "Warnings (a property Coaty does not define, read by a condition) are printed too; alone they exit 0."
        )

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
            discussion: """
                Lists the associations of each router when they are few (at most --limit), else counts them per rule \
                and value type; --page N lists one page, --all every association (read page by page, each answer \
                of a router stays below 64 KiB). The filters narrow what is listed and counted; all given must \
                hold. Exits 1 when no router answers.
                """)

        @OptionGroup var connection: ConnectionOptions

        @Option(help: ArgumentHelp("Seconds to wait for the routers' answers.", valueName: "seconds"))
        var timeout = Seconds(2)

        @Flag(help: "One JSON object per router and line.")
        var json = false

        @Flag(help: "Only the counts per rule and value type.")
        var summary = false

        @Option(help: ArgumentHelp("List this page of the associations (from 1), --limit a page.", valueName: "number"))
        var page: Int?

        @Option(
            help: ArgumentHelp(
                "Associations a page (1 to 100000); more are summarised unless --page or --all.", valueName: "count"))
        var limit = RouterReport.defaultPageSize

        @Flag(help: "List every association, however many.")
        var all = false

        @Option(help: "Only the routers of this IO context.")
        var context: String?

        @Option(
            help: ArgumentHelp(
                "Only associations made by a rule whose name matches this shell pattern.", valueName: "pattern"))
        var rule: String?

        @Option(
            help: ArgumentHelp(
                "Only associations of an IO source with this objectId or a name matching this pattern.",
                valueName: "id-or-pattern"))
        var source: String?

        @Option(
            help: ArgumentHelp(
                "Only associations of an IO actor with this objectId or a name matching this pattern.",
                valueName: "id-or-pattern"))
        var actor: String?

        @Option(
            help: ArgumentHelp(
                "Only associations with a source or actor of an agent with this objectId or a name matching this pattern "
                    + "(the agents are asked for their names for --timeout first).", valueName: "id-or-pattern"))
        var agent: String?

        func validate() throws {
            guard [summary, page != nil, all].filter(\.self).count <= 1 else {
                throw ValidationError("--summary, --page and --all exclude each other")
            }
            guard (1...IoAssociationQuery.maximumLimit).contains(limit) else {
                throw ValidationError("--limit must be 1 to \(IoAssociationQuery.maximumLimit)")
            }
            if let page, page < 1 || page > Int(Int32.max) / limit {
                throw ValidationError("--page must be 1 or more, within reach of --limit")
            }
            for (name, value) in [
                ("context", context), ("rule", rule), ("source", source), ("actor", actor), ("agent", agent),
            ] {
                if value?.isEmpty == true { throw ValidationError("--\(name) must not be empty") }
            }
        }

        func run() async throws {
            let timeout = self.timeout.duration
            var filters = IoAssociationQuery()
            filters.context = context
            filters.rule = rule.map(NamePattern.init)
            filters.source = source.map(NamePattern.init)
            filters.actor = actor.map(NamePattern.init)
            let view: RouterReport.View = summary ? .summary : all ? .all : page.map { .page($0) } ?? .automatic
            let (agent, limit, base) = (self.agent, self.limit, filters)
            try await connection.printAnswer(censusTimeout: timeout) { session in
                var filters = base
                if let agent {
                    filters.agentIds = try await RouterReport.agentIds(
                        matching: NamePattern(agent), session: session, census: timeout)
                }
                return try await RouterReport.collect(
                    session, filters: filters, view: view, pageSize: limit, timeout: timeout)
            } as: { answers in
                guard !answers.isEmpty else { throw CommandFailure(.failure, "no router answered within \(timeout)") }
                return json ? RouterReport.jsonLines(answers) : RouterReport.text(answers, view: view, pageSize: limit)
            }
        }
    }
}
