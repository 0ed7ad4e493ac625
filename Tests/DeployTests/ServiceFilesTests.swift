import CoatyTestSupport
import Foundation
import Testing

@Suite("Deploy scripts, unit and udev rules")
struct ServiceFilesTests {
    @Test("every script in deploy/ is shellcheck clean", .enabled(if: Deploy.has("shellcheck")))
    func scriptsAreShellcheckClean() async throws {
        let scripts = try FileManager.default.contentsOfDirectory(atPath: Deploy.directory.path)
            .filter { $0.hasSuffix(".sh") }.sorted()
        #expect(scripts.contains("install.sh"))
        #expect(scripts.contains("broker-user.sh"))
        // -x follows sourced files; run from deploy/ as a user would lint them.
        let result = try await Command(["shellcheck", "-x"] + scripts, directory: Deploy.directory).run()
        #expect(result.succeeded, "\(result.output)\(result.errors)")
        #expect(result.output.isEmpty)
    }

    /// systemd-analyze insists that ExecStart's program exists, so it checks a copy of the unit whose ExecStart names an
    /// executable in a scratch directory; everything else is the unit as shipped.
    private func unitCopy(in scratch: ScratchDirectory, replacing extra: [(String, String)] = []) throws -> URL {
        let program = scratch.file("coaty-edge")
        try FileManager.default.copyItem(atPath: "/bin/true", toPath: program.path)
        var unit = try String(contentsOfFile: Deploy.path("coaty-edge.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/local/bin/coaty-edge run"))
        unit = unit.replacingOccurrences(of: "ExecStart=/usr/local/bin/coaty-edge", with: "ExecStart=\(program.path)")
        for (old, new) in extra { unit = unit.replacingOccurrences(of: old, with: new) }
        return try scratch.write(unit, to: "coaty-edge.service")
    }

    @Test(
        "systemd-analyze verify accepts the unit without a single warning", .enabled(if: Deploy.has("systemd-analyze")))
    func unitVerifies() async throws {
        let scratch = try ScratchDirectory()
        let unit = try unitCopy(in: scratch)
        let result = try await Command("systemd-analyze", "verify", "--man=no", unit.path).run()
        #expect(result.succeeded, "\(result.errors)")
        let aboutTheUnit = result.errors.split(separator: "\n").filter { $0.contains("coaty-edge") }
        #expect(aboutTheUnit.isEmpty, "\(aboutTheUnit)")
    }

