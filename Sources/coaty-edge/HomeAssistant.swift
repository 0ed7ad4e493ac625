import ArgumentParser
import CoatyEdgeCLI

struct HomeAssistant: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ha", abstract: "Home Assistant and plain MQTT topics.", subcommands: [Preview.self])

    struct Preview: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the MQTT discovery messages and topics an agent with this configuration publishes.",
            discussion:
                "Connects to nothing. The state, command and status topics come first as comments, then each retained "
                + "discovery message: its topic and its JSON config. Exits 78 when the configuration is invalid or has "
                + "neither a \"homeAssistant\" nor an \"mqttTopics\" section.")

        @Option(help: ArgumentHelp("The agent configuration.", valueName: "file"))
        var config: String

        @Flag(
            help: "Accept a passwordFile that its group or others may read, as `run --allow-open-password-file` does.")
        var allowOpenPasswordFile = false

        func run() throws {
            try report(Checks.homeAssistantPreview(config, allowsOpenPasswordFile: allowOpenPasswordFile))
        }
    }
}
