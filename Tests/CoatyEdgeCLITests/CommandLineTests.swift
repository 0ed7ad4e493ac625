import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// The built `coaty-edge` run as a child process, each subcommand end to end against a real mosquitto.
/// Every child is bounded by a time limit.
@Suite(.serialized) struct CommandLineTests {
    // MARK: - Checks

    @Test func rulesCheckPrintsEachErrorWithFileJSONPathAndReason() async throws {
        let scratch = try ScratchDirectory("coaty-cli")
        let good = try scratch.write(Agents.rules, to: "good/rules.json").path
        let bad = try scratch.write(
            #"""
            {"rules": [
              {"name": "a", "valueType": "*", "condition": {"frobnicate": [1]}},
              {"name": "b", "valueType": 5, "condition": true}
            ]}
            """#, to: "bad.json"
        ).path

        let valid = try await Executable.run(["rules", "check", scratch.url.appendingPathComponent("good").path, good])
        #expect(valid.status == 0)
        #expect(
            valid.outputLines == [
                "\(scratch.url.path)/good: 2 rules in 1 file: temperature-normal, temperature-emergency",
                "\(good): 2 rules in 1 file: temperature-normal, temperature-emergency",
            ])

        let invalid = try await Executable.run(["rules", "check", good, bad])
        #expect(invalid.status == 78)
        #expect(invalid.output.isEmpty)
        #expect(
            invalid.errors == """
                \(bad): $.rules[0].condition.frobnicate: unknown operator "frobnicate"
                \(bad): $.rules[1].valueType: expected a string, found number

                """)

        let missing = try await Executable.run([
            "rules", "check", scratch.url.appendingPathComponent("absent.json").path,
        ])
        #expect(missing.status == 78)
        #expect(
            missing.errors.hasPrefix("\(scratch.url.path)/absent.json: cannot read the file: No such file or directory")
        )
    }

    @Test func rulesCheckRefusesUnknownVariablesAndWarnsOfUnknownProperties() async throws {
        let scratch = try ScratchDirectory("coaty-cli")
        let typo = try scratch.write(
            #"""
            {"rules": [{"name": "a", "valueType": "*", "condition": {"===": [{"var": "contxt.operatingState"}, "normal"]}}]}
            """#, to: "typo.json"
        ).path
        let member = try scratch.write(
            #"""
            {"rules": [{"name": "b", "valueType": "*", "condition": {"==": [{"var": "source.valueTyp"}, "t"]}}]}
            """#, to: "member.json"
        ).path

        let refused = try await Executable.run(["rules", "check", typo])
        #expect(refused.status == 78)
        #expect(refused.output.isEmpty)
        #expect(
            refused.errors == """
                \(typo): $.rules[0].condition["==="][0].var: unknown variable "contxt.operatingState": a condition reads \
                source, sourceNode, actor, actorNode, context and shared, not "contxt" (did you mean "context"?)

                """)

        let warned = try await Executable.run(["rules", "check", member])
        #expect(warned.status == 0)
        #expect(warned.outputLines == ["\(member): 1 rule in 1 file: b"])
        #expect(
            warned.errors == """
                \(member): $.rules[0].condition["=="][0].var: warning: variable "source.valueTyp": source is an IoSource, \
                which has no property "valueTyp" (did you mean "valueType"?); it reads null unless another agent adds it

                """)

        // `config check` knows the router's context, so it also warns of a context property the context lacks.
        try scratch.write(
            #"""
            {"rules": [{"name": "c", "valueType": "*", "condition": {"==": [{"var": "context.operatingStat"}, "normal"]}}]}
            """#, to: "rules/context.json")
        let router = try scratch.write(Agents.router(broker: 1883, rules: "rules"), to: "router.json").path
        let configured = try await Executable.run(["config", "check", router])
        #expect(configured.status == 0)
        #expect(configured.outputLines.first == "\(router): OK")
        #expect(
            configured.errors == """
                \(scratch.url.path)/rules/context.json: $.rules[0].condition["=="][0].var: warning: variable \
                "context.operatingStat": context is an IoContext, which has no property "operatingStat" (did you mean \
                "operatingState"?); it reads null unless another agent adds it

                """)
    }

    @Test func configCheckSummarisesAValidConfigurationAndNamesTheErrorOfAnInvalidOne() async throws {
        let scratch = try ScratchDirectory("coaty-cli")
        try scratch.write(Agents.rules, to: "rules/rules.json")
        let router = try scratch.write(Agents.router(broker: 1883, rules: "rules"), to: "router.json").path
        let sensors = try scratch.write(
            Agents.sensors(broker: 1883, extra: #", "metrics": {"port": 9464}"#), to: "sensors.json"
        ).path
        let bad = try scratch.write(
            Agents.sensors(broker: 1883).replacingOccurrences(of: "\"0x48\"", with: "\"0x10\""), to: "bad.json"
        ).path

        let routerCheck = try await Executable.run(["config", "check", router])
        #expect(routerCheck.status == 0)
        #expect(routerCheck.outputLines.first == "\(router): OK")
        #expect(
            routerCheck.output.contains(
                "  router     router: context TemperatureMeasurement, 2 rules from \(scratch.url.path)/rules (reloaded on change)\n"
            ))

        let sensorsCheck = try await Executable.run(["config", "check", sensors])
        #expect(sensorsCheck.status == 0)
        #expect(sensorsCheck.output.contains("  identity   Temperature sensors (\(Agents.sensorsAgentId))\n"))
        #expect(sensorsCheck.output.contains("  IO node    TemperatureMeasurement: 1 source, 0 actors\n"))
        #expect(sensorsCheck.output.contains("  devices    1 sensor, 0 outputs, 0 inputs, emulated\n"))
        #expect(sensorsCheck.output.contains("  metrics    http://127.0.0.1:9464/metrics\n"))

        let badCheck = try await Executable.run(["config", "check", bad])
        #expect(badCheck.status == 78)
        #expect(
            badCheck.errors
                == "\(bad): $.devices.sensors[0].address: 0x10 is not an address of the tmp102 (0x48...0x4B)\n")

        // `run` checks the same way before it starts anything.
        let badRun = try await Executable.run(["run", "--config", bad])
        #expect(badRun.status == 78)
        #expect(
            badRun.errors
                == "coaty-edge: invalid configuration: \(bad): $.devices.sensors[0].address: 0x10 is not an address of the tmp102 (0x48...0x4B)\n"
        )
    }

    @Test func clientsSayWhenTheBrokerCannotBeReached() async throws {
        let port = try freeLoopbackPort()
        let result = try await Executable.run([
            "agents", "--broker", "mqtt://127.0.0.1:\(port)", "--connect-timeout", "1",
        ])
        #expect(result.status == 69)
        #expect(
            result.errors.hasSuffix(
                "\ncoaty-edge: cannot connect to the broker at 127.0.0.1:\(port): connection refused\n"))
        let usage = try await Executable.run(["agents", "--broker", "http://127.0.0.1"])
        #expect(usage.status == 64)
    }

    /// What is not a regular file, or is too large, is refused at once with the file and the reason: a device is not
    /// read without end, and a FIFO does not block the check (nor the client that reads a password from it).
    @Test func filesThatAreDevicesFIFOsDirectoriesOrTooLargeAreRefusedAtOnce() async throws {
        let scratch = try ScratchDirectory("coaty-cli")
        try scratch.write(Agents.rules, to: "rules/a.json")
        let fifo = scratch.url.appendingPathComponent("rules/x.json").path
        try makeFIFO(fifo)
        let large = try scratch.write(
            #"{"communication": {"brokerUrl": "mqtt://127.0.0.1"}}"# + String(repeating: " ", count: 2 << 20),
            to: "large.json"
        ).path
        let password = scratch.url.appendingPathComponent("password").path
        try makeFIFO(password)
        let authority = scratch.url.appendingPathComponent("ca.crt").path
        try makeFIFO(authority)
        let port = try freeLoopbackPort()

        let cases: [(arguments: [String], status: Int32, error: String)] = [
            (["config", "check", "/dev/zero"], 78, "/dev/zero: not a regular file (a character device)\n"),
            (["rules", "check", "/dev/zero"], 78, "/dev/zero: not a regular file (a character device)\n"),
            (["config", "check", scratch.url.path], 78, "\(scratch.url.path): not a regular file (a directory)\n"),
            (["config", "check", large], 78, "\(large): 2.1 MiB is larger than the limit of 1 MiB\n"),
            (
                ["rules", "check", scratch.url.appendingPathComponent("rules").path], 78,
                "\(fifo): not a regular file (a FIFO)\n"
            ),
            (
                ["agents", "--broker", "mqtt://127.0.0.1:\(port)", "--password-file", password], 64,
                "coaty-edge: \(password): not a regular file (a FIFO)\n"
            ),
            // libmosquitto opens the TLS files itself.
            (
                ["agents", "--broker", "mqtts://127.0.0.1:\(port)", "--ca-file", authority], 64,
                "coaty-edge: \(authority): not a regular file (a FIFO)\n"
            ),
        ]
        for (arguments, status, error) in cases {
            // Under an address-space limit, so that a regression that reads a device without end fails here at once
            // instead of taking the machine's memory until the time limit.
            var command = Executable.command(arguments, environment: [:])
            let program = try #require(command.arguments.firstIndex(of: Executable.path))
            command.arguments.insert(
                contentsOf: ["/bin/sh", "-c", #"ulimit -v 2097152 && exec "$0" "$@""#], at: program)
            let result: CommandResult
            do {
                result = try await command.run(timeout: .seconds(20))
            } catch {
                Issue.record("\(arguments): \(error)")
                continue
            }
            #expect(result.status == status, "\(arguments): \(result.errors)")
            #expect(result.errors == error, "\(arguments)")
        }
    }

    @Test func everySubcommandHasHelp() async throws {
        let subcommands = [
            "run", "observe", "agents", "rules", "rules check", "rules show", "context", "context get", "context set",
            "config", "config check",
        ]
        for subcommand in subcommands {
            let words = subcommand.split(separator: " ").map(String.init)
            let help = try await Executable.run(words + ["--help"])
            #expect(help.status == 0, "\(subcommand): \(help.errors)")
            #expect(help.output.hasPrefix("OVERVIEW: "), "\(subcommand): \(help.output)")
            #expect(help.output.contains("USAGE: coaty-edge \(subcommand) "), "\(subcommand): \(help.output)")
        }
        let top = try await Executable.run(["--help"])
        #expect(top.status == 0)
        for subcommand in ["run", "observe", "agents", "rules", "context", "config", "shared"] {
            #expect(top.output.contains("\n  \(subcommand) "), "\(subcommand) missing from: \(top.output)")
        }
    }

    /// "inf" and "nan" parse as numbers; a wait made of one used to crash the client when it became a Duration.
    @Test(arguments: [
        ["agents", "--census", "inf"], ["agents", "--census=nan"], ["agents", "--census", "0"],
        ["agents", "--connect-timeout", "1e300"], ["context", "get", "--timeout=-1"],
        ["rules", "show", "--timeout", "inf"],
        ["context", "set", "operatingState", "normal", "--timeout", "nan"],
        ["shared", "get", "setpoints", "--timeout", "inf"],
        ["shared", "watch", "setpoints", "--timeout=0"],
    ])
    func waitsMustBeFiniteAndPositive(arguments: [String]) async throws {
        let port = try freeLoopbackPort()
        let result = try await Executable.run(arguments + ["--broker", "mqtt://127.0.0.1:\(port)"])
        #expect(result.status == 64, "\(result.errors)")
        #expect(result.errors.contains("is invalid for '--"), "\(result.errors)")
    }

    // MARK: - The agent and the clients on a broker

    /// `run` on emulated hardware: systemd hears READY=1, `observe --json` sees the values it publishes, the metrics
    /// grow, and SIGTERM makes it tell systemd STOPPING=1, deadvertise and exit 0.
    @Test(.emulatedHardware) func runPublishesValuesObserveShowsThemAndSIGTERMEndsItCleanly() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        try scratch.write(Agents.rules, to: "rules/rules.json")
        let metricsPort = try freeLoopbackPort()
        let configs = (
            router: try scratch.write(Agents.router(broker: broker.port, rules: "rules"), to: "router.json").path,
            actor: try scratch.write(
                Agents.actor(broker: broker.port, state: "normal", id: Agents.normalActorId, name: "Normal"),
                to: "actor.json"
            ).path,
            sensors: try scratch.write(Agents.sensors(broker: broker.port), to: "sensors.json").path
        )
        let router = try await Executable.start(["run", "--config", configs.router])
        let actor = try await Executable.start(["run", "--config", configs.actor])
        let notify = try NotifySocket(name: scratch.url.appendingPathComponent("notify").path)
        let observe = try await Executable.start(["observe", "--json", "--broker", "mqtt://127.0.0.1:\(broker.port)"])
        let sensors = try await Executable.start(
            ["run", "--config", configs.sensors, "--metrics-port", "\(metricsPort)", "--log-level", "debug"],
            environment: ["NOTIFY_SOCKET": notify.name])

        #expect(try await notify.receive() == "READY=1")
        let value = try await observe.line(containing: #""event":"value""#, within: .seconds(30))
        let event = try #require(jsonLines(value).first)
        #expect(event["sourceId"] as? String == Agents.sourceId)
        #expect(event["sourceName"] as? String == "Boiler")
        #expect(event["agentName"] as? String == "Temperature sensors")
        #expect(event["value"] is Double)
        #expect(event["time"] is Int)

        let first = try await readCounter(port: metricsPort)
        try await waitUntil("the read counter to grow") { try await readCounter(port: metricsPort) > first }

        // Every family the agent promises is there, per source where it counts per source. A malformed message on a
        // topic the agent listens to (every agent answers Discover) is counted as rejected.
        let source = "{source=\"\(Agents.sourceId)\"}"
        let published = try await scrape(port: metricsPort)
        for name in ["values_read_total", "values_published_total", "values_routed_total"] {
            #expect((published["coaty_edge_\(name)\(source)"] ?? 0) > 0, "coaty_edge_\(name) in \(published)")
        }
        let noAssociation = "{source=\"\(Agents.sourceId)\",reason=\"no association\"}"
        #expect(published["coaty_edge_values_dropped_total\(noAssociation)"] != nil, "\(published)")
        #expect(
            published["coaty_edge_sensor_errors_total{sensor=\"TMP102 at 0x48 on /dev/i2c-1\"}"] == 0, "\(published)")
        #expect(published["coaty_edge_reconnects_total"] == 0, "\(published)")
        #expect(published["coaty_edge_messages_rejected_total{reason=\"malformed\"}"] == 0, "\(published)")
        let malformed = try await Command(
            "mosquitto_pub", "-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "coaty/3/-/DSC/intruder/1", "-m",
            "{not json"
        ).run(timeout: .seconds(20))
        #expect(malformed.status == 0, "\(malformed.errors)")
        try await waitUntil("the rejected counter to count the malformed message") {
            try await scrape(port: metricsPort)["coaty_edge_messages_rejected_total{reason=\"malformed\"}"] == 1
        }

        let stopped = try await sensors.stop(with: SIGTERM, within: .seconds(20))
        #expect(stopped.status == 0, "\(stopped.errors)")
        #expect(try await notify.receive() == "STOPPING=1")
        // The agent itself sent the Deadvertise (the broker publishing its will would not be "received from" it).
        try await broker.waitForLog(
            containing:
                "Received PUBLISH from \(Agents.sensorsClientId) (d0, q0, r0, m0, 'coaty/3/-/DAD/\(Agents.sensorsAgentId)'"
        )
        let left = try await observe.line(containing: #""event":"agentLeft""#)
        #expect(jsonLines(left).first?["agentId"] as? String == Agents.sensorsAgentId)
        // The log went to standard error, a line per event with time, level and label.
        #expect(stopped.errors.contains(" info coaty-edge.Temperature sensors: agent Temperature sensors stopped\n"))

        for child in [observe, actor, router] {
            #expect(try await child.stop(with: SIGTERM).status == 0)
        }
        try await broker.stop()
    }

    /// SIGTERM drives the outputs to their safe state before the agent leaves: a relay configured off with safe state
    /// on is switched on, as the agent's log says, and the agent exits 0.
    @Test(.emulatedHardware) func sigtermPutsTheOutputsInTheirSafeState() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let config = try scratch.write(
            """
            {
              "common": {"agentIdentity": {"name": "Relay"}, "ioContextNodes": {"Board": {"ioActors": [
                {"objectId": "relay", "name": "Fan relay", "valueType": "coaty-edge.Switch"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker.port)"},
              "devices": {"emulated": true, "outputs": [
                {"driver": "gpio-output", "ioActor": "relay", "chip": "gpiochip0", "line": 17, "initial": "off", "safeState": "on"}]}
            }
            """, to: "relay.json"
        ).path
        let notify = try NotifySocket(name: scratch.url.appendingPathComponent("notify").path)
        let agent = try await Executable.start(
            ["run", "--config", config], environment: ["NOTIFY_SOCKET": notify.name])
        #expect(try await notify.receive() == "READY=1")
        let stopped = try await agent.stop(with: SIGTERM, within: .seconds(20))
        #expect(stopped.status == 0, "\(stopped.errors)")
        let lines = stopped.errors.split(separator: "\n")
        let safe = lines.firstIndex {
            $0.hasSuffix(
                " notice coaty.controller.Devices: GPIO output line 17 of gpiochip0 to its safe state (on): the agent stops"
            )
        }
        let stoppedLine = lines.firstIndex { $0.hasSuffix(" info coaty-edge.Relay: agent Relay stopped") }
        #expect(safe != nil, "\(stopped.errors)")
        #expect(stoppedLine != nil, "\(stopped.errors)")
        if let safe, let stoppedLine { #expect(safe < stoppedLine) }
        try await broker.stop()
    }

    /// `context set` changes the routing: `rules show` and `observe` see the temperature move from the actor for
    /// normal operation to the one for emergencies; `context get` shows the new version.
    @Test(.emulatedHardware) func contextSetMovesTheRouting() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        try scratch.write(Agents.rules, to: "rules/rules.json")
        let url = ["--broker", "mqtt://127.0.0.1:\(broker.port)"]
        var children: [CoatyTestSupport.ChildProcess] = []
        for (name, config) in [
            ("router", Agents.router(broker: broker.port, rules: "rules")),
            ("normal", Agents.actor(broker: broker.port, state: "normal", id: Agents.normalActorId, name: "Normal")),
            (
                "emergency",
                Agents.actor(broker: broker.port, state: "emergency", id: Agents.emergencyActorId, name: "Emergency")
            ),
            ("sensors", Agents.sensors(broker: broker.port)),
        ] {
            children.append(
                try await Executable.start(["run", "--config", try scratch.write(config, to: "\(name).json").path]))
        }
        let observe = try await Executable.start(["observe", "--json", "--context", Agents.contextName] + url)
        try await observe.line(containing: #""actorId":"\#(Agents.normalActorId)""#, within: .seconds(30))

        let before = try await Executable.run(["rules", "show"] + url)
        #expect(before.status == 0)
        #expect(before.output.contains("context TemperatureMeasurement, version 0\n"))
        #expect(before.output.contains("Boiler → Normal display  rule temperature-normal\n"))

        let set = try await Executable.run(
            ["context", "set", "operatingState", "emergency", "--context", Agents.contextName] + url)
        #expect(set.status == 0, "\(set.errors)")
        #expect(set.output == "TemperatureMeasurement: operatingState = \"emergency\" (version 1)\n")

        try await observe.line(containing: #""actorId":"\#(Agents.emergencyActorId)""#, within: .seconds(20))
        let events = jsonLines(observe.output.text)
        #expect(
            events.contains {
                $0["event"] as? String == "disassociated" && $0["actorId"] as? String == Agents.normalActorId
            })
        #expect(
            events.contains {
                $0["event"] as? String == "associated" && $0["actorName"] as? String == "Emergency display"
                    && $0["sourceName"] as? String == "Boiler"
            })
        #expect(events.contains { $0["event"] as? String == "context" && $0["contextVersion"] as? Int == 1 })

        let after = try await Executable.run(["rules", "show", "--json"] + url)
        let answer = try #require(jsonLines(after.output).first)
        let associations = try #require(answer["associations"] as? [[String: Any]])
        #expect(associations.map { $0["actorId"] as? String } == [Agents.emergencyActorId])
        #expect(associations.first?["rule"] as? String == "temperature-emergency")

        let get = try await Executable.run(["context", "get", "--context", Agents.contextName] + url)
        #expect(get.status == 0)
        #expect(
            get.outputLines.first?.hasPrefix(
                "TemperatureMeasurement  version 1  (objectId 55555555-5555-4555-8555-555555555555, router ") == true)
        #expect(get.outputLines.dropFirst().first == "  operatingState: \"emergency\"")

        // A change made as of an older version is refused by the router, and the command says why.
        let stale = try await Executable.run(
            ["context", "set", "operatingState", "normal", "--expected-version", "0", "--context", Agents.contextName]
                + url)
        #expect(stale.status == 1)
        #expect(
            stale.errors
                == "coaty-edge: TemperatureMeasurement: the router refused the update: stale version 0; the current version is 1\n"
        )
        #expect(
            try await Executable.run(["context", "get", "--context", Agents.contextName] + url).outputLines.dropFirst()
                .first
                == "  operatingState: \"emergency\"")
        // The expected version that is current is accepted.
        let checked = try await Executable.run(
            ["context", "set", "shift", "night", "--expected-version", "1", "--context", Agents.contextName] + url)
        #expect(checked.status == 0, "\(checked.errors)")
        #expect(checked.output == "TemperatureMeasurement: shift = \"night\" (version 2)\n")

        let unknown = try await Executable.run(["context", "get", "--context", "Nowhere", "--timeout", "0.5"] + url)
        #expect(unknown.status == 1)
        #expect(unknown.errors.contains("no IO context named Nowhere answered"))

        for child in [observe] + children {
            #expect(try await child.stop(with: SIGTERM).status == 0)
        }
        try await broker.stop()
    }

    /// The log level comes from the configuration's logging.level, and --log-level overrides it.
    @Test func logLevelFromTheConfigurationAndTheFlag() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let config = try scratch.write(
            Agents.actor(
                broker: broker.port, state: "normal", id: Agents.normalActorId, name: "Normal",
                extra: #", "logging": {"level": "warning"}"#), to: "actor.json"
        ).path

        /// READY=1 comes before the broker connection (the agent runs through a broker outage); `online`: also
        /// wait for the connection, so that the stop leaves cleanly.
        func runUntilReady(_ extra: [String], online: Bool = false) async throws -> CommandResult {
            let notify = try NotifySocket(name: scratch.url.appendingPathComponent("notify-\(extra.count)").path)
            let agent = try await Executable.start(
                ["run", "--config", config] + extra, environment: ["NOTIFY_SOCKET": notify.name])
            #expect(try await notify.receive() == "READY=1")
            if online {
                _ = try await agent.line(containing: " info coaty.communication: online as Normal", onErrors: true)
            }
            let result = try await agent.stop(with: SIGTERM, within: .seconds(20))
            #expect(result.status == 0, "\(result.errors)")
            return result
        }

        let quiet = try await runUntilReady([])
        #expect(!quiet.errors.contains(" info "), "\(quiet.errors)")
        #expect(!quiet.errors.contains(" debug "), "\(quiet.errors)")

        let chatty = try await runUntilReady(["--log-level", "debug"], online: true)
        #expect(chatty.errors.contains(" info coaty-edge.Normal: agent Normal ("), "\(chatty.errors)")
        #expect(
            chatty.errors.contains(" debug coaty.communication: leaving: Deadvertise sent, disconnecting cleanly\n"),
            "\(chatty.errors)")
        try await broker.stop()
    }

    /// observe's filters by source, value type and context, each on its own against the same agents: only the
    /// observers whose filters admit the Boiler print its values.
    @Test(.emulatedHardware) func observeFiltersBySourceValueTypeAndContext() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        try scratch.write(Agents.rules, to: "rules/rules.json")
        let url = ["--broker", "mqtt://127.0.0.1:\(broker.port)"]
        let filters: [(arguments: [String], admitsBoiler: Bool)] = [
            (["--source", "Boiler"], true),
            (["--source", Agents.sourceId, "--value-type", "coaty-edge.Temperature[Celsius]"], true),
            (["--context", Agents.contextName], true),
            (["--source", "Cellar"], false),
            (["--value-type", "coaty-edge.Humidity[Percent]"], false),
            (["--context", "Greenhouse"], false),
        ]
        var observers: [CoatyTestSupport.ChildProcess] = []
        for filter in filters {
            observers.append(try await Executable.start(["observe", "--json"] + filter.arguments + url))
        }
        var agents: [CoatyTestSupport.ChildProcess] = []
        for (name, config) in [
            ("router", Agents.router(broker: broker.port, rules: "rules")),
            ("normal", Agents.actor(broker: broker.port, state: "normal", id: Agents.normalActorId, name: "Normal")),
            ("sensors", Agents.sensors(broker: broker.port)),
        ] {
            agents.append(
                try await Executable.start(["run", "--config", try scratch.write(config, to: "\(name).json").path]))
        }

        // Once every admitting observer has printed several values, those that do not admit the Boiler had the time
        // to print some too: the agents joined, and the sensor publishes every 200 ms.
        for (observer, filter) in zip(observers, filters) where filter.admitsBoiler {
            let value = try await observer.line(containing: #""event":"value""#, within: .seconds(30))
            #expect(jsonLines(value).first?["sourceId"] as? String == Agents.sourceId)
        }
        for (observer, filter) in zip(observers, filters) where filter.admitsBoiler {
            try await waitUntil("\(filter.arguments) to print five values") {
                jsonLines(observer.output.text).filter { $0["event"] as? String == "value" }.count >= 5
            }
        }
        for (observer, filter) in zip(observers, filters) {
            let result = try await observer.stop(with: SIGTERM)
            #expect(result.status == 0)
            let events = jsonLines(result.output)
            #expect(
                events.contains { $0["event"] as? String == "agentJoined" }, "\(filter.arguments): \(result.output)")
            let values = events.filter { $0["event"] as? String == "value" }
            #expect(values.isEmpty != filter.admitsBoiler, "\(filter.arguments): \(values.count) values")
        }
        for agent in agents {
            #expect(try await agent.stop(with: SIGTERM).status == 0)
        }
        try await broker.stop()
    }

    /// A sensor that stops answering, seen from outside: the agent logs the failure and the recovery, observe reports
    /// the device status going to failing and back to ok, and agents lists the failing device with its error. The
    /// thermal zone is a sysfs file the test removes and writes again.
    @Test func aFailingSensorShowsInTheLogObserveAndAgentsAndRecovers() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let zone = "sys/class/thermal/thermal_zone0"
        try scratch.write("cpu-thermal\n", to: "\(zone)/type")
        let temperature = try scratch.write("45000\n", to: "\(zone)/temp").path
        let config = try scratch.write(
            """
            {
              "common": {"agentIdentity": {"name": "SoC"}, "ioContextNodes": {"Board": {"ioSources": [
                {"objectId": "soc", "name": "SoC temperature", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker.port)"},
              "devices": {"sysfsRoot": "\(scratch.url.appendingPathComponent("sys").path)", "sensors": [
                {"driver": "thermal", "zone": 0, "pollInterval": "100ms", "retry": {"min": "100ms", "max": "200ms"},
                 "sources": {"temperature": {"ioSource": "soc"}}}]}
            }
            """, to: "soc.json"
        ).path
        let url = ["--broker", "mqtt://127.0.0.1:\(broker.port)"]
        let observe = try await Executable.start(["observe", "--json"] + url)
        let agent = try await Executable.start(["run", "--config", config])

        /// The states of the SoC zone in the device status events observe printed, in order.
        func states() -> [String] {
            jsonLines(observe.output.text).filter { $0["event"] as? String == "deviceStatus" }.compactMap { event in
                ((event["devices"] as? [[String: Any]])?.first {
                    $0["label"] as? String == "thermal zone 0 (cpu-thermal)"
                })?["state"]
                    as? String
            }
        }
        try await waitUntil("observe to report the zone ok") { states().contains("ok") }

        try FileManager.default.removeItem(atPath: temperature)
        try await waitUntil("observe to report the zone failing") { states().last == "failing" }
        let failing = try await Executable.run(["agents", "--json", "--census", "1"] + url)
        let devices = try #require(jsonLines(failing.output).first?["devices"] as? [[String: Any]])
        #expect(devices.first?["state"] as? String == "failing")
        #expect(devices.first?["error"] as? String == "no device: \(temperature)")

        try scratch.write("46500\n", to: "\(zone)/temp")
        try await waitUntil("observe to report the zone ok again") { states().suffix(2) == ["failing", "ok"] }

        let stopped = try await agent.stop(with: SIGTERM)
        #expect(stopped.status == 0)
        #expect(
            stopped.errors.contains(
                " error coaty.controller.Devices: thermal zone 0 (cpu-thermal) fails, retrying with backoff: no device: \(temperature)\n"
            ),
            "\(stopped.errors)")
        #expect(
            stopped.errors.contains(
                " notice coaty.controller.Devices: thermal zone 0 (cpu-thermal) answers again after "),
            "\(stopped.errors)")
        #expect(try await observe.stop(with: SIGTERM).status == 0)
        try await broker.stop()
    }

    /// `agents` lists a running agent with its IO nodes and device status; killed with SIGKILL, it is gone: the
    /// broker publishes its last will, which `observe` reports, and the next `agents` does not list it.
    @Test(.emulatedHardware) func agentsListsAnAgentUntilItIsKilled() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let url = ["--broker", "mqtt://127.0.0.1:\(broker.port)"]
        let sensors = try await Executable.start([
            "run", "--config", try scratch.write(Agents.sensors(broker: broker.port), to: "sensors.json").path,
        ])
        let observe = try await Executable.start(["observe", "--json"] + url)
        try await observe.line(containing: #""event":"agentJoined""#, within: .seconds(30))

        let listed = try await Executable.run(["agents", "--json", "--census", "1"] + url)
        #expect(listed.status == 0)
        let agents = jsonLines(listed.output)
        #expect(agents.map { $0["name"] as? String } == ["Temperature sensors"])
        let agent = try #require(agents.first)
        #expect(agent["agentId"] as? String == Agents.sensorsAgentId)
        let nodes = try #require(agent["ioNodes"] as? [[String: Any]])
        #expect((nodes.first?["ioSources"] as? [[String: Any]])?.first?["name"] as? String == "Boiler")
        let devices = try #require(agent["devices"] as? [[String: Any]])
        #expect(devices.first?["label"] as? String == "TMP102 at 0x48 on /dev/i2c-1")
        #expect(devices.first?["state"] as? String == "ok")

        let text = try await Executable.run(["agents", "--census", "1"] + url)
        #expect(text.outputLines.first == "Temperature sensors  \(Agents.sensorsAgentId)  namespace -")
        #expect(text.output.contains("    source Boiler  coaty-edge.Temperature[Celsius]  \(Agents.sourceId)\n"))
        #expect(text.output.contains("    ok      TMP102 at 0x48 on /dev/i2c-1\n"))

        let killed = try await sensors.stop(with: SIGKILL)
        #expect(killed.status == 128 + SIGKILL)
        let left = try await observe.line(containing: #""event":"agentLeft""#, within: .seconds(20))
        #expect(jsonLines(left).first?["name"] as? String == "Temperature sensors")

        let after = try await Executable.run(["agents", "--census", "1"] + url)
        #expect(after.output == "no agents online\n")

        #expect(try await observe.stop(with: SIGTERM).status == 0)
        try await broker.stop()
    }
}

/// The samples of the agent's metrics endpoint, by name and labels as written (`name{label="value"}`).
func scrape(port: Int) async throws -> [String: Double] {
    let response = try await httpExchange(port: port, request: "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
    guard response.hasPrefix("HTTP/1.1 200 OK") else { throw SocketError("metrics answered: \(response)") }
    let body = response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
    var samples: [String: Double] = [:]
    for line in body.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
            continue
        }
        samples[String(line[..<space])] = value
    }
    return samples
}

/// The sum of `coaty_edge_values_read_total` from the agent's metrics endpoint.
private func readCounter(port: Int) async throws -> Int {
    let response = try await httpExchange(port: port, request: "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
    guard response.hasPrefix("HTTP/1.1 200 OK") else { throw SocketError("metrics answered: \(response)") }
    return response.split(separator: "\n")
        .filter { $0.hasPrefix("coaty_edge_values_read_total{source=\"\(Agents.sourceId)\"} ") }
        .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
        .reduce(0, +)
}
