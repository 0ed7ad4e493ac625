import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyRuntime
import CoatySharedObjects
import CoreMetrics
import Logging
import Synchronization

/// Publishes the agent's points on plain MQTT topics and, with a `homeAssistant` section, announces them to Home
/// Assistant by MQTT discovery; takes commands for outputs and setpoints from `/set` topics.
///
/// It has a connection of its own, because MQTT gives each connection one last will and the agent's Coaty
/// connection's will is its Deadvertise. This connection's will is `offline`, retained, on `<prefix>/<agent>/status`;
/// on each connect it publishes the discovery configs, the current states and then `online` there (retained). So
/// when the agent dies (SIGKILL, power loss) the broker publishes `offline` after 1.5 keep-alive periods, and on a
/// clean stop the bridge publishes the outputs' safe states and `offline` itself before it disconnects. Discovery
/// configs are retained and sent again when Home Assistant announces `online` on `<discoveryPrefix>/status`; a
/// retained config of this agent for a point it no longer has is cleared (an empty retained message), which
/// removes the entity.
package final class MQTTTopicsBridge: Controller {
    public let settings: BridgeSettings
    private let host: any PointHost
    private let connection: ConnectionSettings
    private let makeTransport: @Sendable () throws(MQTTError) -> any MQTTTransport
    private let active = Mutex<(any MQTTTransport)?>(nil)
    private let setpointValues = Mutex<[String: JSONValue]>([:])
    private let rejectionLog = LogBudget()
    private let pointsById: [String: Point]
    private let pointsByIoId: [String: Point]
    private let configTopics: Set<String>

    /// The broker connection: the agent's broker, keep-alive, TLS and reconnect policy, with the bridge's login
    /// when it has one.
    public struct ConnectionSettings: Sendable {
        public var options: MQTTConnectOptions

        public init(communication: CommunicationOptions, settings: BridgeSettings) {
            let will = MQTTMessage(topic: settings.statusTopic, payload: Array("offline".utf8), retain: true)
            options = MQTTConnectOptions(
                host: communication.host, port: communication.port, clientId: "coaty-edge-\(settings.agentId)-topics",
                keepAlive: communication.keepAlive, username: settings.username ?? communication.username,
                password: settings.username == nil ? communication.password : settings.password, tls: communication.tls,
                will: will, reconnect: communication.reconnect, maximumInboundPayload: 65536)
        }
    }

    /// Largest command payload taken; longer ones are counted and dropped.
    static let maximumCommandBytes = 256

    public init(
        settings: BridgeSettings, host: any PointHost, connection: ConnectionSettings,
        makeTransport: @escaping @Sendable () throws(MQTTError) -> any MQTTTransport = { () throws(MQTTError) in
            try MosquittoTransport()
        }
    ) {
        self.settings = settings
        self.host = host
        self.connection = connection
        self.makeTransport = makeTransport
        pointsById = Dictionary(settings.points.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        pointsByIoId = Dictionary(
            settings.points.compactMap { point in point.ioPointId.map { ($0, point) } },
            uniquingKeysWith: { first, _ in first })
        configTopics = Set(Discovery.messages(for: settings).map(\.topic))
    }

    public func whileStarted(_ context: ControllerContext) async {
        let logger = context.logger
        let transport: any MQTTTransport
        do {
            transport = try makeTransport()
        } catch {
            logger.error("MQTT topics: cannot create a connection: \(error)")
            return
        }
        let (inbound, inboundContinuation) = AsyncStream.makeStream(
            of: MQTTInbound.self, bufferingPolicy: .bufferingNewest(1000))
        do {
            try transport.connect(connection.options, executor: nil) { inboundContinuation.yield($0) }
        } catch {
            logger.error("MQTT topics: cannot connect: \(error)")
            return
        }
        active.withLock { $0 = transport }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.follow(transport.connectionEvents, on: transport, logger: logger) }
            group.addTask {
                for await message in inbound { await self.handle(message, on: transport, context: context) }
            }
            group.addTask {
                for await value in self.host.feed.values() {
                    guard let point = self.pointsByIoId[value.ioPointId] else { continue }
                    self.publishState(value.value, of: point, on: transport)
                }
            }
            for point in settings.points {
                guard case .setpoint(let setpoint) = point.kind else { continue }
                group.addTask {
                    await self.follow(setpoint, of: point, sharedObjects: context.sharedObjects, on: transport)
                }
            }
        }
        // A stop sent `offline` and disconnected already; otherwise the broker publishes the will.
        if let transport = active.withLock({ active in
            defer { active = nil }; return active
        }) {
            await transport.disconnect(.abrupt)
        }
    }

    /// On a clean stop, after the outputs took their safe state: their states, `offline`, and a clean disconnect.
    public func onStopping(_ context: ControllerContext) async {
        guard
            let transport = active.withLock({ active in
                defer { active = nil }; return active
            })
        else { return }
        publishCurrentStates(on: transport)
        try? transport.publish(MQTTMessage(topic: settings.statusTopic, payload: Array("offline".utf8), retain: true))
        await transport.disconnect(.clean)
    }

    // MARK: - Connection

    private func follow(_ events: AsyncStream<MQTTConnectionEvent>, on transport: any MQTTTransport, logger: Logger)
        async
    {
        var lastFailure: String?
        for await event in events {
            switch event {
            case .connected:
                lastFailure = nil
                do {
                    try transport.subscribe(settings.commandFilter)
                    if let homeAssistant = settings.homeAssistant {
                        try transport.subscribe("\(homeAssistant.discoveryPrefix)/status")
                        try transport.subscribe("\(homeAssistant.discoveryPrefix)/+/\(settings.agentId)/+/config")
                    }
                    publishAnnouncement(on: transport)
                    logger.info("MQTT topics: connected, \(settings.statusTopic) online")
                } catch {
                    logger.warning("MQTT topics: cannot set up the connection: \(error)")
                }
            case .connectionLost(let reason):
                if reason != lastFailure { logger.warning("MQTT topics: connection lost: \(reason)") }
                lastFailure = reason
            case .gaveUp(let attempts):
                logger.error("MQTT topics: gave up connecting after \(attempts) attempts")
            case .reconnecting, .disconnected:
                break
            case .unwritten:
                // States are published again, current, when the connection is back: an old one is not worth sending.
                break
            }
        }
    }

    /// Configs, states, then `online`: Home Assistant subscribes to an entity's topics when its config arrives.
    private func publishAnnouncement(on transport: any MQTTTransport) {
        publishConfigs(on: transport)
        publishCurrentStates(on: transport)
        try? transport.publish(MQTTMessage(topic: settings.statusTopic, payload: Array("online".utf8), retain: true))
    }

    private func publishConfigs(on transport: any MQTTTransport) {
        for message in Discovery.messages(for: settings) {
            try? transport.publish(
                MQTTMessage(
                    topic: message.topic, payload: JSONValue.object(message.config).serializedBytes(), retain: true))
        }
    }

    private func publishCurrentStates(on transport: any MQTTTransport) {
        for (ioPointId, value) in host.feed.latest {
            guard let point = pointsByIoId[ioPointId] else { continue }
            publishState(value, of: point, on: transport)
        }
        for (id, value) in setpointValues.withLock({ $0 }) {
            guard let point = pointsById[id] else { continue }
            publishState(value, of: point, on: transport)
        }
    }

    private func publishState(_ value: JSONValue, of point: Point, on transport: any MQTTTransport) {
        guard let payload = point.statePayload(of: value, format: settings.payload) else { return }
        try? transport.publish(
            MQTTMessage(topic: settings.stateTopic(of: point), payload: payload, retain: settings.retain))
    }

    // MARK: - Setpoints

    private func follow(
        _ setpoint: Setpoint, of point: Point, sharedObjects: SharedObjects, on transport: any MQTTTransport
    ) async {
        for await data in sharedObjects.data(of: setpoint.object) {
            guard let value = data[setpoint.key], case .number = value else { continue }
            setpointValues.withLock { $0[point.id] = value }
            publishState(value, of: point, on: transport)
        }
    }

    // MARK: - Inbound

    private func handle(_ inbound: MQTTInbound, on transport: any MQTTTransport, context: ControllerContext) async {
        guard case .message(let message) = inbound else {
            if case .oversized(let topic, let size) = inbound {
                reject("oversized", "a message of \(size) bytes on \(topic)", context.logger)
            }
            return
        }
        if let homeAssistant = settings.homeAssistant {
            if message.topic == "\(homeAssistant.discoveryPrefix)/status" {
                // Home Assistant's birth message: it restarted, maybe without the retained configs.
                if message.payload == Array("online".utf8) { publishAnnouncement(on: transport) }
                return
            }
            if message.topic.hasPrefix(homeAssistant.discoveryPrefix + "/"), message.topic.hasSuffix("/config") {
                clearIfStale(message, on: transport, logger: context.logger)
                return
            }
        }
        await command(message, context: context)
    }

    /// A retained config of this agent for a point it no longer announces: cleared, so Home Assistant removes the
    /// entity; its retained state goes too.
    private func clearIfStale(_ message: MQTTMessage, on transport: any MQTTTransport, logger: Logger) {
        guard !message.payload.isEmpty, !configTopics.contains(message.topic) else { return }
        try? transport.publish(MQTTMessage(topic: message.topic, payload: [], retain: true))
        logger.notice(
            "MQTT topics: removed the Home Assistant entity of \(message.topic), a point this agent no longer has")
        guard let config = try? JSONValue(parsing: message.payload), case .object(let object) = config,
            case .string(let stateTopic) = object["state_topic"],
            stateTopic.hasPrefix("\(settings.prefix)/\(settings.agentId)/"),
            !settings.points.contains(where: { settings.stateTopic(of: $0) == stateTopic })
        else { return }
        try? transport.publish(MQTTMessage(topic: stateTopic, payload: [], retain: true))
    }

    private func command(_ message: MQTTMessage, context: ControllerContext) async {
        let logger = context.logger
        let levels = message.topic.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count >= 2, levels.last == "set" else { return }
        let id = String(levels[levels.count - 2])
        guard let point = pointsById[id], Discovery.takesCommands(point.kind) else {
            reject("unknown point", "a command for \"\(id)\", which is not an output or setpoint of this agent", logger)
            return
        }
        guard message.payload.count <= Self.maximumCommandBytes,
            let text = String(validating: message.payload, as: UTF8.self)
        else {
            reject(
                "malformed", "a command for \(id) of \(message.payload.count) bytes that is not short UTF-8 text",
                logger)
            return
        }
        let trimmed = text.trimmingWhitespace
        let value = (try? JSONValue(parsing: Array(trimmed.utf8))) ?? .string(trimmed)
        switch point.kind {
        case .output:
            guard let ioActorId = point.ioPointId,
                host.command(value, toOutput: ioActorId, origin: "a command on \(message.topic)")
            else {
                reject("unknown point", "a command for \(id), whose output does not run", logger)
                return
            }
        case .setpoint(let setpoint):
            guard case .number(let number) = value, number.isFinite,
                (setpoint.minimum...setpoint.maximum).contains(number)
            else {
                reject(
                    "malformed",
                    "\"\(trimmed.prefix(40))\" for \(id): not a number from \(setpoint.minimum) to \(setpoint.maximum)",
                    logger)
                return
            }
            do {
                let connection = try await context.sharedObjects.connect(setpoint.object, ifMissing: .fail)
                defer { connection.disconnect() }
                _ = try await connection.set(setpoint.key, to: value)
                logger.info(
                    "MQTT topics: \(setpoint.object).\(setpoint.key) set to \(trimmed) by a command on \(message.topic)"
                )
            } catch {
                reject("refused", "\(setpoint.object).\(setpoint.key) stays: \(error)", logger)
            }
        case .sensor, .input:
            break
        }
    }

    private func reject(_ reason: String, _ what: String, _ logger: Logger) {
        Counter(label: "coaty_edge_mqtt_commands_rejected_total", dimensions: [("reason", reason)]).increment()
        if case .log(let suppressedBefore) = rejectionLog.admit() {
            if suppressedBefore > 0 {
                logger.warning("MQTT topics: \(suppressedBefore) more rejected messages were not logged")
            }
            logger.warning("MQTT topics: rejected \(what)")
        }
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        var scalars = Substring(self).unicodeScalars
        while let first = scalars.first, first.properties.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
