import CoatyCommunication
import CoatyIORouting
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import Glibc
import Synchronization

/// `coaty-edge-bench fleet`: many simulated agents in this one process (as many as its descriptors allow: see
/// `Options.maximumAgents`), each a container with its own connection to
/// the broker, its identity and one IoNode (one IO source, every tenth also an actor), so that presence, `agents`
/// and `observe` can be measured against a fleet larger than the machine can run as processes
/// (Tests/Tools/measure-fleet.sh drives it, with as many processes as it needs). It prints one line per phase, on standard output:
///
///     online 150 agents in 4.21 s
///     dropped 50 connections in 0.05 s
///     cpu 12.3 s peak rss 210.5 MiB          (at the stop)
///
/// and runs until SIGTERM or SIGINT; `--drop K` breaks off K agents' connections without a
/// DISCONNECT once every agent is online and the file `--drop-when FILE` exists, so that the broker publishes their
/// last wills.
struct FleetSimulation {
    struct Options {
        var agents = 100
        var host = "127.0.0.1"
        var port = 1883
        var namePrefix = "sim"
        var context = "Fleet"
        var drop = 0
        var dropWhen: String?
        /// What one simulated agent holds open: its socket, the duplicate the transport keeps for an abrupt stop,
        /// the eventfd that wakes its network thread and libmosquitto's wake-up socket pair (and one thread). The
        /// transport waits with poll(), so descriptors from 1024 on connect as well (plain TCP; libmosquitto's TLS
        /// handshake still uses select()).
        static let descriptorsPerAgent = 5
        /// Descriptors left for the rest of the process: standard streams, the runtime's, the log.
        static let otherDescriptors = 64

        /// Raises this process's limit of open files to the hard limit and says how many agents it then holds.
        static func maximumAgents() -> (agents: Int, descriptors: Int) {
            var limit = rlimit()
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
            guard getrlimit(resource, &limit) == 0 else { return (0, 0) }
            if limit.rlim_cur < limit.rlim_max {
                var raised = limit
                raised.rlim_cur = limit.rlim_max
                if setrlimit(resource, &raised) == 0 { limit = raised }
            }
            let descriptors = Int(clamping: limit.rlim_cur)
            return (max(0, (descriptors - otherDescriptors) / descriptorsPerAgent), descriptors)
        }

        static let usage = """
            usage: coaty-edge-bench fleet --broker mqtt://HOST:PORT [--agents N] [--name-prefix P] [--context NAME]
                                          [--drop K --drop-when FILE]

            Runs N simulated agents on the broker (default 100; each holds 5 open files, and the process raises its
            limit to the hard one, ulimit -Hn): each connects with its own client, advertises its identity and one
            IoNode with one IO source (every tenth also an IO actor), and answers Discover, as a coaty-edge agent
            does. Prints when all are online, and the process's CPU time and memory; runs until SIGTERM or SIGINT.
            --drop K breaks off K agents' connections (no DISCONNECT: the broker publishes their last wills) once
            FILE exists.
            """

        init(arguments: some Sequence<String>) throws(UsageError) {
            var arguments = ArgumentReader(arguments)
            func value(of option: String) throws(UsageError) -> String { try arguments.value(of: option) }
            func count(of option: String) throws(UsageError) -> Int { try arguments.count(of: option, atLeast: 0) }
            while let argument = arguments.next() {
                switch argument {
                case "--agents": agents = try count(of: argument)
                case "--name-prefix": namePrefix = try value(of: argument)
                case "--context": context = try value(of: argument)
                case "--drop": drop = try count(of: argument)
                case "--drop-when": dropWhen = try value(of: argument)
                case "--broker":
                    let text = try value(of: argument)
                    do {
                        let url = try MQTTBrokerURL(parsing: text)
                        host = url.host
                        port = url.port
                    } catch {
                        throw UsageError("--broker: \(error)")
                    }
                case "--help", "-h": throw UsageError(nil)
                default: throw UsageError("unknown option \(argument)")
                }
            }
            let (maximum, descriptors) = Self.maximumAgents()
            guard agents <= maximum else {
                throw UsageError(
                    "--agents \(agents): this process may open \(descriptors) files (ulimit -Hn), which hold \(maximum) "
                        + "agents of \(Self.descriptorsPerAgent) descriptors each; raise the hard limit or run several processes"
                )
            }
            guard drop <= agents else { throw UsageError("--drop \(drop) is more than --agents \(agents)") }
            guard drop == 0 || dropWhen != nil else { throw UsageError("--drop needs --drop-when FILE") }
        }
    }

    /// The connection a container makes, kept so that it can be broken off as a crash would.
    final class Connection: Sendable {
        let transport = Mutex<(any MQTTTransport)?>(nil)
    }

    let options: Options

    func run() async throws {
        let started = monotonicNanoseconds()
        var containers: [Container] = []
        var connections: [Connection] = []
        for index in 0..<options.agents {
            let name = "\(options.namePrefix)-\(String(repeating: "0", count: max(0, 4 - String(index).count)))\(index)"
            let source = IoSource(name: "\(name) temperature", valueType: "coaty-edge.Temperature[Celsius]")
            let actors = index % 10 == 0 ? [IoActor(name: "\(name) fan", valueType: "coaty-edge.Switch")] : []
            let connection = Connection()
            let container = try await Container.resolve(
                configuration: Configuration(
                    identity: Identity(name: name),
                    ioNodes: [IoNodeDefinition(contextName: options.context, ioSources: [source], ioActors: actors)],
                    communication: CommunicationOptions(host: options.host, port: options.port, reconnect: .fastResume)),
                controllers: [],
                makeTransport: { () throws(MQTTError) in
                    let transport = try MosquittoTransport()
                    connection.transport.withLock { $0 = transport }
                    return transport
                })
            container.start()
            containers.append(container)
            connections.append(connection)
        }
        while !containers.allSatisfy({ $0.communicationManager.communicationState == .online }) {
            try await Task.sleep(for: .milliseconds(50))
        }
        let online = Double(monotonicNanoseconds() - started) / 1e9
        print("online \(options.agents) agents in \((online * 100).rounded() / 100) s")
        fflush(nil)

        if options.drop > 0, let trigger = options.dropWhen {
            while access(trigger, F_OK) != 0 { try await Task.sleep(for: .milliseconds(50)) }
            let dropping = monotonicNanoseconds()
            // All at once, as a power cut would: one after the other, each waits for its network thread to end.
            await withDiscardingTaskGroup { group in
                for connection in connections.suffix(options.drop) {
                    group.addTask { await connection.transport.withLock { $0 }?.disconnect(.abrupt) }
                }
            }
            let took = Double(monotonicNanoseconds() - dropping) / 1e9
            print("dropped \(options.drop) connections in \((took * 100).rounded() / 100) s")
            fflush(nil)
        }
        await Self.waitForStop()
        for container in containers.dropLast(options.drop) { await container.shutdown() }
        print(Self.usage())
        fflush(nil)
    }

    /// This process's CPU time and peak memory so far.
    static func usage() -> String {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let cpu =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
                usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let peak = Double(usage.ru_maxrss) / 1024
        return "cpu \((cpu * 10).rounded() / 10) s peak rss \((peak * 10).rounded() / 10) MiB"
    }

    /// Until SIGTERM or SIGINT.
    static func waitForStop() async {
        for signal in [SIGTERM, SIGINT] {
            Glibc.signal(signal) { _ in stopRequested.store(true, ordering: .relaxed) }
        }
        while !stopRequested.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(100)) }
    }
}

private let stopRequested = Atomic<Bool>(false)
