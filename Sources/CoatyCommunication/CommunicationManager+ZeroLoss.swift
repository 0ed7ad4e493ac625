import CoatyMQTT
import Synchronization

/// The source side of zero-loss delivery: an outbox per own source, and whether some thread is sending frames.
struct ZeroLossSources: Sendable {
    var outboxes: [String: ZeroLossOutbox] = [:]
    /// One thread at a time sends frames, so that those of a source leave in order; the others leave their frames to it.
    var isSending = false
}

/// Zero-loss delivery (see `ZeroLossOptions`): the frames, syncs and acknowledgements beside the Coaty routes.
extension CommunicationManager {
    /// How often syncs and progress acknowledgements go out.
    static let zeroLossTick = Duration.seconds(1)
    /// An actor agent acknowledges at least this often while subscribed, so that the source knows it is there.
    static let zeroLossKeepAliveTicks = 10
    /// A source forgets an actor agent that did not answer for so long while the source was online: gone for good, its
    /// values would keep the buffer full. Long, so that an actor agent's own outage of minutes loses nothing.
    static let zeroLossReceiverTimeout = Duration.seconds(600)

    /// The actor agents that take frames of an own source, and the values they have not all acknowledged yet.
    package func zeroLossBacklog(of sourceId: String) -> (actorAgents: Int, values: Int) {
        zeroLossSources.withLock { sources in
            sources.outboxes[sourceId].map { ($0.receiverCount, $0.count) } ?? (0, 0)
        }
    }

