import CoatyMQTT

/// Zero-loss delivery between coaty-edge agents, an opt-in of both the source's and the actor's agent
/// (`CommunicationOptions.zeroLoss`).
///
/// Coaty's IO values are QoS 0 on a clean session: what the broker had not passed on when it went away, and what a
/// source published before its actor had subscribed again, is gone. Broker-side QoS 1 would not close that gap (a
/// SIGKILLed broker without persistence forgets the values it acknowledged, and the actor's subscription with them),
/// so the acknowledgement is end to end, from the actor's agent to the source's agent, beside the Coaty route:
///
/// - The source's agent keeps each value in a bounded per-source buffer (`ZeroLossOutbox`) with a sequence number
///   and publishes it as a frame on `coaty-edge/zl/<sourceId>/v` ("V <epoch> <seq> <oldest>\n" and the value's
///   bytes), before the value itself on the Coaty route, byte-identical and at QoS 0 as always, for every actor
///   that does not opt in (Coaty JS actors never subscribe the frame topic).
/// - The actor's agent subscribes the frame topic of each source associated with one of its actors, and answers on
///   `coaty-edge/zl/<sourceId>/a` ("A <agentId> <epoch> <next> R|P"): R (resume) when it subscribed (after an
///   association, after each reconnect, when it sees a gap, when asked by a sync frame "S <epoch>"), P (progress)
///   every second while values arrive. It delivers each sequence number once and in order, and ignores the plain
///   copies of a source whose frames it receives.
/// - The source retires a value once every actor agent that answered has acknowledged it; after its own reconnect
///   it holds the buffer until an answer says where the actor stands (the actor has subscribed again), sends a sync
///   every second until then, and sends from there.
///
/// The epoch (a random number per manager start) keeps the sequence numbers of one run of the source apart from
/// those of the next.
public struct ZeroLossOptions: Sendable, Hashable {
    /// The values kept per source until every actor agent acknowledged them.
    public var maximumValues: Int
    /// Payload bytes kept per source.
    public var maximumBytes: Int
    /// Which values give way when the buffer is full; counted as `ValueDropReason.zeroLossBufferFull`.
    public var dropPolicy: OfflineQueueLimits.DropPolicy

    /// At 10 values a second, over 15 minutes of values per source.
    public static let defaultMaximumValues = 10_000
    public static let defaultMaximumBytes = 1024 * 1024

    public init(
        maximumValues: Int = ZeroLossOptions.defaultMaximumValues,
        maximumBytes: Int = ZeroLossOptions.defaultMaximumBytes,
        dropPolicy: OfflineQueueLimits.DropPolicy = .oldest
    ) {
        self.maximumValues = maximumValues
        self.maximumBytes = maximumBytes
        self.dropPolicy = dropPolicy
    }
}

/// The topics and frames of zero-loss delivery (see `ZeroLossOptions`). Outside Coaty's topic tree, so that no
/// Coaty agent subscribes them.
enum ZeroLossFrame: Equatable {
    case value(epoch: UInt64, sequence: UInt64, oldest: UInt64, payload: [UInt8])
    case sync(epoch: UInt64)
    /// `epoch` nil: the actor has no sequence of this source yet.
    case acknowledgement(receiver: String, epoch: UInt64?, next: UInt64, isResume: Bool)

    static let prefix = "coaty-edge/zl/"

    static func valueTopic(of sourceId: String) -> String { prefix + sourceId + "/v" }
    static func acknowledgementTopic(of sourceId: String) -> String { prefix + sourceId + "/a" }

    /// The source id and whether it is the frame topic (else the acknowledgement topic).
    static func parseTopic(_ topic: String) -> (sourceId: String, isValueTopic: Bool)? {
        guard topic.hasPrefix(prefix) else { return nil }
        let rest = topic.dropFirst(prefix.count)
        if rest.hasSuffix("/v") { return (String(rest.dropLast(2)), true) }
        if rest.hasSuffix("/a") { return (String(rest.dropLast(2)), false) }
        return nil
    }

    var bytes: [UInt8] {
        switch self {
        case .value(let epoch, let sequence, let oldest, let payload):
            Array("V \(epoch) \(sequence) \(oldest)\n".utf8) + payload
        case .sync(let epoch):
            Array("S \(epoch)\n".utf8)
        case .acknowledgement(let receiver, let epoch, let next, let isResume):
            Array("A \(receiver) \(epoch.map(String.init) ?? "-") \(next) \(isResume ? "R" : "P")\n".utf8)
        }
    }

