import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// `coaty-edge shared ...` end to end: the built executable against a real mosquitto, with the shared object hosted
/// by another `coaty-edge run` process from its configuration. Every child is bounded by a time limit.
@Suite(.serialized) struct SharedCommandLineTests {
    /// The data of `setpoints` in the host's configuration, as `canonicalJSON` writes it.
    static let initialData = #"{"fanOff":55,"fanOn":60,"mode":"auto"}"#

    /// Command lines that cannot work are refused before connecting (64), and each command explains itself.
    @Test func wrongCommandLinesAreRefusedAndEachCommandHasHelp() async throws {
        let port = try freeLoopbackPort()
        let url = ["--broker", "mqtt://127.0.0.1:\(port)", "--connect-timeout", "1"]
        let cases: [([String], String)] = [
            (["shared", "delete", "setpoints"], "name the KEY to delete, or give --object to delete the whole object"),
            (["shared", "delete", "setpoints", "fanOn", "--object"], "give either a KEY or --object, not both"),
            (["shared", "get", "set/points"], "\"set/points\" is not a valid shared object name"),
            (["shared", "set", "setpoints", "", "1"], "the key is empty"),
            (
                ["shared", "set", "setpoints", "fanOn", "1", "--expected-version=-1"],
                "--expected-version must not be negative"
            ),
        ]
        for (arguments, message) in cases {
            let result = try await Executable.run(arguments + url)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.errors.contains(message), "\(arguments): \(result.errors)")
        }

        let help = try await Executable.run(["shared", "--help"])
        #expect(help.status == 0)
        for subcommand in ["get", "set", "delete", "send", "watch"] {
            #expect(help.output.contains("  \(subcommand) "), "\(subcommand)")
        }
        let deleteHelp = try await Executable.run(["shared", "delete", "--help"])
        #expect(deleteHelp.output.contains("--object"))
        let watchHelp = try await Executable.run(["shared", "watch", "--help"])
        #expect(watchHelp.output.contains("--wait"))
        #expect(watchHelp.output.contains("--json"))

