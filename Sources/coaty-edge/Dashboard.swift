import ArgumentParser
import CoatyEdgeCLI
import CoatyEdgeOptions

#if canImport(Glibc)
    import Glibc
#endif

/// `coaty-edge dashboard` runs `coaty-edge-dashboard`, a program of its own: the web server library stays out of
/// this executable, so that `coaty-edge run` does not map it.
struct Dashboard: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Serve a live web dashboard of the agents, values, routes and IO contexts (runs coaty-edge-dashboard).",
        discussion: """
            Takes the options of `coaty-edge-dashboard --help`: the broker options of the other client commands, \
            --listen HOST:PORT (default 127.0.0.1:8080), --token-file FILE (required to listen on any other \
            address), --history-window SECONDS. The program is looked for next to coaty-edge, then on the PATH.
            """)

    @Argument(parsing: .captureForPassthrough, help: "The options of coaty-edge-dashboard.")
    var arguments: [String] = []

    static let programName = "coaty-edge-dashboard"

    func run() throws {
        guard let program = Self.locate() else {
            StandardError.write("coaty-edge: \(Self.programName) is not installed next to coaty-edge nor on the PATH\n")
            throw ExitCode(ExitStatus.unavailable.rawValue)
        }
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        execv(program, argv)
        let reason = String(cString: strerror(errno))
        StandardError.write("coaty-edge: cannot run \(program): \(reason)\n")
        throw ExitCode(ExitStatus.unavailable.rawValue)
    }

    /// Next to this executable (a build directory, /usr/local/bin), else the first on the PATH.
    static func locate() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        var candidates: [String] = []
        if length > 0 {
            let path = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let slash = path.lastIndex(of: "/") { candidates.append(String(path[..<slash]) + "/" + programName) }
        }
        if let path = getenv("PATH") {
            candidates += String(cString: path).split(separator: ":").map { "\($0)/\(programName)" }
        }
        return candidates.first { access($0, X_OK) == 0 }
    }
}