    /// nil for anything else than a frame of this form (counted as malformed by the caller).
    init?(_ bytes: [UInt8]) {
        guard let end = bytes.firstIndex(of: UInt8(ascii: "\n")), end <= 256,
            let header = String(validating: bytes[..<end], as: UTF8.self)
        else { return nil }
        let fields = header.split(separator: " ", omittingEmptySubsequences: false)
        switch (fields.first, fields.count) {
        case ("V", 4):
            guard let epoch = UInt64(fields[1]), let sequence = UInt64(fields[2]), let oldest = UInt64(fields[3]) else {
                return nil
            }
            self = .value(epoch: epoch, sequence: sequence, oldest: oldest, payload: Array(bytes[(end + 1)...]))
        case ("S", 2):
            guard let epoch = UInt64(fields[1]), end == bytes.count - 1 else { return nil }
            self = .sync(epoch: epoch)
        case ("A", 5):
            let epoch = fields[2] == "-" ? nil : UInt64(fields[2])
            guard !fields[1].isEmpty, epoch != nil || fields[2] == "-", let next = UInt64(fields[3]),
                fields[4] == "R" || fields[4] == "P", end == bytes.count - 1
            else { return nil }
            self = .acknowledgement(receiver: String(fields[1]), epoch: epoch, next: next, isResume: fields[4] == "R")
        default:
            return nil
        }
    }
}

/// The source side: the values of one own source not yet acknowledged by every actor agent that answered, and
/// where sending stands.
struct ZeroLossOutbox {
    let options: ZeroLossOptions
    let epoch: UInt64
    /// Contiguous sequence numbers from `values[head].sequence`; slots before `head` are retired.
    private var values: [(sequence: UInt64, payload: [UInt8])] = []
    private var head = 0
    private(set) var bytes = 0
    private(set) var nextSequence: UInt64 = 0
    /// The next sequence number to send; nil while holding (after a reconnect, until an actor agent answers).
    private(set) var sendFrom: UInt64?
    /// Per actor agent that answered: the next sequence number it expects, and when it last answered.
    private var receivers: [String: (next: UInt64, lastHeard: ContinuousClock.Instant)] = [:]

    /// Actor agents per source; answers of further ones are ignored (their actors get the plain copies).
    static let maximumReceivers = 64

    init(options: ZeroLossOptions, epoch: UInt64) {
        self.options = options
        self.epoch = epoch
    }

    var count: Int { values.count - head }
    var hasReceivers: Bool { !receivers.isEmpty }
    var receiverCount: Int { receivers.count }
    private var oldest: UInt64 { head < values.count ? values[head].sequence : nextSequence }

    /// Keeps a value for the actor agents that answered; returns how many values gave way to the bound (the new
    /// one itself under `.newest`). Without any such agent nothing is kept: the plain copy is all there is.
    mutating func append(_ payload: [UInt8]) -> Int {
        guard hasReceivers else { return 0 }
        if options.dropPolicy == .newest, count >= options.maximumValues || bytes + payload.count > options.maximumBytes
        {
            return 1
        }
        values.append((nextSequence, payload))
        nextSequence += 1
        bytes += payload.count
        var dropped = 0
        while count > options.maximumValues || bytes > options.maximumBytes, count > 0 {
            removeFirst()
            dropped += 1
        }
        return dropped
    }

    /// The next frame to send, if sending is not on hold; advances.
    mutating func nextFrame() -> ZeroLossFrame? {
        guard var from = sendFrom else { return nil }
        from = max(from, oldest)
        guard from < nextSequence else {
            sendFrom = from
            return nil
        }
        sendFrom = from + 1
        let entry = values[head + Int(from - oldest)]
        return .value(epoch: epoch, sequence: entry.sequence, oldest: oldest, payload: entry.payload)
    }

    /// An actor agent's answer: retires what every receiver has, and for a resume sends again from where it stands.
    mutating func acknowledge(
        receiver: String, epoch: UInt64?, next: UInt64, isResume: Bool, at now: ContinuousClock.Instant
    ) {
        // Anyone on the broker can answer: a bound keeps made-up agents from growing the table without limit.
        guard receivers[receiver] != nil || receivers.count < Self.maximumReceivers else { return }
        let known = epoch == self.epoch && next <= nextSequence
        // An agent that has no sequence of this run starts with the values from now on: it received the earlier
        // ones as plain copies, or was not there.
        let expected = known ? next : nextSequence
        receivers[receiver] = (expected, now)
        if isResume || !known {
            sendFrom = min(sendFrom ?? expected, max(expected, oldest))
        }
        retire()
    }

    /// The connection ended: hold until an actor agent answers on the next one.
    mutating func connectionLost() {
        sendFrom = nil
    }

    var isHolding: Bool { sendFrom == nil }

    /// Forgets actor agents that did not answer since `deadline` although they were sent to (gone for good: their
    /// values would fill the buffer); returns how many, and how many values were kept only for them.
    mutating func forgetReceivers(silentSince deadline: ContinuousClock.Instant) -> (receivers: Int, values: Int) {
        let silent = receivers.filter { $0.value.lastHeard < deadline && $0.value.next < nextSequence }.map(\.key)
        guard !silent.isEmpty else { return (0, 0) }
        let before = count
        for receiver in silent { receivers[receiver] = nil }
        retire()
        if receivers.isEmpty {
            while count > 0 { removeFirst() }
        }
        return (silent.count, before - count)
    }