    @Test(
        "systemd-analyze accepts the dashboard's unit without a warning and rates its sandbox below 2.0",
        .enabled(if: Deploy.has("systemd-analyze")))
    func dashboardUnitVerifies() async throws {
        let scratch = try ScratchDirectory()
        let program = scratch.file("coaty-edge-dashboard")
        try FileManager.default.copyItem(atPath: "/bin/true", toPath: program.path)
        let shipped = try String(contentsOfFile: Deploy.path("coaty-edge-dashboard.service"), encoding: .utf8)
        #expect(shipped.contains("ExecStart=/usr/local/bin/coaty-edge-dashboard --username coaty-operator "))
        let unit = try scratch.write(
            shipped.replacingOccurrences(
                of: "ExecStart=/usr/local/bin/coaty-edge-dashboard", with: "ExecStart=\(program.path)"),
            to: "coaty-edge-dashboard.service")
        let verified = try await Command("systemd-analyze", "verify", "--man=no", unit.path).run()
        #expect(verified.succeeded, "\(verified.errors)")
        #expect(
            verified.errors.split(separator: "\n").filter { $0.contains("coaty-edge") }.isEmpty, "\(verified.errors)")
        let security = try await Command("systemd-analyze", "security", "--offline=yes", "--threshold=20", unit.path)
            .run()
        #expect(security.succeeded, "\(security.output)\(security.errors)")
    }

    /// Without this the test above could pass because systemd-analyze stays silent here: it must report a misspelt
    /// directive, an unknown system call group and a bad address family, all of which it only warns about.
    @Test("systemd-analyze verify reports misspelt directives here", .enabled(if: Deploy.has("systemd-analyze")))
    func verifyReportsMistakes() async throws {
        let scratch = try ScratchDirectory()
        let unit = try unitCopy(
            in: scratch,
            replacing: [
                ("ProtectKernelTunables=yes", "ProtectKernelTunable=yes"),
                ("SystemCallFilter=@system-service", "SystemCallFilter=@system-servce"),
                ("AF_INET6", "AF_INET7"),
            ])
        let result = try await Command("systemd-analyze", "verify", "--man=no", unit.path).run()
        #expect(result.errors.contains("Unknown key 'ProtectKernelTunable'"))
        #expect(result.errors.contains("@system-servce"))
        #expect(result.errors.contains("AF_INET7"))
    }

    @Test(
        "systemd's own review rates the sandbox below 2.0 and finds the essential settings",
        .enabled(if: Deploy.has("systemd-analyze")))
    func sandboxExposureIsLow() async throws {
        let scratch = try ScratchDirectory()
        let unit = try unitCopy(in: scratch)
        // --threshold counts in tenths: 20 fails the run when the overall exposure exceeds 2.0 of 10.
        let result = try await Command("systemd-analyze", "security", "--offline=yes", "--threshold=20", unit.path)
            .run()
        #expect(result.succeeded, "\(result.output)\(result.errors)")
        let passed = Set(
            result.outputLines.filter { $0.hasPrefix("✓") }.compactMap { $0.split(separator: " ").dropFirst().first }
                .map(String.init))
        for setting in [
            "User=/DynamicUser=", "NoNewPrivileges=", "CapabilityBoundingSet=~CAP_SYS_ADMIN", "ProtectSystem=",
            "ProtectHome=", "PrivateTmp=", "ProtectKernelTunables=", "ProtectKernelModules=", "ProtectControlGroups=",
            "RestrictAddressFamilies=~AF_NETLINK", "RestrictAddressFamilies=~AF_PACKET", "RestrictNamespaces=~user",
            "LockPersonality=", "MemoryDenyWriteExecute=", "SystemCallFilter=~@privileged", "SystemCallFilter=~@mount",
            "SystemCallArchitectures=", "AmbientCapabilities=",
        ] {
            #expect(passed.contains(setting), "\(setting) is not among the passed checks")
        }
    }

    @Test("the unit runs the installed agent unprivileged with only the I2C and GPIO devices")
    func unitSettings() throws {
        let lines = try String(contentsOfFile: Deploy.path("coaty-edge.service"), encoding: .utf8)
            .split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && $0.contains("=") }
        func values(_ key: String) -> [String] {
            lines.filter { $0.hasPrefix("\(key)=") }.map { String($0.dropFirst(key.count + 1)) }
        }
        #expect(values("ExecStart") == ["/usr/local/bin/coaty-edge run --config /etc/coaty-edge/agent.json"])
        #expect(values("Type") == ["notify"])
        #expect(values("NotifyAccess") == ["main"])
        #expect(values("User") == ["coaty-edge"])
        #expect(values("SupplementaryGroups") == ["i2c gpio"])
        #expect(values("DevicePolicy") == ["closed"])
        #expect(values("DeviceAllow") == ["char-i2c rw", "char-gpiochip rw"])
        #expect(values("CapabilityBoundingSet") == [""])
        #expect(values("Restart") == ["on-failure"])
        #expect(values("RestartPreventExitStatus") == ["78"])
        #expect(values("RestrictAddressFamilies") == ["AF_INET AF_INET6 AF_UNIX"])
    }
}

/// The udev rules, applied by the real `udevadm test` to I2C and GPIO devices that umockdev emulates in sysfs. It runs
/// in a private mount namespace in which only these rules are installed and /etc/group names the two groups, so that
/// neither the host's rules (Debian's i2c-tools sets the same) are involved nor its /dev and /run touched (udevadm
/// test writes /dev/char links and /run/udev data; umockdev needs pseudo terminals, hence a devpts of its own).
@Suite(
    "udev rules", .enabled(if: Deploy.isRoot && Deploy.has("udevadm", "umockdev-run", "unshare")),
    .timeLimit(.minutes(1)))
