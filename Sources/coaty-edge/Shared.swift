import ArgumentParser
import CoatyEdgeCLI
import CoatyEdgeOptions

struct Shared: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read, change and watch shared objects: versioned key/value state and messages every agent can use.",
        discussion: """
            A shared object is hosted by one agent (for example from the "sharedObjects" section of its \
            configuration) and named by a Coaty name. These commands only use objects that an agent hosts: they never \
            create one, since it would live only as long as the command. Exit statuses: 0 success; 1 no agent hosts \
            the object, the host refused or did not answer; 64 wrong command line; 69 broker unreachable.
            """,
        subcommands: [Get.self, Set.self, Delete.self, Send.self, Watch.self])

    /// The options every shared subcommand takes besides the connection.
    struct Target: ParsableArguments {
        @Argument(help: "The shared object's name.")
        var name: String

        @Option(help: ArgumentHelp("Seconds to wait for the host's answers.", valueName: "seconds"))
        var timeout = Seconds(3)

        var duration: Duration { timeout.duration }

        func validate() throws {
            if let refusal = SharedCommands.refusal(forName: name) { throw ValidationError(refusal) }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a shared object's data (or one key's value) and its version.",
            discussion: """
                Prints "NAME  version N  (objectId ..., host ...)" and the data as indented JSON, or "KEY = value". \
                With --json, one JSON object: name, objectId, hostId, version and data (or key and value). Exits 1 \
                when no agent hosts NAME or the object has no KEY.
                """)

        @OptionGroup var target: Target

        @Argument(help: "Only this key's value.")
        var key: String?

        @Flag(help: "One JSON object.")
        var json = false

        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            let (name, key, json, timeout) = (target.name, key, json, target.duration)
            try await connection.printAnswer { session in
                try await SharedCommands.get(session, name: name, key: key, json: json, timeout: timeout)
            }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a key of a shared object; every connected client is told.",
            discussion: """
                VALUE is read as JSON if it is valid JSON (60, true, "eco", {"a": 1}, [1, 2]), else taken as a string. \
                Prints "NAME: KEY = VALUE (version N)" with the object's new version, or why the host refused (exit \
                1): with --expected-version, a change made by someone else since that version is refused.
                """)

        @OptionGroup var target: Target

        @Argument(help: "The key to set.")
        var key: String

        @Argument(help: "Its new value: JSON, or else a string.")
        var value: String

        @Option(help: ArgumentHelp("Only if the object is still at this version.", valueName: "version"))
        var expectedVersion: Int?

        @OptionGroup var connection: ConnectionOptions

        func validate() throws {
            if let refusal = SharedCommands.refusal(forKey: key) { throw ValidationError(refusal) }
            if let expectedVersion, expectedVersion < 0 {
                throw ValidationError("--expected-version must not be negative")
            }
        }

        func run() async throws {
            let (name, key, value, expected, timeout) = (
                target.name, key, ContextCommands.parseValue(self.value), expectedVersion, target.duration
            )
            try await connection.printAnswer { session in
                try await SharedCommands.set(
                    session, name: name, key: key, value: value, expectedVersion: expected, timeout: timeout)
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a key of a shared object, or with --object the whole object.",
            discussion: """
                With KEY, prints "NAME: KEY deleted (version N)"; every connected client is told of the deletion. \
                Deleting the whole object needs --object (and no KEY), so that a forgotten KEY does not delete it: \
                every connected client is told it was deleted, and the host forgets it; prints "NAME: object \
                deleted". Exits 1 when the host refuses (no such key, a stale --expected-version, a read-only object).
                """)

        @OptionGroup var target: Target

        @Argument(help: "The key to delete.")
        var key: String?

        @Flag(help: "Delete the whole object for everyone, instead of a key.")
        var object = false

        @Option(help: ArgumentHelp("Only if the object is still at this version (with KEY).", valueName: "version"))
        var expectedVersion: Int?

        @OptionGroup var connection: ConnectionOptions

        func validate() throws {
            switch (key, object) {
            case (nil, false):
                throw ValidationError("name the KEY to delete, or give --object to delete the whole object")
            case (.some, true): throw ValidationError("give either a KEY or --object, not both")
            case (let key?, false):
                if let refusal = SharedCommands.refusal(forKey: key) { throw ValidationError(refusal) }
            case (nil, true):
                if expectedVersion != nil { throw ValidationError("--expected-version goes with a KEY") }
            }
            if let expectedVersion, expectedVersion < 0 {
                throw ValidationError("--expected-version must not be negative")
            }
        }

        func run() async throws {
            let (name, key, expected, timeout) = (target.name, key, expectedVersion, target.duration)
            try await connection.printAnswer { session in
                if let key {
                    try await SharedCommands.deleteKey(
                        session, name: name, key: key, expectedVersion: expected, timeout: timeout)
                } else {
                    try await SharedCommands.deleteObject(session, name: name, timeout: timeout)
                }
            }
        }
    }

    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a message to every client connected to a shared object.",
            discussion: """
                MESSAGE is read as JSON if it is valid JSON, else taken as a string. Prints "NAME: message \
                delivered" once the broker has delivered it (it hands it back to this client as to every other); \
                else says why not and exits 1. A message does not change the object or its version.
                """)

        @OptionGroup var target: Target

        @Argument(help: "The message: JSON, or else a string.")
        var message: String

        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            let (name, message, timeout) = (target.name, ContextCommands.parseValue(self.message), target.duration)
            try await connection.printAnswer { session in
                try await SharedCommands.send(session, name: name, message: message, timeout: timeout)
            }
        }
    }

    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Follow a shared object live: its data, then every change and message.",
            discussion: """
                One line per event: the snapshot of the data (again whenever the client had to catch up, as when a \
                host returns), each change (a key set, or deleted), each message with its sender, "unavailable" \
                when the host is gone (stopped or died), "deleted" when the object is deleted or expires. With \
                --json, one JSON object per line: {"event": "snapshot", "version", "data", "objectId", "hostId"}, \
                {"event": "changed", "key", "value", "version", "deleted"} (no value when deleted is true), \
                {"event": "message", "message", "sender"}, {"event": "unavailable"}, {"event": "deleted"}, \
                {"event": "waiting"} (with --wait), each with "time" in ms since 1970. Runs until Ctrl-C or SIGTERM \
                (exit 0) or the object is deleted (exit 0). Exits 1 at once when no agent hosts NAME, unless --wait.
                """)

        @OptionGroup var target: Target

        @Flag(help: "One JSON object per event and line.")
        var json = false

        @Flag(help: "If no agent hosts NAME yet, wait for one instead of exiting 1.")
        var wait = false

        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await perform {
                let (name, wait, timeout) = (target.name, wait, target.duration)
                let output: SharedCommands.WatchOutput = json ? .json : .lines
                try await untilSignalled {
                    try await connection.withSession { session in
                        try await SharedCommands.watch(
                            session, name: name, waitingForHost: wait, output: output, timeout: timeout)
                    }
                }
            }
        }
    }
}
