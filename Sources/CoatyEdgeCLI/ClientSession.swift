import CoatyBrokerDiscovery
import CoatyCommunication
import CoatyFiles
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import Logging
import UnixSignals

/// How a client subcommand reaches the broker: the command-line options, over the `communication` section of an
/// agent configuration when one is given, over the defaults (`mqtt://127.0.0.1:1883`, namespace "-").
public struct BrokerSettings: Sendable {
    public var brokerURL: String?
    public var namespace: String?
    /// Observe the events of every namespace (Coaty's cross-namespacing).
    public var allNamespaces = false
    public var username: String?
    public var passwordFile: String?
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    /// An agent configuration whose `communication` section gives the defaults.
    public var configurationFile: String?
    /// Accepts a password file that its group or others may read.
    public var allowsOpenPasswordFile = false

    public init() {}

    public func communicationOptions() throws(CommandFailure) -> CommunicationOptions {
        var options = CommunicationOptions()
        if let configurationFile {
            do {
                options = try Configuration.load(
                    file: configurationFile, allowsOpenPasswordFile: allowsOpenPasswordFile
                )
                .communication
            } catch {
                throw CommandFailure(.configuration, error.description)
            }
        }
        if let brokerURL {
            let address: BrokerAddress
            do {
                address = try BrokerAddress(parsing: brokerURL)
            } catch {
                throw CommandFailure(.usage, error.description)
            }
            switch address {
            case .url(let url):
                options.host = url.host
                options.port = url.port
                options.mdnsServiceName = nil
                if url.usesTLS && options.tls == nil && caFile == nil {
                    throw CommandFailure(.usage, "an mqtts:// broker needs --ca-file")
                }
            case .mdns(let serviceName):
                options.mdnsServiceName = serviceName
            }
        }
        if let namespace {
            guard CoatyName.isValid(namespace) else {
                throw CommandFailure(.usage, "namespace \"\(namespace)\" must be non-empty without '+', '#' or '/'")
            }
            options.namespace = namespace
        }
        if allNamespaces { options.shouldEnableCrossNamespacing = true }
        if let username { options.username = username }
        if let passwordFile {
            do {
                options.password = try PasswordFile.password(in: passwordFile, allowingOpenFile: allowsOpenPasswordFile)
            } catch {
                switch error {
                case .open: throw CommandFailure(.configuration, error.description)
                case .unreadable: throw CommandFailure(.usage, error.description)
                }
            }
        }
        if let caFile {
            options.tls = MQTTTLSOptions(caFile: caFile, certFile: certFile, keyFile: keyFile)
        } else if certFile != nil || keyFile != nil {
            guard var tls = options.tls else {
                throw CommandFailure(.usage, "--cert-file and --key-file need --ca-file")
            }
            tls.certFile = certFile ?? tls.certFile
            tls.keyFile = keyFile ?? tls.keyFile
            options.tls = tls
        }
        if let tls = options.tls {
            guard (tls.certFile == nil) == (tls.keyFile == nil) else {
                throw CommandFailure(.usage, "--cert-file and --key-file go together")
            }
            try checkTLSFiles(tls)
        }
        return options
    }
}

/// A client subcommand's own agent on the broker ("coaty-edge cli"): it joins like any Coaty agent, so it can
/// discover, call and update, and leaves with a Deadvertise.
public struct ClientSession: Sendable {
    public static let identityName = "coaty-edge cli"

    public let manager: CommunicationManager
    public let presence: AgentPresence

    /// What `agents` and `observe` keep about the fleet: an agent's default (1024 agents) would hide the rest of a
    /// larger fleet from the operator, whose command runs for a while and may take more memory (about 2 KiB an
    /// agent with one IO node).
    public static let presenceLimits = PresenceLimits(
        agents: RetentionLimit(maximumCount: 16_384, maximumBytes: 128 * 1024 * 1024))

    public init(options: CommunicationOptions, censusTimeout: Duration = .seconds(3)) {
        manager = CommunicationManager(
            identity: Identity(name: Self.identityName), options: options, logger: Logger(label: "coaty-edge.cli"))
        presence = AgentPresence(manager: manager, censusTimeout: censusTimeout, limits: Self.presenceLimits)
    }

    /// Connects, runs `body` once online, then leaves. Fails with `.unavailable` if the broker does not accept the
    /// connection within `timeout`, naming the last attempt's reason.
    public func run<T: Sendable>(
        connectTimeout timeout: Duration, _ body: @escaping @Sendable (ClientSession) async throws -> T
    ) async throws -> T {
        let states = manager.communicationStates()
        manager.start()
        let isOnline = await firstElement(of: states, where: \.isOnline, within: timeout) != nil
        guard isOnline else {
            let failure = manager.connectionFailure
            await manager.stop()
            let broker = manager.options.brokerDescription
            // The reason of the last attempt: the broker's refusal, the TLS library's or the system's error.
            throw CommandFailure(
                .unavailable,
                failure.map { "cannot connect to the broker at \(broker): \($0)" }
                    ?? "cannot reach the broker at \(broker) within \(timeout)")
        }
        do {
            let result = try await body(self)
            await manager.stop()
            return result
        } catch {
            await manager.stop()
            throw error
        }
    }
}

/// The first element of `sequence` that satisfies `predicate`, or nil when none comes within `timeout`.
func firstElement<S: AsyncSequence & Sendable>(
    of sequence: S, where predicate: @escaping @Sendable (S.Element) -> Bool, within timeout: Duration
) async -> S.Element? where S.Element: Sendable {
    await withTaskGroup(of: S.Element?.self) { group in
        group.addTask {
            do {
                for try await element in sequence where predicate(element) { return element }
            } catch {}
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        return await group.next() ?? nil
    }
}

/// libmosquitto and OpenSSL open the TLS files themselves, and would block on a FIFO: what is there must be a regular
/// file (a missing or unreadable one is reported by the connection).
private func checkTLSFiles(_ tls: MQTTTLSOptions) throws(CommandFailure) {
    for file in [tls.caFile, tls.certFile, tls.keyFile].compactMap(\.self) {
        do {
            try BoundedFile.checkRegular(file)
        } catch {
            if case .notRegular = error.code { throw CommandFailure(.usage, error.description) }
        }
    }
}

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` until it returns or SIGINT or SIGTERM arrives, which cancels it (and waits for it to wind up).
public func untilSignalled(_ body: @escaping @Sendable () async throws -> Void) async throws {
    let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await body() }
        group.addTask {
            for await _ in signals { return }
        }
        defer { group.cancelAll() }
        try await group.next()
    }
}