struct UdevRulesTests {
    private static let i2cGroup = 4711
    private static let gpioGroup = 4712

    private func udevTest(device description: String, sysfsPath: String) async throws -> CommandResult {
        let scratch = try ScratchDirectory("coaty-udev")
        try FileManager.default.createDirectory(at: scratch.file("rules"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Deploy.path("99-coaty-edge.rules"), toPath: scratch.file("rules/99-coaty-edge.rules").path)
        try scratch.write("root:x:0:\ni2c:x:\(Self.i2cGroup):\ngpio:x:\(Self.gpioGroup):\n", to: "group")
        try scratch.write(description, to: "device.umockdev")
        try scratch.write("", to: "null")
        let script = """
            set -e
            mount --bind /dev/null "$1/null"
            for rules in /usr/lib/udev/rules.d /lib/udev/rules.d /usr/local/lib/udev/rules.d /run/udev/rules.d; do
                if [ -d "$rules" ]; then mount -t tmpfs none "$rules"; fi
            done
            mount --bind "$1/rules" /etc/udev/rules.d
            mount --bind "$1/group" /etc/group
            mount -t tmpfs none /run
            mount -t tmpfs none /dev
            touch /dev/null
            mount --bind "$1/null" /dev/null
            mkdir /dev/pts
            mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
            ln -s pts/ptmx /dev/ptmx
            exec umockdev-run --device "$1/device.umockdev" -- udevadm test --action=add "$2"
            """
        return try await Command(
            "unshare", "--mount", "--propagation", "private", "sh", "-c", script, "udev-test", scratch.path, sysfsPath
        ).run(timeout: .seconds(30))
    }

    @Test("/dev/i2c-N goes to group i2c, mode 0660")
    func i2cBus() async throws {
        let result = try await udevTest(
            device: """
                P: /devices/platform/soc/fe804000.i2c/i2c-1/i2c-dev/i2c-1
                N: i2c-1
                E: DEVNAME=/dev/i2c-1
                E: MAJOR=89
                E: MINOR=1
                E: SUBSYSTEM=i2c-dev
                A: dev=89:1\\n

                """, sysfsPath: "/sys/class/i2c-dev/i2c-1")
        #expect(result.succeeded, "\(result.errors)")
        let applied = result.errors.split(separator: "\n").filter { $0.contains("99-coaty-edge.rules:") }
        #expect(applied.contains { $0.hasSuffix("GROUP \(Self.i2cGroup)") }, "\(result.errors)")
        #expect(applied.contains { $0.hasSuffix("MODE 0660") }, "\(result.errors)")
    }

    @Test("/dev/gpiochipN goes to group gpio, mode 0660")
    func gpioChip() async throws {
        let result = try await udevTest(
            device: """
                P: /devices/platform/soc/fe200000.gpio/gpiochip0
                N: gpiochip0
                E: DEVNAME=/dev/gpiochip0
                E: MAJOR=254
                E: MINOR=0
                E: SUBSYSTEM=gpio
                A: dev=254:0\\n

                """, sysfsPath: "/sys/bus/gpio/devices/gpiochip0")
        #expect(result.succeeded, "\(result.errors)")
        let applied = result.errors.split(separator: "\n").filter { $0.contains("99-coaty-edge.rules:") }
        #expect(applied.contains { $0.hasSuffix("GROUP \(Self.gpioGroup)") }, "\(result.errors)")
        #expect(applied.contains { $0.hasSuffix("MODE 0660") }, "\(result.errors)")
    }

    @Test("other devices of the gpio subsystem are left alone")
    func otherGPIODevice() async throws {
        let result = try await udevTest(
            device: """
                P: /devices/platform/soc/fe200000.gpio/gpiochip0/gpio/gpio17
                N: gpio17
                E: SUBSYSTEM=gpio

                """, sysfsPath: "/sys/devices/platform/soc/fe200000.gpio/gpiochip0/gpio/gpio17")
        #expect(result.succeeded, "\(result.errors)")
        #expect(!result.errors.contains("99-coaty-edge.rules:"), "\(result.errors)")
    }
}
