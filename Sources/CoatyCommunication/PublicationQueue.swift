import CoatyMQTT

/// How many publications the manager keeps while it cannot send them (offline, or before the first connect), and
/// which give way when more come.
public struct OfflineQueueLimits: Sendable, Hashable {
    /// Which publications give way to keep the queue within its bounds.
    public enum DropPolicy: String, Sendable, Hashable {
        /// The oldest queued publication gives way to the new one: for sensor values the newest state survives.
        case oldest
        /// The new publication is dropped: what was queued first survives.
        case newest
    }

    public var maximumMessages: Int
    /// Topic and payload bytes of the queued publications.
    public var maximumBytes: Int
    public var dropPolicy: DropPolicy

    /// At 100 values a second, about 100 s of values: a broker restart or a short network outage loses nothing, a
    /// long outage keeps the newest 10,000 values in at most 4 MiB.
    public static let defaultMaximumMessages = 10_000
    public static let defaultMaximumBytes = 4 * 1024 * 1024

    public init(
        maximumMessages: Int = OfflineQueueLimits.defaultMaximumMessages,
        maximumBytes: Int = OfflineQueueLimits.defaultMaximumBytes, dropPolicy: DropPolicy = .oldest
    ) {
        self.maximumMessages = maximumMessages
        self.maximumBytes = maximumBytes
        self.dropPolicy = dropPolicy
    }
}

/// What a queued publication is, for the bound (join events never give way) and for counting what is dropped.
enum PublicationKind: Sendable, Hashable {
    /// The agent's Advertise of its identity and IO nodes, and its Deadvertise.
    case join
    /// A value of an own IO source.
    case value(sourceId: String)
    /// Any other event or raw publication.
    case event
}

struct QueuedPublication: Sendable {
    var message: MQTTMessage
    var kind: PublicationKind

    var size: Int { message.topic.utf8.count + message.payload.count }
}

/// The publications waiting for a connection, in order, within `OfflineQueueLimits`. Join events are kept
/// outside the bound (they are few, and never give way); every other publication may give way, and the caller
/// counts those that did.
struct PublicationQueue: Sendable {
    let limits: OfflineQueueLimits
    /// Slots before `head` are taken already; they are removed in bulk, so that dropping the oldest costs O(1).
    private var slots: [QueuedPublication?] = []
    private var head = 0
    /// Of the publications that may give way: the bound's measures.
    private(set) var count = 0
    private(set) var bytes = 0
    private var joinCount = 0

    init(limits: OfflineQueueLimits) {
        self.limits = limits
    }

    var isEmpty: Bool { count == 0 && joinCount == 0 }

    /// Queues a publication behind the others; returns what gave way (the new one itself under `.newest`).
    mutating func append(_ publication: QueuedPublication) -> [QueuedPublication] {
        var dropped: [QueuedPublication] = []
        if publication.kind != .join, limits.dropPolicy == .newest, !fits(publication) {
            dropped.append(publication)
            return dropped
        }
        slots.append(publication)
        measure(publication, sign: 1)
        enforceBounds(droppingInto: &dropped)
        return dropped
    }

    private mutating func measure(_ publication: QueuedPublication, sign: Int) {
        if publication.kind == .join {
            joinCount += sign
        } else {
            count += sign
            bytes += sign * publication.size
        }
    }

    /// Puts publications back in front of the others (those that were taken to be sent when the connection
    /// failed); returns what gave way to keep the bounds.
    mutating func prepend(_ publications: some Collection<QueuedPublication>) -> [QueuedPublication] {
        guard !publications.isEmpty else { return [] }
        let rest = taken()
        slots = publications.map { Optional($0) } + rest.map { Optional($0) }
        head = 0
        (count, bytes, joinCount) = (0, 0, 0)
        for publication in slots { publication.map { measure($0, sign: 1) } }
        var dropped: [QueuedPublication] = []
        enforceBounds(droppingInto: &dropped)
        return dropped
    }

    /// Join events in front of the queue, unless the same topic is queued already.
    mutating func prependJoin(_ messages: [MQTTMessage]) {
        let queued = Set(slots[head...].compactMap { $0?.kind == .join ? $0?.message.topic : nil })
        let join = messages.filter { !queued.contains($0.topic) }.map { QueuedPublication(message: $0, kind: .join) }
        _ = prepend(join)
    }

    /// Everything queued, in order; the queue is empty afterwards.
    mutating func removeAll() -> [QueuedPublication] {
        defer {
            slots = []
            head = 0
            (count, bytes, joinCount) = (0, 0, 0)
        }
        return taken()
    }

    private func taken() -> [QueuedPublication] {
        slots[head...].compactMap { $0 }
    }

    private func fits(_ publication: QueuedPublication) -> Bool {
        count < limits.maximumMessages && bytes + publication.size <= limits.maximumBytes
    }

    private mutating func enforceBounds(droppingInto dropped: inout [QueuedPublication]) {
        while count > limits.maximumMessages || bytes > limits.maximumBytes {
            guard let victim = removeOldestDroppable() else { return }
            dropped.append(victim)
        }
    }

    /// The oldest publication that may give way (under `.newest`, the newest: also when publications were put
    /// back); join events are skipped, and are few and at the front.
    private mutating func removeOldestDroppable() -> QueuedPublication? {
        var index: Int?
        if limits.dropPolicy == .oldest {
            var candidate = head
            while candidate < slots.count, slots[candidate].map({ $0.kind == .join }) ?? true { candidate += 1 }
            index = candidate < slots.count ? candidate : nil
        } else {
            var candidate = slots.count - 1
            while candidate >= head, slots[candidate].map({ $0.kind == .join }) ?? true { candidate -= 1 }
            index = candidate >= head ? candidate : nil
        }
        guard let index, let victim = slots[index] else { return nil }
        slots[index] = nil
        measure(victim, sign: -1)
        while let last = slots.last, last == nil { slots.removeLast() }
        while head < slots.count, slots[head] == nil { head += 1 }
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= slots.count {
            slots.removeFirst(head)
            head = 0
        }
        return victim
    }
}
