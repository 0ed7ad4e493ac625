import CoatyJSON
import CoatyRuntime
import CoatyTestSupport
import Foundation
import Testing

/// A stand-in for the Swift toolchain on PATH, so that install.sh's build step runs without building: it reports a
/// version, and "builds" coaty-edge by copying a real executable (strip needs an ELF file), noting who built it.
private struct FakeSwift {
    let directory: ScratchDirectory
    var binDirectory: URL { directory.file("build") }

    init(version: String = "6.1.2", product: String = "/bin/true") throws {
        directory = try ScratchDirectory("coaty-fake-swift")
        try FileManager.default.createDirectory(at: binDirectory, withIntermediateDirectories: true)
        // The build runs as the user who ran sudo; let any user write the build output.
        chmod(binDirectory.path, 0o777)
        try directory.write(
            """
            #!/bin/sh
            set -eu
            case "$*" in
                --version) echo "Swift version \(version) (swift-\(version)-RELEASE)" ;;
                *--show-bin-path*) echo "\(binDirectory.path)" ;;
                "build -c release --static-swift-stdlib --product coaty-edge")
                    cp "\(product)" "\(binDirectory.path)/coaty-edge"
                    id -un > "\(binDirectory.path)/built-by" ;;
                "build -c release --static-swift-stdlib --product coaty-edge-dashboard")
                    cp "\(product)" "\(binDirectory.path)/coaty-edge-dashboard" ;;
                *) echo "fake swift: unexpected arguments: $*" >&2; exit 2 ;;
            esac

            """, to: "bin/swift", mode: 0o755)
    }

    var path: String {
        "\(directory.file("bin").path):\(ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")"
    }
}

@Suite("install.sh", .timeLimit(.minutes(2)))
struct InstallScriptTests {
    private func install(_ arguments: [String], path: String, environment: [String: String] = [:]) async throws
        -> CommandResult
    {
        var environment = environment
        environment["PATH"] = path
        return try await Command([Deploy.path("install.sh")] + arguments, environment: environment).run(
            timeout: .seconds(90))
    }

    @Test("--dry-run prints every action, changes nothing and needs no root")
    func dryRun() async throws {
        let swift = try FakeSwift()
        let root = try makeTargetRoot()
        // As root, run it as nobody to show that it needs no privileges; otherwise as whoever runs the tests.
        let asNobody = Deploy.isRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        let before = try snapshot(of: root.url)

        let result = try await Command(
            asNobody + [Deploy.path("install.sh"), "--dry-run", "--root", root.path], environment: ["PATH": swift.path]
        ).run(timeout: .seconds(90))

        #expect(result.succeeded, "\(result.output)\(result.errors)")
        #expect(try snapshot(of: root.url) == before)
        #expect(!FileManager.default.fileExists(atPath: swift.binDirectory.appendingPathComponent("coaty-edge").path))
        for action in [
            "would run in \(Deploy.repository.path): swift build -c release --static-swift-stdlib --product coaty-edge",
            "would strip and install the build result to /usr/local/bin/coaty-edge",
            "would create system group i2c",
            "would create system group gpio",
            "would create system user coaty-edge (no login, no home)",
            "would install /etc/udev/rules.d/99-coaty-edge.rules (0644 root:root)",
            "would create /etc/coaty-edge/ (0750 root:coaty-edge)",
            "would create /etc/coaty-edge/broker.password (0600 coaty-edge:coaty-edge) with a random password",
            "would create /etc/coaty-edge/operator.password (0600 root:root) with a random password",
            "would set the ACL of coaty-edge: read and write coaty/3/greenhouse/#",
            "would set the ACL of coaty-operator: read and write coaty/3/#",
            "would install /etc/mosquitto/conf.d/coaty-edge.conf (0644 root:root)",
            "would install /etc/coaty-edge/agent.json (0640 root:coaty-edge)",
            "would install /etc/systemd/system/coaty-edge.service (0644 root:root)",
            "would enable coaty-edge.service in \(root.path)",
            "dry run: nothing was changed",
        ] {
            #expect(result.output.contains(action), "missing: \(action)\n\(result.output)")
        }
    }

