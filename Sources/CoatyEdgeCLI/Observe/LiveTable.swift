/// The live view of `observe` on a terminal: a table of the sources with their last value, rate, age and the
/// actors that receive them, then the latest other events; redrawn in place with ANSI escapes (no curses).
public struct LiveTable: Sendable {
    public var title: String
    public var rows: [ObserveModel.Row]
    /// The latest events other than values, oldest first.
    public var recentEvents: [String]

    /// Switches to the alternate screen and hides the cursor; `leave` undoes it.
    public static let enter = "\u{1B}[?1049h\u{1B}[?25l"
    public static let leave = "\u{1B}[?25h\u{1B}[?1049l"

    public init(title: String, rows: [ObserveModel.Row], recentEvents: [String]) {
        self.title = title
        self.rows = rows
        self.recentEvents = recentEvents
    }

    /// The screen: from the top left, every line cleared to its end, the rest of the screen cleared.
    public func render(width: Int, height: Int) -> String {
        let width = max(width, 40)
        let height = max(height, 8)
        let events = recentEvents.suffix(max(1, min(8, height / 4)))
        // Title, blank, header; then the rows; then blank, "Events" and the events.
        let rowSpace = max(1, height - 3 - (events.isEmpty ? 0 : events.count + 2))
        var lines = [Self.cut(title, to: width), "", header(width: width)]
        let shown = rows.count > rowSpace ? rowSpace - 1 : rows.count
        lines += rows.prefix(shown).map { line(for: $0, width: width) }
        if shown < rows.count { lines.append("… and \(rows.count - shown) more sources") }
        if rows.isEmpty { lines.append("(no IO sources seen yet)") }
        if !events.isEmpty {
            lines += ["", "Events"] + events.map { Self.cut($0, to: width) }
        }
        return "\u{1B}[H" + lines.prefix(height).map { $0 + "\u{1B}[K" }.joined(separator: "\r\n") + "\u{1B}[J"
    }

    struct Columns {
        var source: Int
        var agent: Int
        var value: Int
        var actors: Int
        static let rate = 8
        static let age = 7
    }

    /// Fixed rate and age columns; the rest shared out, sources and actors getting most.
    static func columns(width: Int) -> Columns {
        let flexible = max(24, width - Columns.rate - Columns.age - 5)
        let source = flexible * 30 / 100
        let agent = flexible * 18 / 100
        let value = flexible * 22 / 100
        return Columns(source: source, agent: agent, value: value, actors: flexible - source - agent - value)
    }

    func header(width: Int) -> String {
        let columns = Self.columns(width: width)
        return [
            Self.fit("SOURCE", columns.source), Self.fit("AGENT", columns.agent), Self.fit("VALUE", columns.value),
            Self.fit("RATE", Columns.rate, right: true), Self.fit("AGE", Columns.age, right: true), "ACTORS",
        ].joined(separator: " ")
    }

    func line(for row: ObserveModel.Row, width: Int) -> String {
        let columns = Self.columns(width: width)
        let actors = row.actors.isEmpty ? "-" : row.actors.joined(separator: ", ")
        return [
            Self.fit(row.source, columns.source), Self.fit(row.agent, columns.agent),
            Self.fit(row.value.isEmpty ? "-" : row.value, columns.value),
            Self.fit(row.rate.map(RateFormat.perSecond) ?? "-", Columns.rate, right: true),
            Self.fit(row.age.map(ClockTime.age) ?? "-", Columns.age, right: true), Self.cut(actors, to: columns.actors),
        ].joined(separator: " ")
    }

    /// Cut to `width` characters, with an ellipsis where it was cut.
    static func cut(_ text: String, to width: Int) -> String {
        guard text.count > width else { return text }
        return width <= 1 ? String(text.prefix(width)) : text.prefix(width - 1) + "…"
    }

    /// Cut or padded to exactly `width` characters.
    static func fit(_ text: String, _ width: Int, right: Bool = false) -> String {
        let cut = cut(text, to: width)
        let padding = String(repeating: " ", count: width - cut.count)
        return right ? padding + cut : cut + padding
    }
}