        // A command line that is right reaches for the broker.
        let unreachable = try await Executable.run(["shared", "get", "setpoints"] + url)
        #expect(unreachable.status == 69)
    }

    /// An agent started with `run --config` hosts `setpoints`; `watch --json --wait` waits for it, then sees the
    /// snapshot and every change and message the other commands make; `get`, `set`, `delete` and `send` print what
    /// they did, or fail with the host's message and exit 1; deleting the object ends `watch`.
    @Test func getSetDeleteSendAndWatchAnObjectAnAgentHosts() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let url = ["--broker", "mqtt://127.0.0.1:\(broker.port)"]

        let watch = try await Executable.start(["shared", "watch", "setpoints", "--json", "--wait"] + url)
        try await waitForJSONLines(watch) { $0["event"] as? String == "waiting" }
        let host = try await Executable.start([
            "run", "--config", try scratch.write(Agents.sharedHost(broker: broker.port), to: "host.json").path,
        ])
        var lines = try await waitForJSONLines(watch) { $0["event"] as? String == "snapshot" }
        let snapshot = try #require(lines.first { $0["event"] as? String == "snapshot" })
        #expect(snapshot["version"] as? Int == 0)
        #expect(canonicalJSON(snapshot["data"]) == Self.initialData)
        #expect(snapshot["hostId"] as? String == Agents.sharedHostId)
        let objectId = try #require(snapshot["objectId"] as? String)
        #expect(snapshot["time"] is Int)

        let get = try await Executable.run(["shared", "get", "setpoints"] + url)
        #expect(get.status == 0, "\(get.errors)")
        #expect(
            get.output == """
                setpoints  version 0  (objectId \(objectId), host \(Agents.sharedHostId))
                {
                  "fanOn": 60,
                  "fanOff": 55,
                  "mode": "auto"
                }

                """)
        let getKey = try await Executable.run(["shared", "get", "setpoints", "fanOn"] + url)
        #expect(getKey.outputLines.last == "fanOn = 60")

        let set = try await Executable.run(["shared", "set", "setpoints", "fanOn", "62"] + url)
        #expect(set.status == 0, "\(set.errors)")
        #expect(set.output == "setpoints: fanOn = 62 (version 1)\n")

        let stale = try await Executable.run(
            ["shared", "set", "setpoints", "fanOn", "65", "--expected-version", "0"] + url)
        #expect(stale.status == 1)
        #expect(stale.output.isEmpty)
        #expect(stale.errors == "coaty-edge: stale version 0 of shared object setpoints; the current version is 1\n")

        // A bare word is a string, as with `context set`; with the right expected version the change is accepted.
        let word = try await Executable.run(
            ["shared", "set", "setpoints", "mode", "eco", "--expected-version", "1"] + url)
        #expect(word.output == "setpoints: mode = \"eco\" (version 2)\n")

        let deleteKey = try await Executable.run(["shared", "delete", "setpoints", "fanOff"] + url)
        #expect(deleteKey.status == 0, "\(deleteKey.errors)")
        #expect(deleteKey.output == "setpoints: fanOff deleted (version 3)\n")
        let deleteMissing = try await Executable.run(["shared", "delete", "setpoints", "fanOff"] + url)
        #expect(deleteMissing.status == 1)
        #expect(deleteMissing.errors == "coaty-edge: shared object setpoints has no key fanOff\n")

        let send = try await Executable.run(
            ["shared", "send", "setpoints", #"{"text": "door open", "level": 2}"#] + url)
        #expect(send.status == 0, "\(send.errors)")
        #expect(send.output == "setpoints: message delivered\n")

        lines = try await waitForJSONLines(watch) { $0["event"] as? String == "message" }
        let events = lines.filter { $0["event"] as? String != "waiting" }
        #expect(events.map { $0["event"] as? String } == ["snapshot", "changed", "changed", "changed", "message"])
        #expect(events[1]["key"] as? String == "fanOn")
        #expect(events[1]["value"] as? Int == 62)
        #expect(events[1]["version"] as? Int == 1)
        #expect(events[1]["deleted"] as? Bool == false)
        #expect(events[2]["value"] as? String == "eco")
        #expect(events[2]["version"] as? Int == 2)
        #expect(events[3]["key"] as? String == "fanOff")
        #expect(events[3]["deleted"] as? Bool == true)
        #expect(events[3]["value"] == nil)
        #expect(events[3]["version"] as? Int == 3)
        #expect(canonicalJSON(events[4]["message"]) == #"{"level":2,"text":"door open"}"#)
        #expect((events[4]["sender"] as? String)?.isEmpty == false)

        let getJSON = try await Executable.run(["shared", "get", "setpoints", "--json"] + url)
        let object = try #require(jsonLines(getJSON.output).first)
        #expect(object["name"] as? String == "setpoints")
        #expect(object["version"] as? Int == 3)
        #expect(canonicalJSON(object["data"]) == #"{"fanOn":62,"mode":"eco"}"#)
        let getKeyJSON = try await Executable.run(["shared", "get", "setpoints", "mode", "--json"] + url)
        #expect(jsonLines(getKeyJSON.output).first?["value"] as? String == "eco")
        let missingKey = try await Executable.run(["shared", "get", "setpoints", "fanOff"] + url)
        #expect(missingKey.status == 1)
        #expect(missingKey.errors == "coaty-edge: shared object setpoints has no key fanOff\n")

        let unknown = try await Executable.run(["shared", "get", "nowhere", "--timeout", "0.5"] + url)
        #expect(unknown.status == 1)
        #expect(unknown.output.isEmpty)
        #expect(unknown.errors == "coaty-edge: no agent hosts a shared object named nowhere\n")
        // No command creates what it would host only until it exits.
        let unknownSet = try await Executable.run(["shared", "set", "nowhere", "k", "1", "--timeout", "0.5"] + url)
        #expect(unknownSet.status == 1)
        let stillUnknown = try await Executable.run(["shared", "get", "nowhere", "--timeout", "0.5"] + url)
        #expect(stillUnknown.status == 1)

        // Deleting the object tells the watcher, which ends by itself; afterwards nobody hosts the name.
        let deleteObject = try await Executable.run(["shared", "delete", "setpoints", "--object"] + url)
        #expect(deleteObject.status == 0, "\(deleteObject.errors)")
        #expect(deleteObject.output == "setpoints: object deleted\n")
        let watched = try await watch.finished(within: .seconds(20))
        #expect(watched.status == 0, "\(watched.errors)")
        #expect(jsonLines(watched.output).last?["event"] as? String == "deleted")
        let gone = try await Executable.run(["shared", "get", "setpoints", "--timeout", "0.5"] + url)
        #expect(gone.status == 1)

        #expect(try await host.stop(with: SIGTERM).status == 0)
        try await broker.stop()
    }

    /// The text of `watch`: one line per event, with the local time first.
    @Test func watchPrintsOneLineOfTextPerEvent() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let url = ["--broker", "mqtt://127.0.0.1:\(broker.port)"]
        let host = try await Executable.start([
            "run", "--config", try scratch.write(Agents.sharedHost(broker: broker.port), to: "host.json").path,
        ])
        try await waitUntil("the host to serve setpoints") {
            try await Executable.run(["shared", "get", "setpoints", "--timeout", "0.5"] + url).status == 0
        }
        let watch = try await Executable.start(["shared", "watch", "setpoints"] + url)
        let snapshot = try await watch.line(containing: " snapshot ")
        #expect(
            snapshot.hasSuffix(
                #" snapshot setpoints version 0 (host \#(Agents.sharedHostId)): {"fanOn":60,"fanOff":55,"mode":"auto"}"#
            ))
        #expect(snapshot.range(of: #"^\d\d:\d\d:\d\d\.\d\d\d "#, options: .regularExpression) != nil)

        #expect(try await Executable.run(["shared", "set", "setpoints", "fanOn", "61"] + url).status == 0)
        #expect(try await watch.line(containing: " changed ").hasSuffix(" changed fanOn = 61 (version 1)"))
        #expect(try await Executable.run(["shared", "send", "setpoints", "hello"] + url).status == 0)
        #expect(try await watch.line(containing: " message ").contains(#" message "hello" from "#))

        // A signal ends it with status 0.
        #expect(try await watch.stop(with: SIGINT).status == 0)
        #expect(try await host.stop(with: SIGTERM).status == 0)
        try await broker.stop()
    }

    /// Issue 6's host loss: the hosting agent process is killed with SIGKILL, so only the broker's last will tells
    /// of it. `watch` reports the object unavailable, nobody can change it meanwhile, and once the agent runs again
    /// (same configuration, so a new object under the same name) the watcher gets its snapshot and follows it.
    @Test func aWatcherLearnsWhenTheHostIsKilledAndRecoversWhenItIsBack() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let url = ["--broker", "mqtt://127.0.0.1:\(broker.port)"]
        let config = try scratch.write(Agents.sharedHost(broker: broker.port), to: "host.json").path

        let watch = try await Executable.start(["shared", "watch", "setpoints", "--json", "--wait"] + url)
        let host = try await Executable.start(["run", "--config", config])
        do {
            try await waitForJSONLines(watch) { $0["event"] as? String == "snapshot" }
        } catch {
            // Seen twice on a heavily loaded machine and never reproduced: keep what the host said.
            Issue.record("the host printed: \(host.output.text)\(host.errors.text)")
            throw error
        }
        let set = try await Executable.run(["shared", "set", "setpoints", "fanOn", "70"] + url)
        #expect(set.output == "setpoints: fanOn = 70 (version 1)\n")
        // As a change, or, when the watcher saw the host unavailable meanwhile (seen on a loaded machine: a will from a
        // first connection of the host that the broker replaced), as the snapshot it takes when it binds again.
        try await waitForJSONLines(watch) {
            $0["event"] as? String == "changed"
                || ($0["event"] as? String == "snapshot" && ($0["version"] as? Int ?? 0) >= 1)
        }

        let unavailableBeforeKill = jsonLines(watch.output.text).count { $0["event"] as? String == "unavailable" }
        let killed = try await host.stop(with: SIGKILL)
        #expect(killed.status == 128 + SIGKILL)
        let beforeRestart = try await waitForJSONLines(watch, count: unavailableBeforeKill + 1) {
            $0["event"] as? String == "unavailable"
        }
        // Everything up to the kill's unavailable; what follows is the watcher learning of the agent that is back.
        let seenBeforeRestart =
            (beforeRestart.filter { $0["event"] as? String != "waiting" }.lastIndex {
                $0["event"] as? String == "unavailable"
            } ?? 0) + 1
        let meanwhile = try await Executable.run(
            ["shared", "set", "setpoints", "fanOn", "71", "--timeout", "0.5"] + url)
        #expect(meanwhile.status == 1)
        #expect(meanwhile.errors == "coaty-edge: no agent hosts a shared object named setpoints\n")

        let back = try await Executable.start(["run", "--config", config])
        var events: [[String: Any]] = []
        try await waitUntil("the snapshot of the agent that is back") {
            events = jsonLines(watch.output.text).filter { $0["event"] as? String != "waiting" }
            return events.dropFirst(seenBeforeRestart).contains { $0["event"] as? String == "snapshot" }
        }
        #expect(events.first?["event"] as? String == "snapshot")
        #expect(events[seenBeforeRestart - 1]["event"] as? String == "unavailable")
        // The agent hosts the object as configured again: its data and version start anew.
        let renewed = events.dropFirst(seenBeforeRestart).first { $0["event"] as? String == "snapshot" }
        #expect(renewed?["version"] as? Int == 0)
        #expect(canonicalJSON(renewed?["data"]) == Self.initialData)
        #expect(renewed?["hostId"] as? String == Agents.sharedHostId)
        #expect(!events.dropFirst(seenBeforeRestart).contains { $0["event"] as? String == "unavailable" }, "\(events)")

        let after = try await Executable.run(["shared", "set", "setpoints", "fanOn", "72"] + url)
        #expect(after.output == "setpoints: fanOn = 72 (version 1)\n")
        let followed = try await waitForJSONLines(watch) {
            $0["event"] as? String == "changed" && $0["value"] as? Int == 72
        }
        #expect(followed.last?["value"] as? Int == 72)

        #expect(try await watch.stop(with: SIGTERM).status == 0)
        #expect(try await back.stop(with: SIGTERM).status == 0)
        try await broker.stop()
    }

    /// `config check` accepts a `sharedObjects` section, lists its objects, and names the file, JSON path and reason
    /// of a bad one (as `run` does before it starts anything).
    @Test func configCheckListsSharedObjectsAndNamesTheErrorOfABadOne() async throws {
        let scratch = try ScratchDirectory("coaty-cli")
        let good = try scratch.write(
            Agents.sharedHost(
                broker: 1883,
                setpoints: """
                    {"objectId": "3f0c8d52-5b7e-4c1a-9e60-2d4b8a7f1c93", "data": {"fanOn": 60, "fanOff": 55}, "expiry": 30, "readOnly": true}
                    """), to: "good.json"
        ).path
        let valid = try await Executable.run(["config", "check", good])
        #expect(valid.status == 0, "\(valid.errors)")
        #expect(
            valid.output.contains(
                "  shared     setpoints: 2 keys, objectId 3f0c8d52-5b7e-4c1a-9e60-2d4b8a7f1c93, read-only, expires after 30 min without activity\n"
            ))

        let cases: [(String, String)] = [
            (#"{"expiry": -1}"#, "$.sharedObjects.setpoints.expiry: -1 is out of range 0.001...5256000"),
            (#"{"data": [1, 2]}"#, "$.sharedObjects.setpoints.data: expected an object, found array"),
            (#"{"expires": 5}"#, "$.sharedObjects.setpoints.expires: unknown member \"expires\""),
        ]
        for (setpoints, reason) in cases {
            let bad = try scratch.write(Agents.sharedHost(broker: 1883, setpoints: setpoints), to: "bad.json").path
            let invalid = try await Executable.run(["config", "check", bad])
            #expect(invalid.status == 78)
            #expect(invalid.errors.hasPrefix("\(bad): \(reason)"), "\(invalid.errors)")
        }
    }
}