    /// The build needs the headers and libraries of every C library target in Package.swift, so install.sh must
    /// install each one's Debian package (libumockdev is no build dependency: the emulation loads it when it starts).
    /// Which package that is, this machine's dpkg says; which ones install.sh installs, its dry run says.
    @Test(
        "install.sh installs the package of every C library the build uses",
        .enabled(if: Deploy.has("dpkg", "pkg-config")))
    func installsEveryBuildDependency() async throws {
        let manifest = try String(
            contentsOf: Deploy.repository.appendingPathComponent("Package.swift"), encoding: .utf8)
        let modules = manifest.matches(of: /pkgConfig: "([^"]+)"/).map { String($0.output.1) }
        #expect(Set(modules) == ["libmosquitto", "libgpiod"])
        var files: [String] = []
        for module in modules {
            let found = try await Command("pkg-config", "--path", module).run()
            try #require(found.succeeded, "\(module): \(found.errors)")
            files.append(found.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        files.append("/usr/include/i2c/smbus.h")  // CI2C: libi2c has no .pc file
        var needed: Set<String> = []
        for file in files {
            let owner = try await Command("dpkg", "-S", file).run()
            try #require(owner.succeeded, "\(file): \(owner.errors)")
            needed.insert(String(owner.output.prefix { $0 != ":" }))
        }
        #expect(needed == ["libmosquitto-dev", "libgpiod-dev", "libi2c-dev"])

        let swift = try FakeSwift()
        let root = try makeTargetRoot()
        let result = try await install(["--dry-run", "--root", root.path], path: swift.path)
        #expect(result.succeeded, "\(result.output)\(result.errors)")
        let line = try #require(result.outputLines.first { $0.contains("the target needs: ") }, "\(result.output)")
        let installed = Set(
            line.components(separatedBy: "the target needs: ")[1].split(separator: " ").map(String.init))
        #expect(
            needed.subtracting(installed).isEmpty,
            "install.sh does not install \(needed.subtracting(installed).sorted())")
    }

    @Test("--dry-run against this machine's / also runs without root", .enabled(if: Deploy.isRoot))
    func dryRunOnTheLiveSystem() async throws {
        let swift = try FakeSwift()
        let result = try await Command(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", Deploy.path("install.sh"), "--dry-run"],
            environment: ["PATH": swift.path]
        ).run(timeout: .seconds(90))
        #expect(result.succeeded, "\(result.output)\(result.errors)")
        #expect(result.output.contains("(not root: files only root may read are reported as if they were missing)"))
        #expect(result.output.contains("==> Packages"))
        #expect(result.output.contains("dry run: nothing was changed"))
    }

    @Test("without --dry-run it refuses to run as an ordinary user")
    func needsRootToInstall() async throws {
        let root = try makeTargetRoot()
        let asNobody = Deploy.isRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        let result = try await Command(asNobody + [Deploy.path("install.sh"), "--root", root.path]).run()
        #expect(result.status == 1)
        #expect(result.errors.contains("must run as root"))
    }

    @Test("a Swift older than 6.1 stops the install with instructions", .enabled(if: Deploy.isRoot))
    func oldSwiftStops() async throws {
        let swift = try FakeSwift(version: "5.10.1")
        let root = try makeTargetRoot()
        let before = try snapshot(of: root.url)
        let result = try await install(["--root", root.path], path: swift.path)
        #expect(result.status == 1)
        #expect(result.errors.contains("is Swift 5.10; coaty-edge needs 6.1 or newer"))
        #expect(result.errors.contains("swiftly init"))
        #expect(result.errors.contains("--binary FILE"))
        #expect(try snapshot(of: root.url) == before)
    }

    /// The full install into a target root, as root: the build as the user who ran sudo, every file with its owner and
    /// mode, a configuration the agent's own parser accepts, and then a second run that changes nothing at all.
    @Test("--root installs everything, and a second run changes nothing", .enabled(if: Deploy.isRoot))
    func installAndRepeat() async throws {
        let swift = try FakeSwift()
        let root = try makeTargetRoot()
        let first = try await install(
            ["--root", root.path, "--namespace", "orchard"], path: swift.path, environment: ["SUDO_USER": "nobody"])
        #expect(first.succeeded, "\(first.output)\(first.errors)")
        #expect(
            try String(contentsOf: swift.binDirectory.appendingPathComponent("built-by"), encoding: .utf8) == "nobody\n"
        )
        #expect(first.output.contains("edit it for this machine's sensors and outputs"))

