import CoatyTestSupport
import Foundation
import Testing

/// install.sh --binary and --deb: a binary or package built elsewhere is checked against this machine before anything
/// is installed (the installs themselves run in Tests/Package/run, in a Debian root).
@Suite("install.sh with a binary or package built elsewhere", .timeLimit(.minutes(2)))
struct PrebuiltInstallTests {
    private static var machineArchitecture: String {
        get async throws {
            let result = try await Command("dpkg", "--print-architecture").run()
            return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// An architecture that is not this machine's, and its ELF machine number.
    private static func foreignArchitecture(than machine: String) -> (name: String, elfMachine: UInt16) {
        machine == "arm64" ? ("amd64", 62) : ("arm64", 183)
    }

    private func install(_ arguments: [String]) async throws -> CommandResult {
        try await Command([Deploy.path("install.sh")] + arguments).run(timeout: .seconds(90))
    }

    /// A copy of /bin/true whose ELF header names another machine, as a binary built for a Pi does on a PC.
    private func foreignBinary(in directory: ScratchDirectory, machine: UInt16) throws -> URL {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "/bin/true")))
        try #require(bytes.count > 20 && bytes[0..<4] == [0x7F, 0x45, 0x4C, 0x46])
        bytes[18] = UInt8(machine & 0xFF)
        bytes[19] = UInt8(machine >> 8)
        let file = directory.file("coaty-edge")
        try Data(bytes).write(to: file)
        chmod(file.path, 0o755)
        return file
    }

    /// A package named coaty-edge for ARCHITECTURE with nothing in it but its control file.
    private func package(in directory: ScratchDirectory, architecture: String, version: String = "1.2.3") async throws
        -> URL
    {
        try directory.write(
            """
            Package: coaty-edge
            Version: \(version)
            Architecture: \(architecture)
            Maintainer: test <test@example.invalid>
            Description: test package

            """, to: "tree/DEBIAN/control")
        let deb = directory.file("coaty-edge_\(version)_\(architecture).deb")
        let result = try await Command(
            "dpkg-deb", "--root-owner-group", "--build", directory.file("tree").path, deb.path
        )
        .run()
        try #require(result.succeeded, "\(result.errors)")
        return deb
    }

    @Test("--binary refuses a binary for another architecture, naming both", .enabled(if: Deploy.has("dpkg")))
    func binaryOfAnotherArchitecture() async throws {
        let machine = try await Self.machineArchitecture
        let foreign = Self.foreignArchitecture(than: machine)
        let directory = try ScratchDirectory()
        let root = try makeTargetRoot()
        let binary = try foreignBinary(in: directory, machine: foreign.elfMachine)

        let result = try await install(["--dry-run", "--root", root.path, "--binary", binary.path])

        #expect(result.status == 1)
        #expect(
            result.errors.contains("\(binary.path) is for \(foreign.name), this machine is \(machine)"),
            "\(result.errors)")
        #expect(!result.output.contains("would install /usr/local/bin/coaty-edge"))
    }

    @Test(
        "--binary refuses a binary whose shared libraries are missing here",
        .enabled(if: Deploy.isRoot && Deploy.has("cc", "dpkg")))
    func binaryWithMissingLibrary() async throws {
        let directory = try ScratchDirectory()
        let root = try makeTargetRoot()
        // A program linked against a library that then goes away, as one built against another system's libraries.
        try directory.write("int coaty_missing(void) { return 0; }\n", to: "missing.c")
        try directory.write("int coaty_missing(void);\nint main(void) { return coaty_missing(); }\n", to: "main.c")
        for command in [
            [
                "cc", "-shared", "-fPIC", "-o", directory.file("libcoatymissing.so.1").path,
                directory.file("missing.c").path,
                "-Wl,-soname,libcoatymissing.so.1",
            ],
            [
                "cc", "-o", directory.file("coaty-edge").path, directory.file("main.c").path,
                directory.file("libcoatymissing.so.1").path,
            ],
        ] {
            let built = try await Command(command).run()
            try #require(built.succeeded, "\(built.errors)")
        }
        try FileManager.default.removeItem(at: directory.file("libcoatymissing.so.1"))
        let before = try snapshot(of: root.url)

        let result = try await install(["--root", root.path, "--binary", directory.file("coaty-edge").path])

        #expect(result.status == 1)
        #expect(
            result.errors.contains("needs shared libraries this machine lacks: libcoatymissing.so.1"),
            "\(result.errors)")
        #expect(try snapshot(of: root.url) == before)
    }

    @Test(
        "--binary accepts a binary whose architecture and libraries fit, and says so", .enabled(if: Deploy.has("dpkg")))
    func binaryThatFits() async throws {
        let root = try makeTargetRoot()

        let result = try await install(["--dry-run", "--root", root.path, "--binary", "/bin/true"])

        #expect(result.succeeded, "\(result.errors)")
        #expect(result.output.contains("architecture: \(try await Self.machineArchitecture), as this machine"))
        #expect(result.output.contains("shared libraries: all present"))
        #expect(result.output.contains("would install /usr/local/bin/coaty-edge"))
    }

    @Test("--deb refuses a package for another architecture", .enabled(if: Deploy.has("dpkg", "dpkg-deb")))
    func packageOfAnotherArchitecture() async throws {
        let machine = try await Self.machineArchitecture
        let foreign = Self.foreignArchitecture(than: machine).name
        let directory = try ScratchDirectory()
        let deb = try await package(in: directory, architecture: foreign)

        let result = try await install(["--dry-run", "--deb", deb.path])

        #expect(result.status == 1)
        #expect(result.errors.contains("\(deb.path) is for \(foreign), this machine is \(machine)"), "\(result.errors)")
        #expect(!result.output.contains("apt-get install"))
    }

    @Test(
        "--deb installs the package and the broker package beside it of the same version with apt",
        .enabled(if: Deploy.has("dpkg", "dpkg-deb")))
    func packageThatFits() async throws {
        let machine = try await Self.machineArchitecture
        let directory = try ScratchDirectory()
        let deb = try await package(in: directory, architecture: machine)
        try directory.write("", to: "coaty-edge-broker_1.2.3_all.deb")
        try directory.write("", to: "coaty-edge-broker_1.2.2_all.deb")

        let result = try await install(["--dry-run", "--deb", deb.path])

        #expect(result.succeeded, "\(result.errors)")
        #expect(result.output.contains("coaty-edge 1.2.3 for \(machine), as this machine"))
        #expect(
            result.output.contains(
                "would run apt-get install \(deb.path) \(directory.file("coaty-edge-broker_1.2.3_all.deb").path)"),
            "\(result.output)")
        #expect(!result.output.contains("swift build"))
    }

    @Test("--deb refuses what it cannot do: another package, --root, --tls")
    func packageRefusals() async throws {
        let directory = try ScratchDirectory()
        let notAPackage = try directory.write("not a package", to: "coaty-edge_1.0_amd64.deb")

        let wrongFile = try await install(["--dry-run", "--deb", notAPackage.path])
        #expect(wrongFile.status == 1)
        #expect(wrongFile.errors.contains("is not a Debian package"), "\(wrongFile.errors)")

        let withRoot = try await install(["--dry-run", "--root", directory.path, "--deb", notAPackage.path])
        #expect(withRoot.status == 1)
        #expect(withRoot.errors.contains("--deb installs into / only"), "\(withRoot.errors)")

        let withTLS = try await install(["--dry-run", "--tls", "--deb", notAPackage.path])
        #expect(withTLS.status == 1)
        #expect(withTLS.errors.contains("--tls needs the other ways"), "\(withTLS.errors)")
    }
}
