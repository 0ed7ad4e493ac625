import CoatyModel

/// A start-up check that the broker delivers topic levels containing a '.', which Coaty's object types put in topics
/// (`ADV::coaty.IoNode`). RabbitMQ's MQTT plugin maps '.' and '/' between MQTT topics and AMQP routing keys, so such
/// events never arrive (coaty-js issue 11) and an agent would otherwise hear nothing without saying why.
///
/// The agent observes a Channel whose id has dots and is its own (no other agent hears the probe), and publishes on
/// it until the echo comes back: one subscription and a few small messages, once per start.
package enum DottedTopicProbe {
    public enum Outcome: Sendable, Hashable {
        /// The echo came back after this long.
        case delivered(after: Duration)
        /// No echo within the time allowed while online.
        case notDelivered(topic: String, within: Duration)
    }

    /// The probe's channel for an agent: `coaty-edge.probe.<objectId>`.
    public static func channelId(for manager: CommunicationManager) -> String {
        "coaty-edge.probe.\(manager.identity.objectId)"
    }

    /// Waits until the manager is online, then publishes the probe every `interval` (its subscription may still be on
    /// its way to the broker at first) until the echo arrives or `timeout` has passed. Returns nil when cancelled or
    /// when the probe cannot be made.
    public static func run(
        _ manager: CommunicationManager, timeout: Duration = .seconds(10), interval: Duration = .seconds(1)
    ) async -> Outcome? {
        let channel = channelId(for: manager)
        guard let echoes = try? manager.observeChannel(channel) else { return nil }
        for await state in manager.communicationStates() where state == .online { break }
        guard !Task.isCancelled else { return nil }
        let clock = ContinuousClock()
        let start = clock.now
        return await withTaskGroup(of: Outcome?.self) { group in
            group.addTask {
                for await _ in echoes { return .delivered(after: clock.now - start) }
                return nil
            }
            group.addTask {
                while clock.now - start < timeout {
                    try? await manager.publishChannel(ChannelEvent(channelId: channel, content: .objects([])))
                    do {
                        try await Task.sleep(for: interval)
                    } catch {
                        return nil
                    }
                }
                let topic =
                    "coaty/\(CoatyTopic.protocolVersion)/\(manager.options.namespace)/\(CoatyEventType.channel.rawValue):\(channel)"
                return .notDelivered(topic: topic, within: timeout)
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