        // Users and groups, in the target's own database.
        let passwd = root.file("etc/passwd")
        let group = root.file("etc/group")
        let serviceUser = try #require(try databaseEntry("coaty-edge", in: passwd))
        let serviceUserID = try #require(UInt32(serviceUser[2]))
        #expect(serviceUser[5] == "/nonexistent")
        #expect(serviceUser[6] == "/usr/sbin/nologin")
        let serviceGroupID = try #require(try databaseEntry("coaty-edge", in: group).flatMap { UInt32($0[2]) })
        #expect(try databaseEntry("i2c", in: group) != nil)
        #expect(try databaseEntry("gpio", in: group) != nil)
        let mosquitto = try #require(try databaseEntry("mosquitto", in: passwd))
        let mosquittoOwner = (uid: try #require(UInt32(mosquitto[2])), gid: try #require(UInt32(mosquitto[3])))

        // Files and their owners.
        func status(_ path: String) throws -> FileStatus { try FileStatus(root.file(path).path) }
        #expect(try status("usr/local/bin/coaty-edge") == FileStatus(uid: 0, gid: 0, permissions: 0o755))
        let installedBinary = try await Command(root.file("usr/local/bin/coaty-edge").path).run()
        #expect(installedBinary.succeeded)
        for (installed, shipped) in [
            ("etc/systemd/system/coaty-edge.service", "coaty-edge.service"),
            ("etc/udev/rules.d/99-coaty-edge.rules", "99-coaty-edge.rules"),
            ("etc/mosquitto/conf.d/coaty-edge.conf", "mosquitto/coaty-edge.conf"),
        ] {
            #expect(try root.read(installed) == String(contentsOfFile: Deploy.path(shipped), encoding: .utf8))
            #expect(try status(installed) == FileStatus(uid: 0, gid: 0, permissions: 0o644))
        }
        #expect(
            try FileManager.default.destinationOfSymbolicLink(
                atPath: root.file("etc/systemd/system/multi-user.target.wants/coaty-edge.service").path)
                == "/etc/systemd/system/coaty-edge.service")
        #expect(try status("etc/coaty-edge") == FileStatus(uid: 0, gid: serviceGroupID, permissions: 0o750))
        #expect(try status("etc/coaty-edge/rules") == FileStatus(uid: 0, gid: serviceGroupID, permissions: 0o750))
        #expect(try status("etc/coaty-edge/agent.json") == FileStatus(uid: 0, gid: serviceGroupID, permissions: 0o640))
        // Readable by the agent only: coaty-edge refuses a password file that its group or others may read.
        #expect(
            try status("etc/coaty-edge/broker.password")
                == FileStatus(uid: serviceUserID, gid: serviceGroupID, permissions: 0o600))
        #expect(try status("etc/coaty-edge/operator.password") == FileStatus(uid: 0, gid: 0, permissions: 0o600))
        for brokerFile in [
            "etc/mosquitto/coaty-edge.passwd", "etc/mosquitto/coaty-edge-operators.passwd",
            "etc/mosquitto/coaty-edge.acl",
        ] {
            #expect(
                try status(brokerFile)
                    == FileStatus(uid: mosquittoOwner.uid, gid: mosquittoOwner.gid, permissions: 0o600))
        }
        let agentPassword = try root.read("etc/coaty-edge/broker.password")
        #expect(agentPassword.range(of: #"^[0-9a-f]{32}\n$"#, options: .regularExpression) != nil)

        // The broker knows both users, each on its listener, and the agent's ACL is its configured namespace.
        func brokerUsers(_ file: String) throws -> [Substring] {
            try root.read(file).split(separator: "\n").map { $0.prefix { $0 != ":" } }
        }
        #expect(try brokerUsers("etc/mosquitto/coaty-edge.passwd") == ["coaty-edge"])
        #expect(try brokerUsers("etc/mosquitto/coaty-edge-operators.passwd") == ["coaty-operator"])
        let acl = try root.read("etc/mosquitto/coaty-edge.acl")
        #expect(acl.contains("user coaty-edge\ntopic readwrite coaty/3/orchard/#\n"))
        #expect(acl.contains("user coaty-operator\ntopic readwrite coaty/3/#\n"))

        // The configuration is the example with the login filled in, and the agent's parser accepts it.
        let agentConfig = try JSONValue(parsing: Array(root.read("etc/coaty-edge/agent.json").utf8))
        let example = try JSONValue(
            parsing: Array(String(contentsOfFile: Deploy.path("example-pi.json"), encoding: .utf8).utf8))
        guard case .object(var installed) = agentConfig, case .object(var shipped) = example else {
            Issue.record("agent.json and example-pi.json must be objects")
            return
        }
        #expect(
            installed["communication"]?.serialized()
                == #"{"brokerUrl":"mqtt://localhost:1883","namespace":"orchard","username":"coaty-edge","passwordFile":"/etc/coaty-edge/broker.password"}"#
        )
        installed["communication"] = nil
        shipped["communication"] = nil
        #expect(JSONValue.object(installed) == JSONValue.object(shipped))
        let relocated = try root.read("etc/coaty-edge/agent.json").replacingOccurrences(
            of: "\"/etc/coaty-edge/broker.password\"", with: "\"\(root.file("etc/coaty-edge/broker.password").path)\"")
        let configuration = try Configuration.parse(Array(relocated.utf8), source: "agent.json")
        #expect(configuration.communication.namespace == "orchard")
        #expect(configuration.communication.username == "coaty-edge")
        #expect(configuration.communication.password.map { $0 + "\n" } == agentPassword)

        // The example configuration's rules are copied unchanged, the schema beside them.
        let exampleRules = try FileManager.default.contentsOfDirectory(
            atPath: Deploy.repository.appendingPathComponent("rules/greenhouse").path
        ).filter { $0.hasSuffix(".json") }
        #expect(!exampleRules.isEmpty)
        for rulesFile in exampleRules {
            #expect(
                try root.read("etc/coaty-edge/rules/\(rulesFile)")
                    == String(
                        contentsOf: Deploy.repository.appendingPathComponent("rules/greenhouse/\(rulesFile)"),
                        encoding: .utf8))
        }
        #expect(
            try root.read("etc/coaty-edge/rules.schema.json")
                == String(
                    contentsOf: Deploy.repository.appendingPathComponent("rules/rules.schema.json"), encoding: .utf8))

        // The same command again: nothing at all changes, and it says what it keeps.
        let afterFirst = try snapshot(of: root.url)
        let second = try await install(
            ["--root", root.path, "--namespace", "orchard"], path: swift.path, environment: ["SUDO_USER": "nobody"])
        #expect(second.succeeded, "\(second.output)\(second.errors)")
        #expect(try snapshot(of: root.url) == afterFirst)
        for message in [
            "unchanged: /usr/local/bin/coaty-edge", "group i2c exists", "user coaty-edge exists",
            "keeping: /etc/coaty-edge/broker.password", "keeping the password of coaty-edge",
            "keeping: /etc/coaty-edge/agent.json", "unchanged: /etc/systemd/system/coaty-edge.service",
        ] {
            #expect(second.output.contains(message), "missing: \(message)\n\(second.output)")
        }
    }

    /// --dashboard: the dashboard's program beside the agent's, its unit enabled, where it listens (loopback, the operators'
    /// listener) and a token only root reads; a second run keeps the token and the edited options.
    @Test("--root --dashboard installs the dashboard, its unit, its options and its token", .enabled(if: Deploy.isRoot))
    func installsTheDashboard() async throws {
        let swift = try FakeSwift()
        let root = try makeTargetRoot()
        let first = try await install(
            ["--root", root.path, "--dashboard"], path: swift.path, environment: ["SUDO_USER": "nobody"])
        #expect(first.succeeded, "\(first.output)\(first.errors)")
        func status(_ path: String) throws -> FileStatus { try FileStatus(root.file(path).path) }
        #expect(try status("usr/local/bin/coaty-edge-dashboard") == FileStatus(uid: 0, gid: 0, permissions: 0o755))
        #expect(
            try root.read("etc/systemd/system/coaty-edge-dashboard.service")
                == String(contentsOfFile: Deploy.path("coaty-edge-dashboard.service"), encoding: .utf8))
        #expect(
            try FileManager.default.destinationOfSymbolicLink(
                atPath: root.file("etc/systemd/system/multi-user.target.wants/coaty-edge-dashboard.service").path)
                == "/etc/systemd/system/coaty-edge-dashboard.service")
        #expect(try status("etc/coaty-edge/dashboard.token") == FileStatus(uid: 0, gid: 0, permissions: 0o600))
        let token = try root.read("etc/coaty-edge/dashboard.token")
        #expect(token.range(of: #"^[0-9a-f]{32}\n$"#, options: .regularExpression) != nil)
        #expect(try status("etc/coaty-edge/dashboard.env") == FileStatus(uid: 0, gid: 0, permissions: 0o640))
        #expect(
            try root.read("etc/coaty-edge/dashboard.env").hasSuffix(
                "\nDASHBOARD_OPTIONS=--broker mqtt://localhost:1884 --listen 127.0.0.1:8080\n"))
        #expect(
            first.output.contains("skipped with --root: apt installs into / only; the target needs: ")
                && first.output.contains("libjs-dygraphs"))

        try root.write(
            "# edited\nDASHBOARD_OPTIONS=--broker mqtt://localhost:1884 --listen 0.0.0.0:8080\n",
            to: "etc/coaty-edge/dashboard.env")
        let second = try await install(
            ["--root", root.path, "--dashboard"], path: swift.path, environment: ["SUDO_USER": "nobody"])
        #expect(second.succeeded, "\(second.output)\(second.errors)")
        #expect(try root.read("etc/coaty-edge/dashboard.token") == token)
        #expect(try root.read("etc/coaty-edge/dashboard.env").hasPrefix("# edited\n"))
        for message in [
            "unchanged: /usr/local/bin/coaty-edge-dashboard", "keeping: /etc/coaty-edge/dashboard.token",
            "keeping: /etc/coaty-edge/dashboard.env", "unchanged: /etc/systemd/system/coaty-edge-dashboard.service",
        ] {
            #expect(second.output.contains(message), "missing: \(message)\n\(second.output)")
        }
    }

    /// After the user edited the configuration and the build produced a new binary: the binary is replaced, the edited
    /// configuration and the passwords are kept, and the broker's ACL follows the namespace the configuration now names.
    @Test("a rebuild replaces the binary and keeps the user's configuration", .enabled(if: Deploy.isRoot))
    func rebuildKeepsConfiguration() async throws {
        let root = try makeTargetRoot()
        let firstBuild = try FakeSwift(product: "/bin/true")
        let first = try await install(["--root", root.path], path: firstBuild.path)
        #expect(first.succeeded, "\(first.output)\(first.errors)")

        let edited = try root.read("etc/coaty-edge/agent.json")
            .replacingOccurrences(of: "\"namespace\": \"greenhouse\"", with: "\"namespace\": \"orchard\"")
            .replacingOccurrences(of: "\"name\": \"greenhouse-pi\"", with: "\"name\": \"orchard-pi\"")
        #expect(edited.contains("\"namespace\": \"orchard\""))
        #expect(edited.contains("\"name\": \"orchard-pi\""))
        try Data(edited.utf8).write(to: root.file("etc/coaty-edge/agent.json"))
        let passwords = try (root.read("etc/coaty-edge/broker.password"), root.read("etc/coaty-edge/operator.password"))
        let brokerPasswords = try root.read("etc/mosquitto/coaty-edge.passwd")
        // As an earlier install.sh left it: the agent's password readable by the service's group.
        let agentPassword = root.file("etc/coaty-edge/broker.password").path
        let agentPasswordOwner = try FileManager.default.attributesOfItem(atPath: agentPassword)[.ownerAccountID]
        #expect(chown(agentPassword, 0, gid_t(getgid())) == 0 && chmod(agentPassword, 0o640) == 0)

        let rebuild = try FakeSwift(product: "/bin/false")
        let second = try await install(["--root", root.path], path: rebuild.path)
        #expect(second.succeeded, "\(second.output)\(second.errors)")
        #expect(second.output.contains("update /usr/local/bin/coaty-edge (0755 root:root)"))
        // An edited configuration is the user's: no more reminders to edit the example.
        #expect(!second.output.contains("edit it for this machine's sensors and outputs"))
        let replacedBinary = try await Command(root.file("usr/local/bin/coaty-edge").path).run()
        #expect(replacedBinary.status == 1)
        #expect(try root.read("etc/coaty-edge/agent.json") == edited)
        #expect(try root.read("etc/coaty-edge/broker.password") == passwords.0)
        #expect(
            second.output.contains("set /etc/coaty-edge/broker.password to 0600 coaty-edge:coaty-edge"),
            "\(second.output)")
        let corrected = try FileManager.default.attributesOfItem(atPath: agentPassword)
        #expect(corrected[.posixPermissions] as? Int == 0o600)
        #expect(corrected[.ownerAccountID] as? Int == agentPasswordOwner as? Int)
        #expect(try root.read("etc/coaty-edge/operator.password") == passwords.1)
        #expect(try root.read("etc/mosquitto/coaty-edge.passwd") == brokerPasswords)
        let acl = try root.read("etc/mosquitto/coaty-edge.acl")
        #expect(acl.contains("user coaty-edge\ntopic readwrite coaty/3/orchard/#\n"))
        #expect(!acl.contains("coaty/3/greenhouse/"))
    }
}
