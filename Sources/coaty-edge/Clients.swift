import ArgumentParser
import CoatyEdgeCLI
import CoatyEdgeOptions

struct Observe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch the IO values flowing between all agents, associations, agents and device status, live.",
        discussion: """
            Works with every Coaty agent: routes are learnt from IoNode advertisements and Associate events. On a \
            terminal it shows a table (source, value, rate, age, actors) with the latest events; into a pipe, one \
            line per event; with --json, one JSON object per event and line ("event", "time" in ms, ids and names). \
            Ctrl-C or SIGTERM stops it.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "Only this IO context.")
    var context: String?

    @Option(help: ArgumentHelp("Only this IO source, by objectId or name.", valueName: "id-or-name"))
    var source: String?

    @Option(help: "Only IO sources of this value type.")
    var valueType: String?

    @Flag(help: "One JSON object per event and line.")
    var json = false

    func run() async throws {
        try await perform {
            let filter = ObserveModel.Filter(context: context, source: source, valueType: valueType)
            let options = try connection.settings.communicationOptions()
            let output: ObserveSession.Output
            if json {
                output = .json
            } else if StandardOutput.terminalSize() != nil {
                let namespace = options.shouldEnableCrossNamespacing ? "all namespaces" : "namespace \(options.namespace)"
                output = .table(title: "coaty-edge observe  \(options.host):\(options.port)  \(namespace)")
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
        abstract: "List the agents online now with their IO sources and actors and their device status.")

    @OptionGroup var connection: ConnectionOptions

    @Option(help: ArgumentHelp("Seconds to wait for the agents' answers.", valueName: "seconds"))
    var census = Seconds(2)

    @Flag(help: "One JSON object per agent and line.")
    var json = false

    func run() async throws {
        try await perform {
            let census = self.census.duration
            let entries = try await connection.withSession(censusTimeout: census) { session in
                await AgentCensus.take(session, duration: census)
            }
            StandardOutput.write(json ? AgentCensus.jsonLines(entries) : AgentCensus.text(entries))
        }
    }
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
            try await perform {
                let (name, timeout) = (context, self.timeout.duration)
                let contexts = try await connection.withSession { session in
                    await ContextCommands.discover(session, name: name, timeout: timeout)
                }
                guard !contexts.isEmpty else {
                    throw CommandFailure(.failure, "no IO context\(name.map { " named \($0)" } ?? "") answered within \(timeout)")
                }
                StandardOutput.write(contexts.map { json ? $0.object.description + "\n" : ContextCommands.text($0) }.joined())
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

        @Option(help: ArgumentHelp("Seconds to wait for the context and for the router's answer.", valueName: "seconds"))
        var timeout = Seconds(3)

        func validate() throws {
            if let refusal = ContextCommands.refusal(forKey: key) { throw ValidationError(refusal) }
            if let expectedVersion, expectedVersion < 0 { throw ValidationError("--expected-version must not be negative") }
        }

        func run() async throws {
            try await perform {
                let (name, key, value, timeout) = (context, key, ContextCommands.parseValue(self.value), self.timeout.duration)
                let expectedVersion = self.expectedVersion
                let line = try await connection.withSession { session in
                    try await ContextCommands.setProperty(
                        session, contextName: name, key: key, value: value, expectedVersion: expectedVersion, timeout: timeout)
                }
                StandardOutput.write(line + "\n")
            }
        }
    }
}
