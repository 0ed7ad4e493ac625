import CoatyTestSupport
import Foundation
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The files the packages and the mDNS announcement are made of, checked without building a package (that is
/// Tests/Package/run, in a Debian root).
@Suite("Package files and the broker's mDNS announcement")
struct PackageFilesTests {
    /// Collects the text of the elements of an Avahi service file.
    private final class ServiceFile: NSObject, XMLParserDelegate {
        var values: [String: String] = [:]
        private var element = ""

        func parser(
            _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            element = name
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            let text = string.trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty { values[element, default: ""] += text }
        }
    }

    @Test("the avahi service file is well-formed XML announcing _coaty-mqtt._tcp as \"Coaty MQTT Broker\" on 1883")
    func avahiServiceFile() throws {
        // avahi-daemon ignores a file it cannot parse, with a line in its own log only: "--" in a comment did that.
        let parser = try #require(
            XMLParser(contentsOf: URL(fileURLWithPath: Deploy.path("avahi/coaty-edge-broker.service"))))
        let file = ServiceFile()
        parser.delegate = file
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        #expect(file.values["name"] == "Coaty MQTT Broker")
        #expect(file.values["type"] == "_coaty-mqtt._tcp")
        #expect(file.values["port"] == "1883")
    }

    @Test(
        "install.sh announces the broker by mDNS on the agents' port, 8883 with --tls",
        .enabled(if: Deploy.isRoot && Deploy.has("jq", "openssl", "mosquitto_passwd")), .timeLimit(.minutes(2)))
    func installAnnouncesTheBroker() async throws {
        for (options, port) in [([String](), 1883), (["--tls"], 8883)] {
            let root = try makeTargetRoot()
            let result = try await Command(
                [Deploy.path("install.sh"), "--root", root.path, "--binary", "/bin/true"] + options
            ).run(timeout: .seconds(90))
            try #require(result.succeeded, "\(result.errors)")
            let announcement = try root.read("etc/avahi/services/coaty-edge-broker.service")
            #expect(announcement.contains("<type>_coaty-mqtt._tcp</type>"))
            #expect(announcement.contains("<port>\(port)</port>"), "\(options)")
        }
    }

    @Test(
        "the maintainer scripts and the package and discovery tests are shellcheck clean",
        .enabled(if: Deploy.has("shellcheck")))
    func scriptsAreShellcheckClean() async throws {
        let scripts = try FileManager.default.contentsOfDirectory(atPath: Deploy.path("debian")).sorted()
            .map { Deploy.path("debian/\($0)") }
        #expect(scripts.count == 5)
        let tests = ["Tests/Package/run", "Tests/Discovery/run", "Tests/Tools/measure-package.sh"]
            .map { Deploy.repository.appendingPathComponent($0).path }
        let result = try await Command(["shellcheck", "-x"] + scripts + tests, directory: Deploy.repository).run()
        #expect(result.succeeded, "\(result.output)\(result.errors)")
        #expect(result.output.isEmpty)
    }
}
