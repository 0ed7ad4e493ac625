import ArgumentParser
import CoatyEdgeCLI
import CoatyEdgeOptions
import CoatyModel

struct Observe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch the IO values flowing between all agents, associations, agents and device status, live.",
        discussion: """
            Works with every Coaty agent: routes are learnt from IoNode advertisements and Associate events. On a \
            terminal it shows a table (source, value, rate, age, actors) with the latest events; into a pipe, one \
            line per event; with --json, one JSON object per event and line ("event", "time" in ms, ids and names); \
            with --summary, one line of counts every few seconds (agents, joins and leaves, sources, values per \
            second, agents with failing devices), for fleets too large to follow event by event. Ctrl-C or SIGTERM \
            stops it.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "Only this IO context.")
    var context: String?

    @Option(help: ArgumentHelp("Only this IO source, by objectId or name.", valueName: "id-or-name"))
    var source: String?

    @Option(help: "Only IO sources of this value type.")
    var valueType: String?

    @Option(
        help: ArgumentHelp(
            "Only the agents whose name matches this shell pattern, and their IO sources.", valueName: "pattern"))
    var agent: String?

    @Flag(help: "One JSON object per event and line.")
    var json = false

    @Flag(help: "One line of counts per interval instead of the events.")
    var summary = false

    @Option(help: ArgumentHelp("Seconds between the lines of --summary.", valueName: "seconds"))
    var every = Seconds(5)

    func validate() throws {
        if json && summary { throw ValidationError("choose one of --json and --summary") }
    }

    func run() async throws {
        try await perform {
            let filter = ObserveModel.Filter(
                context: context, source: source, valueType: valueType, agent: agent.map(NamePattern.init))
            let options = try connection.settings.communicationOptions()
            let output: ObserveSession.Output
            if summary {
                output = .summary(every: every.duration)
            } else if json {
                output = .json
            } else if StandardOutput.terminalSize() != nil {
                let namespace =
                    options.shouldEnableCrossNamespacing ? "all namespaces" : "namespace \(options.namespace)"
                output = .table(title: "coaty-edge observe  \(options.brokerDescription)  \(namespace)")
            } else {
                output = .lines
            }
            try await untilSignalled {
                try await connection.withSession { session in
                    await ObserveSession.run(session, filter: filter, output: output)
                }
            }
        }
    }
}

struct Agents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the agents online now with their IO sources and actors and their device status.",
        discussion: """
            Filters (all given must hold): --name and --point take shell patterns ('greenhouse-*'), --point also an \
            objectId. --brief prints one line per agent, --summary the counts per state, namespace and context and \
            the failing devices: both stay readable with a thousand agents.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(help: ArgumentHelp("Seconds to wait for the agents' answers.", valueName: "seconds"))
    var census = Seconds(2)

    @Option(help: ArgumentHelp("Only agents whose name matches this shell pattern.", valueName: "pattern"))
    var name: String?

    @Option(
        help: ArgumentHelp("Only agents in this state: ok, failing (a device fails), no-devices.", valueName: "state"))
    var state: AgentStateArgument?

    @Option(help: "Only agents with an IO node in this IO context.")
    var context: String?

    @Option(
        help: ArgumentHelp(
            "Only agents with this IO source or actor, by objectId or name pattern.", valueName: "id-or-pattern"))
    var point: String?

    @Option(help: "Only agents with an IO source or actor of this value type.")
    var valueType: String?

    @Flag(help: "One JSON object per agent and line.")
    var json = false

    @Flag(help: "One line per agent: state, name, agentId, IO points, contexts, first failing device.")
    var brief = false

    @Flag(help: "Counts per state, namespace and context, and the failing devices, instead of the agents.")
    var summary = false

    func validate() throws {
        if [json, brief, summary].filter({ $0 }).count > 1 {
            throw ValidationError("choose one of --json, --brief and --summary")
        }
    }

    func run() async throws {
        let census = self.census.duration
        let filter = AgentCensus.Filter(
            name: name.map(NamePattern.init), state: state?.state, context: context,
            point: point.map(NamePattern.init),
            valueType: valueType)
        try await connection.printAnswer(censusTimeout: AgentCensus.longestWait(for: census)) { session in
            await AgentCensus.take(session, duration: census)
        } as: { result in
            for shortfall in result.shortfalls { StandardError.write("coaty-edge agents: \(shortfall)\n") }
            let online = result.entries
            let entries = online.filter(filter.admits)
            guard entries.count > 0 || online.isEmpty || json else {
                return "no agents match (\(AgentCensus.counted(online.count, "agent")) online)\n"
            }
            return json
                ? AgentCensus.jsonLines(entries)
                : brief
                    ? AgentCensus.brief(entries) : summary ? AgentCensus.summary(entries) : AgentCensus.text(entries)
        }
    }
}

struct AgentStateArgument: ExpressibleByArgument {
    let state: AgentCensus.AgentState

    init?(argument: String) {
        guard let state = AgentCensus.AgentState(rawValue: argument) else { return nil }
        self.state = state
    }

    static var allValueStrings: [String] { AgentCensus.AgentState.allCases.map(\.rawValue) }
}

struct Context: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read and change the IO contexts the routers share.", subcommands: [Get.self, Set.self])

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the IO contexts (or the one named), with their version and properties.",
            discussion: "Exits 1 when no context answers.")

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "The IO context's name.")
        var context: String?

        @Option(help: ArgumentHelp("Seconds to wait for the routers' answers.", valueName: "seconds"))
        var timeout = Seconds(2)

        @Flag(help: "Each context as one JSON object per line.")
        var json = false

        func run() async throws {
            let (name, timeout) = (context, self.timeout.duration)
            try await connection.printAnswer { session in
                await ContextCommands.discover(session, name: name, timeout: timeout)
            } as: { contexts in
                guard !contexts.isEmpty else {
                    throw CommandFailure(
                        .failure, "no IO context\(name.map { " named \($0)" } ?? "") answered within \(timeout)")
                }
                return contexts.map { json ? $0.object.description + "\n" : ContextCommands.text($0) }.joined()
            }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a property of an IO context; its router re-evaluates the routing.",
            discussion: """
                VALUE is read as JSON if it is valid JSON (21.5, true, "emergency", {"a": 1}), else taken as a string. \
                The whole context is sent as an Update; the last writer wins, as with Coaty JS agents. \
                --expected-version N asks the router to refuse it unless the context is still at version N (read it \
                with `context get`). Prints the new version, or why the router refused (exit 1).
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The property to set.")
        var key: String

        @Argument(help: "Its new value: JSON, or else a string.")
        var value: String

        @Option(help: "The IO context's name; needed when several contexts answer.")
        var context: String?

        @Option(help: ArgumentHelp("Change it only if it is still at this version.", valueName: "N"))
        var expectedVersion: Int?

        @Option(
            help: ArgumentHelp("Seconds to wait for the context and for the router's answer.", valueName: "seconds"))
        var timeout = Seconds(3)

        func validate() throws {
            if let refusal = ContextCommands.refusal(forKey: key) { throw ValidationError(refusal) }
            if let expectedVersion, expectedVersion < 0 {
                throw ValidationError("--expected-version must not be negative")
            }
        }

        func run() async throws {
            let (name, key, value, timeout) = (
                context, key, ContextCommands.parseValue(self.value), self.timeout.duration
            )
            let expectedVersion = self.expectedVersion
            try await connection.printAnswer { session in
                try await ContextCommands.setProperty(
                    session, contextName: name, key: key, value: value, expectedVersion: expectedVersion,
                    timeout: timeout)
            } as: { line in
                line + "\n"
            }
        }
    }
}
