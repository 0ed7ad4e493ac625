import ArgumentParser
import CoatyDashboard
import CoatyEdgeCLI
import CoatyEdgeOptions
import CoatyRuntime
import Logging

@main
/// `coaty-edge-dashboard` (also run as `coaty-edge dashboard`): the live web dashboard, a client like `observe`.
struct CoatyEdgeDashboard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coaty-edge-dashboard",
        abstract: "Serve a live web dashboard of the agents, values, routes, IO contexts and shared objects.",
        discussion: """
            A client like `coaty-edge observe`, with the same broker options. Prints "coaty-edge-dashboard: serving \
            http://HOST:PORT/" once it listens. The page can change the IO context (the Update of `coaty-edge \
            context set`), so listening on an address other than loopback needs --token-file: the browser then asks \
            for a user name (any) and the token as password. Ctrl-C or SIGTERM stops it. Exit statuses as coaty-edge's.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(
        help: ArgumentHelp(
            "Where to serve the page: HOST:PORT, [IPv6]:PORT, or PORT (0: a free port).", valueName: "address"))
    var listen = "127.0.0.1:8080"

    @Option(
        help: ArgumentHelp(
            "A file (mode 0600) holding the token the page asks for; needed beyond loopback.", valueName: "file"))
    var tokenFile: String?

    @Option(help: ArgumentHelp("Seconds of value history kept for each source's chart.", valueName: "seconds"))
    var historyWindow = Seconds(3600)

    @Option(
        help: ArgumentHelp("Points of each chart's history (the window is cut into this many buckets).", valueName: "n")
    )
    var historyPoints = 720

    @Option(help: ArgumentHelp("The directory of Debian's libjs-dygraphs (dygraph.min.js).", valueName: "directory"))
    var chartLibrary = DashboardSettings().chartLibraryDirectory

    func validate() throws {
        guard (2...10_000).contains(historyPoints) else {
            throw ValidationError("--history-points must be within 2...10000")
        }
    }

    func run() async throws {
        try await perform {
            var settings = DashboardSettings()
            try settings.setListen(listen)
            settings.historyWindow = Int64(historyWindow.value * 1000)
            settings.historyBuckets = historyPoints
            settings.chartLibraryDirectory = chartLibrary
            if let tokenFile {
                do {
                    settings.token = try PasswordFile.password(
                        in: tokenFile, allowingOpenFile: connection.allowOpenPasswordFile)
                } catch {
                    throw CommandFailure(.configuration, "\(error)")
                }
            }
            try settings.check()
            let configured = settings
            let level = connection.logLevel.level
            try await untilSignalled {
                try await connection.withSession { session in
                    var logger = Logger(label: "coaty-edge.dashboard")
                    logger.logLevel = level
                    try await Dashboard.run(session, settings: configured, logger: logger)
                }
            }
        }
    }
}
