import CoatyTestSupport
import EdgeEmulation
import Foundation
import Testing

@testable import CoatyEdgeCLI

/// `coaty-edge config check` says what a chip label and a line name are on this machine, or lists the chips present.
@Suite(.serialized, .emulatedHardware) struct ConfigCheckGPIOTests {
    @Test func labelsAndLineNamesAreLookedUpOnThisMachine() throws {
        let chip = try EmulatedHardware().addGPIOChip(152, lines: 32, label: "pinctrl-check-152")
        try chip.name(line: 17, "GPIO17")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("agent.json")
        try Data(
            #"""
            {
              "common": {"agentIdentity": {"name": "pi"}, "ioContextNodes": {"ctx": {
                "ioActors": [{"objectId": "fan", "name": "Fan", "valueType": "coaty-edge.Switch"},
                             {"objectId": "lamp", "name": "Lamp", "valueType": "coaty-edge.Switch"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:1883"},
              "devices": {"outputs": [
                {"driver": "gpio-output", "ioActor": "fan", "chip": "pinctrl-check-152", "line": "GPIO17"},
                {"driver": "gpio-output", "ioActor": "lamp", "chip": "pinctrl-bcm2711", "line": 27}]}
            }
            """#.utf8
        ).write(to: file)
        let report = Checks.configuration(file.path)
        #expect(report.status == .success)
        #expect(report.output.contains("  devices    0 sensors, 2 outputs, 0 inputs\n"))
        #expect(
            report.output.contains(
                "  gpio       line GPIO17 of pinctrl-check-152 is gpiochip152 (pinctrl-check-152) line 17 (GPIO17)\n"),
            "\(report.output)")
        #expect(
            report.errors.hasPrefix(
                "\(file.path): $.devices.outputs[1]: line 27 of pinctrl-bcm2711 not found on this machine: no GPIO chip: no GPIO chip named or labelled \"pinctrl-bcm2711\"; chips present: "
            ),
            "\(report.errors)")
        #expect(report.errors.contains("gpiochip152 (pinctrl-check-152, 32 lines)"))
    }
}