    /// Gives every actor agent a fresh grace period (after a reconnect, they could not answer meanwhile).
    mutating func heardFromAll(at now: ContinuousClock.Instant) {
        for receiver in receivers.keys { receivers[receiver]?.lastHeard = now }
    }

    private mutating func retire() {
        guard let lowest = receivers.values.map(\.next).min() else { return }
        while count > 0, values[head].sequence < lowest { removeFirst() }
    }

    private mutating func removeFirst() {
        bytes -= values[head].payload.count
        head += 1
        if head == values.count {
            values.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= values.count {
            values.removeFirst(head)
            head = 0
        }
    }
}

/// The actor side: where the sequence of one source stands, for one agent.
struct ZeroLossInbox {
    var epoch: UInt64?
    var next: UInt64 = 0
    var receivedSinceAcknowledgement = 0
    /// Since when plain copies of the source's values arrive without a frame between them.
    var plainCopiesWithoutFrameSince: ContinuousClock.Instant?
    /// When the last frame, sync or plain copy of the source arrived: a silence does not count as copies without
    /// frames (an outage of the broker or of the source lets nothing through, frames or copies).
    var lastArrival: ContinuousClock.Instant?
    /// The `next` of the last resume sent for a gap, and when: one per gap and second, not one per frame.
    var lastGapResume: (next: UInt64, at: ContinuousClock.Instant)?

    /// A value was held back because an actor had no room for it: the source is asked to resume from `next` once
    /// there is room again (by the manager's tick), not on every later frame.
    var isHeldBack = false

    enum Outcome: Equatable {
        case deliver
        case duplicate
        /// Frames are missing before this one: it is dropped and the source asked to resume from `next`.
        case gap(askResume: Bool)
        /// The next value in order, but an actor has no room for it: not delivered and not acknowledged.
        case heldBack
    }

    /// Plain copies of a source that sent frames are duplicates (their frames come, also after an outage of any
    /// length, once both agents are back), until they have arrived without any frame for this long: the source no
    /// longer sends frames (it was restarted without zero-loss delivery).
    static let plainCopiesTakeOverAfter = Duration.seconds(30)

    /// `hasRoom`: whether every actor on the source's route takes a value now without dropping one.
    mutating func receive(
        epoch: UInt64, sequence: UInt64, oldest: UInt64, hasRoom: Bool = true, at now: ContinuousClock.Instant
    ) -> Outcome {
        framesArrive(at: now)
        if epoch != self.epoch {
            // A run of the source not seen before (or restarted): its sequence starts here.
            self.epoch = epoch
            next = sequence
            isHeldBack = false
        }
        if sequence < next { return .duplicate }
        // What the source no longer holds it counted as dropped: the sequence continues after it.
        if sequence > next, oldest > next { next = min(oldest, sequence) }
        guard sequence == next else {
            // Behind a held-back value every frame is a gap: the resume waits for room.
            if isHeldBack { return .gap(askResume: false) }
            let isNewGap = lastGapResume.map { $0.next != next || now - $0.at > .seconds(1) } ?? true
            if isNewGap { lastGapResume = (next, now) }
            return .gap(askResume: isNewGap)
        }
        guard hasRoom else {
            isHeldBack = true
            return .heldBack
        }
        isHeldBack = false
        next += 1
        receivedSinceAcknowledgement += 1
        return .deliver
    }

    /// A frame or a sync arrived: the source delivers with zero loss (a sync: it holds, after its reconnect, until
    /// this agent answers).
    mutating func framesArrive(at now: ContinuousClock.Instant) {
        plainCopiesWithoutFrameSince = nil
        lastArrival = now
    }

    /// This agent connected again: what arrived before says nothing about whether frames come now.
    mutating func reconnected() {
        plainCopiesWithoutFrameSince = nil
        lastArrival = nil
    }

    /// Whether a plain copy on the source's route, arriving now, duplicates a frame. The plain copies take over only
    /// after they arrived for `plainCopiesTakeOverAfter` without a frame or a sync between them and without a silence
    /// as long: after an outage of a minute the first copies (sent before the source resumes its frames) would
    /// otherwise take over at once, and the frames of the backlog that follow them arrive out of order and again.
    mutating func isPlainCopy(at now: ContinuousClock.Instant) -> Bool {
        guard epoch != nil else { return false }
        if let lastArrival, now - lastArrival >= Self.plainCopiesTakeOverAfter { plainCopiesWithoutFrameSince = nil }
        lastArrival = now
        let since = plainCopiesWithoutFrameSince ?? now
        plainCopiesWithoutFrameSince = since
        guard now - since < Self.plainCopiesTakeOverAfter else {
            self = ZeroLossInbox()
            return false
        }
        return true
    }
}
