import CoatyJSON
import Logging
import Testing

@testable import CoatyEdgeCLI

@Suite struct LiveTableTests {
    static let rows = [
        ObserveModel.Row(
            sourceId: "s1", source: "Boiler temperature (TMP102, every value)", agent: "Temperature sensors",
            context: "Ctx",
            value: "21.5", rate: 2, age: 350, actors: ["Display", "Alarm panel"]),
        ObserveModel.Row(
            sourceId: "s2", source: "Door", agent: "Pi", context: "Ctx", value: "", rate: nil, age: nil, actors: []),
    ]

    @Test func drawsRowsCutToTheWidthAndTheLatestEvents() {
        let screen = LiveTable(
            title: "coaty-edge observe", rows: Self.rows, recentEvents: ["12:00:00.000 agent joined Pi"]
        )
        .render(width: 80, height: 20)
        #expect(screen.hasPrefix("\u{1B}[H"))
        #expect(screen.hasSuffix("\u{1B}[J"))
        let lines = screen.dropFirst(3).dropLast(3).components(separatedBy: "\u{1B}[K\r\n")
        #expect(lines[0] == "coaty-edge observe")
        #expect(lines[2].hasPrefix("SOURCE"))
        #expect(lines[3].hasPrefix("Boiler temperatur… Temperatu… 21.5 "))
        #expect(lines[3].contains("2.0/s") && lines[3].contains("350ms"))
        #expect(lines[4].hasPrefix("Door ") && lines[4].hasSuffix("-"))
        #expect(lines.allSatisfy { $0.replacingOccurrences(of: "\u{1B}[K", with: "").count <= 80 })
        #expect(lines.last == "12:00:00.000 agent joined Pi\u{1B}[K")
    }

    @Test func saysHowManyRowsDidNotFit() {
        let rows = (1...30).map {
            ObserveModel.Row(
                sourceId: "\($0)", source: "S\($0)", agent: "A", context: "C", value: "1", rate: 1, age: 0, actors: [])
        }
        let screen = LiveTable(title: "t", rows: rows, recentEvents: []).render(width: 60, height: 12)
        #expect(screen.contains("… and 22 more sources"))
        #expect(screen.components(separatedBy: "\r\n").count == 12)
    }

    @Test func agesAndRates() {
        #expect(ClockTime.age(850) == "850ms")
        #expect(ClockTime.age(4_250) == "4.2s")
        #expect(ClockTime.age(192_000) == "3m12s")
        #expect(ClockTime.age(7_500_000) == "2h05m")
        #expect(RateFormat.perSecond(0.333) == "0.33/s")
        #expect(RateFormat.perSecond(123.4) == "123/s")
    }
}

@Suite struct LogLineTests {
    @Test func journalLinesHaveSyslogPrioritiesAndNoTime() {
        let line = LineLogHandler.line(
            level: .warning, label: "coaty.communication", message: "connection lost", metadata: [:], format: .journal,
            time: (0, 0))
        #expect(line == "<4>coaty.communication: connection lost\n")
        #expect(LineLogHandler.syslogPriority(.critical) == 2)
        #expect(LineLogHandler.syslogPriority(.error) == 3)
        #expect(LineLogHandler.syslogPriority(.notice) == 5)
        #expect(LineLogHandler.syslogPriority(.info) == 6)
        #expect(LineLogHandler.syslogPriority(.debug) == 7)
    }

    @Test func plainLinesHaveTimeAndLevelAndOneLinePerEvent() {
        let line = LineLogHandler.line(
            level: .error, label: "coaty-edge", message: "rules do not load:\nr.json: $.rules: bad",
            metadata: ["file": "r.json"],
            format: .plain, time: (1_700_000_000, 42))
        #expect(
            line == "2023-11-14T22:13:20.042Z error coaty-edge: rules do not load: | r.json: $.rules: bad file=r.json\n"
        )
    }

    @Test func theJournalIsUsedOnlyWhenStandardErrorIsItsStream() {
        #expect(LogFormat.detect(journalStream: "8:12345", device: 8, inode: 12345) == .journal)
        #expect(LogFormat.detect(journalStream: "8:12345", device: 8, inode: 999) == .plain)
        #expect(LogFormat.detect(journalStream: nil, device: 8, inode: 12345) == .plain)
        #expect(LogFormat.detect(journalStream: "garbage", device: 8, inode: 12345) == .plain)
    }
}

@Suite struct ContextValueTests {
    @Test func valuesAreJSONWhenTheyParseElseStrings() {
        #expect(ContextCommands.parseValue("21.5") == .number(21.5))
        #expect(ContextCommands.parseValue("true") == .bool(true))
        #expect(ContextCommands.parseValue(#""emergency""#) == .string("emergency"))
        #expect(ContextCommands.parseValue("emergency") == .string("emergency"))
        #expect(ContextCommands.parseValue(#"{"a": [1]}"#) == ["a": [1]])
    }

    @Test func identifyingMembersAndTheVersionAreNotSet() {
        #expect(ContextCommands.refusal(forKey: "operatingState") == nil)
        #expect(ContextCommands.refusal(forKey: "objectId") != nil)
        #expect(ContextCommands.refusal(forKey: "contextVersion")?.contains("kept by the router") == true)
        #expect(ContextCommands.refusal(forKey: "expectedContextVersion")?.contains("--expected-version") == true)
        #expect(ContextCommands.refusal(forKey: "") != nil)
    }
}