    /// A new epoch and empty outboxes for this start, and the task that repeats syncs and acknowledgements.
    func startZeroLoss() {
        guard let zeroLoss = options.zeroLoss else { return }
        let epoch = UInt64.random(in: 1...UInt64(Int64.max))
        zeroLossSources.withLock { sources in
            sources.outboxes = [:]
            for node in ioNodeDefinitions {
                for source in node.ioSources {
                    sources.outboxes[source.objectId] = ZeroLossOutbox(options: zeroLoss, epoch: epoch)
                }
            }
        }
        let task = Task { [weak self] in
            var tick = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.zeroLossTick)
                tick += 1
                self?.zeroLossTicked(isKeepAlive: tick % Self.zeroLossKeepAliveTicks == 0)
            }
        }
        state.withLock { $0.zeroLossTask = task }
    }

    private func zeroLossTicked(isKeepAlive: Bool) {
        let (isOnline, associated) = onlineAndAssociatedSources()
        guard isOnline else { return }
        // Source side: sync while holding, forget actor agents gone for good.
        let deadline = ContinuousClock.now - Self.zeroLossReceiverTimeout
        let (holding, discarded) = zeroLossSources.withLock { sources in
            var holding: [String] = []
            var discarded: [(String, Int)] = []
            for id in sources.outboxes.keys {
                // A source none of whose actor agents answered yet asks again only now and then.
                if let outbox = sources.outboxes[id], outbox.isHolding, associated.contains(id),
                    outbox.hasReceivers || isKeepAlive
                {
                    holding.append(id)
                }
                if let forgotten = sources.outboxes[id]?.forgetReceivers(silentSince: deadline), forgotten.receivers > 0
                {
                    discarded.append((id, forgotten.values))
                }
            }
            return (holding, discarded)
        }
        for (sourceId, values) in discarded {
            logger.warning(
                "zero-loss delivery of source \(sourceId): forgot actor agents silent for \(Self.zeroLossReceiverTimeout)"
            )
            drops.drop(
                values, of: sourceId, .zeroLossActorSilent, because: "kept only for actor agents that went silent")
        }
        syncZeroLoss(sourceIds: holding)
        // Actor side: progress, or a keep-alive; a resume where a held-back value has room now.
        let (due, heldBack) = state.withLock { state in
            let due = state.zeroLossSubscribed.filter {
                isKeepAlive || (state.zeroLossInboxes[$0]?.receivedSinceAcknowledgement ?? 0) > 0
            }
            let heldBack = state.zeroLossSubscribed.filter { state.zeroLossInboxes[$0]?.isHeldBack == true }
                .map { ($0, zeroLossRoute(of: $0, in: state)?.receivers ?? []) }
            return (due, heldBack)
        }
        let resumes = heldBack.filter { Self.haveRoom($0.1) }.map(\.0)
        state.withLock { state in
            for sourceId in resumes { state.zeroLossInboxes[sourceId]?.isHeldBack = false }
        }
        acknowledgeZeroLoss(resumes, isResume: true)
        acknowledgeZeroLoss(Array(due.subtracting(resumes)), isResume: false)
    }

    /// The route on which an own actor takes the values of `sourceId`, and the receivers on it.
    private func zeroLossRoute(of sourceId: String, in state: borrowing State) -> (
        route: String, receivers: [IoRouteReceiver]
    )? {
        guard let route = state.routing.route(ofAssociatedSource: sourceId) else { return nil }
        return (route, state.ioRoutes.delivery(on: route)?.receivers ?? [])
    }

    /// Whether every receiver takes a value now without dropping one. Called without the state lock: a receiver's
    /// check takes locks of its own.
    private static func haveRoom(_ receivers: [IoRouteReceiver]) -> Bool {
        receivers.allSatisfy { $0.hasRoom?() ?? true }
    }

    /// Whether the manager is online, and its own sources that are associated.
    private func onlineAndAssociatedSources() -> (isOnline: Bool, associated: Set<String>) {
        state.withLock { state in
            let sourceIds = ioNodeDefinitions.flatMap { $0.ioSources.map(\.objectId) }
            return (state.isOnline, Set(sourceIds.filter { state.routing.route(ofSource: $0) != nil }))
        }
    }

    /// After a (re)connect: sources hold until actor agents answer their sync; actors ask their sources to resume.
    func resumeZeroLoss() {
        guard options.zeroLoss != nil else { return }
        let now = ContinuousClock.now
        zeroLossSources.withLock { sources in
            for id in sources.outboxes.keys { sources.outboxes[id]?.heardFromAll(at: now) }
        }
        syncZeroLoss(sourceIds: Array(onlineAndAssociatedSources().associated))
        let subscribed = state.withLock { state in
            for id in state.zeroLossInboxes.keys { state.zeroLossInboxes[id]?.reconnected() }
            return state.zeroLossSubscribed
        }
        acknowledgeZeroLoss(Array(subscribed), isResume: true)
    }

    func zeroLossConnectionLost() {
        guard options.zeroLoss != nil else { return }
        zeroLossSources.withLock { sources in
            for id in sources.outboxes.keys { sources.outboxes[id]?.connectionLost() }
        }
    }

    /// Keeps a value of an own source for the actor agents that take frames, and sends its frame if it can.
    func keepForZeroLoss(_ payload: [UInt8], of sourceId: String) {
        let dropped = zeroLossSources.withLock { $0.outboxes[sourceId]?.append(payload) } ?? 0
        if dropped > 0, let zeroLoss = options.zeroLoss {
            drops.drop(
                dropped, of: sourceId, .zeroLossBufferFull,
                because:
                    "its zero-loss buffer is full (\(zeroLoss.maximumValues) values or \(zeroLoss.maximumBytes) bytes "
                    + "not acknowledged by actor agents); the \(zeroLoss.dropPolicy.rawValue) give way")
        }
        sendZeroLossFrames()
    }

    /// Sends the frames due, in order per source, until none are due or the connection fails.
    func sendZeroLossFrames() {
        let isFirst = zeroLossSources.withLock { sources in
            defer { sources.isSending = true }
            return !sources.isSending
        }
        guard isFirst else { return }
        while true {
            guard let transport = state.withLock({ $0.isOnline && !$0.hasLeft ? $0.transport : nil }) else {
                zeroLossSources.withLock { $0.isSending = false }
                return
            }
            // Checked and cleared under the lock that `keepForZeroLoss` appends under: a frame added after the
            // last batch is sent by this loop or by its own caller.
            let batch = zeroLossSources.withLock { sources in
                var frames: [(String, ZeroLossFrame)] = []
                for id in sources.outboxes.keys {
                    while frames.count < 256, let frame = sources.outboxes[id]?.nextFrame() {
                        frames.append((id, frame))
                    }
                }
                if frames.isEmpty { sources.isSending = false }
                return frames
            }
            guard !batch.isEmpty else { return }
            for (sourceId, frame) in batch {
                do {
                    try transport.publish(
                        MQTTMessage(topic: ZeroLossFrame.valueTopic(of: sourceId), payload: frame.bytes))
                } catch .notConnected {
                    // The frames stay in the outbox; the next connection resumes from the actor's answer.
                    zeroLossConnectionLost()
                } catch {
                    logger.warning("cannot send a zero-loss frame of source \(sourceId): \(error)")
                }
            }
        }
    }

    /// Asks the actor agents of these own sources where they stand (they answer with a resume).
    func syncZeroLoss(sourceIds: [String]) {
        guard !sourceIds.isEmpty else { return }
        let epochs = zeroLossSources.withLock { sources in
            sourceIds.compactMap { id in sources.outboxes[id].map { (id, $0.epoch) } }
        }
        for (sourceId, epoch) in epochs {
            sendIfOnline(
                MQTTMessage(
                    topic: ZeroLossFrame.valueTopic(of: sourceId), payload: ZeroLossFrame.sync(epoch: epoch).bytes))
        }
    }

    /// Tells the sources where this agent's sequence of each stands.
    func acknowledgeZeroLoss(_ sourceIds: [String], isResume: Bool) {
        guard !sourceIds.isEmpty else { return }
        let frames = state.withLock { state in
            sourceIds.map { sourceId in
                let inbox = state.zeroLossInboxes[sourceId, default: ZeroLossInbox()]
                state.zeroLossInboxes[sourceId]?.receivedSinceAcknowledgement = 0
                let frame = ZeroLossFrame.acknowledgement(
                    receiver: identity.objectId, epoch: inbox.epoch, next: inbox.next, isResume: isResume)
                return MQTTMessage(topic: ZeroLossFrame.acknowledgementTopic(of: sourceId), payload: frame.bytes)
            }
        }
        for message in frames { sendIfOnline(message) }
    }

    /// Syncs and acknowledgements are not queued while offline: the next connect sends fresh ones.
    private func sendIfOnline(_ message: MQTTMessage) {
        guard let transport = state.withLock({ $0.isOnline && !$0.hasLeft ? $0.transport : nil }) else { return }
        try? transport.publish(message)
    }

    /// Subscribes the frame topics of the sources newly associated with own actors (returned, to be asked to
    /// resume once the lock is released) and unsubscribes those no longer associated.
    func updateZeroLossSubscriptions(in state: inout State) -> [String] {
        let associated = state.routing.associatedSourceIds
        let added = associated.subtracting(state.zeroLossSubscribed)
        for sourceId in added { addSubscription(ZeroLossFrame.valueTopic(of: sourceId), in: &state) }
        for sourceId in state.zeroLossSubscribed.subtracting(associated) {
            removeSubscription(ZeroLossFrame.valueTopic(of: sourceId), in: &state)
        }
        state.zeroLossSubscribed = associated
        return Array(added)
    }

    /// Whether a value on `route` is the plain copy of one whose frame this agent takes.
    func isPlainCopyOfZeroLossSource(route: String, in state: inout State) -> Bool {
        guard let actors = state.routing.actorsByRoute[route], !state.zeroLossInboxes.isEmpty else { return false }
        let now = ContinuousClock.now
        var isCopy = false
        for sourceId in Set(actors.values.flatMap { $0 }) where state.zeroLossInboxes[sourceId] != nil {
            if state.zeroLossInboxes[sourceId]?.isPlainCopy(at: now) == true { isCopy = true }
        }
        return isCopy
    }

    func receiveZeroLoss(_ message: MQTTMessage, of sourceId: String, isValueTopic: Bool) {
        guard let frame = ZeroLossFrame(message.payload) else {
            reject(counting: malformedCounter) { "dropped a malformed zero-loss frame on \(message.topic)" }
            return
        }
        switch frame {
        case .value(let epoch, let sequence, let oldest, let payload) where isValueTopic:
            let now = ContinuousClock.now
            // Frames arrive on the network thread one at a time: what has room now still has it below.
            let target = state.withLock { zeroLossRoute(of: sourceId, in: $0) }
            let hasRoom = Self.haveRoom(target?.receivers ?? [])
            let outcome = state.withLock { state -> ZeroLossInbox.Outcome in
                guard state.zeroLossSubscribed.contains(sourceId) else { return .duplicate }
                return state.zeroLossInboxes[sourceId, default: ZeroLossInbox()]
                    .receive(epoch: epoch, sequence: sequence, oldest: oldest, hasRoom: hasRoom, at: now)
            }
            switch outcome {
            case .deliver:
                if let target { deliver(MQTTMessage(topic: target.route, payload: payload), to: target.receivers) }
            case .duplicate, .heldBack:
                break
            case .gap(let askResume):
                if askResume { acknowledgeZeroLoss([sourceId], isResume: true) }
            }
        case .sync where isValueTopic:
            let now = ContinuousClock.now
            let isSubscribed = state.withLock { state in
                state.zeroLossInboxes[sourceId]?.framesArrive(at: now)
                return state.zeroLossSubscribed.contains(sourceId)
            }
            if isSubscribed {
                acknowledgeZeroLoss([sourceId], isResume: true)
            }
        case .acknowledgement(let receiver, let epoch, let next, let isResume) where !isValueTopic:
            let now = ContinuousClock.now
            zeroLossSources.withLock { sources in
                sources.outboxes[sourceId]?.acknowledge(
                    receiver: receiver, epoch: epoch, next: next, isResume: isResume, at: now)
            }
            sendZeroLossFrames()
        default:
            reject(counting: malformedCounter) { "dropped a zero-loss frame on the wrong topic \(message.topic)" }
        }
    }
}
