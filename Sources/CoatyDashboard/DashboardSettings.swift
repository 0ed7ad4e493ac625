import CoatyEdgeCLI

/// What `coaty-edge-dashboard` serves, where, and to whom.
public struct DashboardSettings: Sendable {
    /// The address to listen on; only loopback addresses without a token.
    public var host = "127.0.0.1"
    /// 0: a free port, which the program prints.
    public var port = 8080
    /// When set, every request needs it (HTTP basic auth with it as the password, or `Authorization: Bearer`).
    public var token: String?
    /// Milliseconds of value history kept for each source.
    public var historyWindow: Int64 = 3_600_000
    /// Buckets of the history (its resolution: window / buckets).
    public var historyBuckets = 720
    /// Sources with a history; the values of more are still shown, without a chart.
    public var maximumHistories = 1024
    /// Where Debian's libjs-dygraphs installs the charting library (dygraph.min.js and dygraph.min.css).
    public var chartLibraryDirectory = "/usr/share/javascript/dygraphs"
    /// How long a context change waits for the context and for its router.
    public var contextTimeout: Duration = .seconds(3)

    public init() {}

    /// `HOST:PORT`, `[IPv6]:PORT` or `PORT`.
    public mutating func setListen(_ text: String) throws(CommandFailure) {
        var host = self.host
        var portText = text
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = String(text[text.index(after: close)...].dropFirst())
            guard text[text.index(after: close)...].hasPrefix(":") else {
                throw CommandFailure(.usage, "--listen \(text): expected [ADDRESS]:PORT")
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
        }
        guard let port = Int(portText), (0...65535).contains(port), !host.isEmpty else {
            throw CommandFailure(.usage, "--listen \(text): expected HOST:PORT with a port within 0...65535")
        }
        self.host = host
        self.port = port
    }

    /// Loopback addresses are reachable from this machine only.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1"
    }

    /// The page can change the IO context: anywhere but loopback it needs a token.
    public func check() throws(CommandFailure) {
        if !Self.isLoopback(host) && token == nil {
            throw CommandFailure(
                .usage,
                "listening on \(host) needs --token-file: the page can change the IO context (or listen on 127.0.0.1 and use an SSH tunnel)"
            )
        }
        if let token, token.isEmpty { throw CommandFailure(.configuration, "the token file is empty") }
    }
}
