import Glibc

/// The event kinds of the Coaty protocol, with their topic codes.
public enum CoatyEventType: String, Sendable, Hashable, CaseIterable {
    case advertise = "ADV"
    case deadvertise = "DAD"
    case channel = "CHN"
    case associate = "ASC"
    case ioValue = "IOV"
    case discover = "DSC"
    case resolve = "RSV"
    case query = "QRY"
    case retrieve = "RTV"
    case update = "UPD"
    case complete = "CPL"
    case call = "CLL"
    case returnEvent = "RTN"

    /// One-way topics have no correlation id level.
    public var isOneWay: Bool {
        switch self {
        case .advertise, .deadvertise, .channel, .associate, .ioValue: true
        default: false
        }
    }

    /// Events whose topic carries a filter after the code (`ADV:IoNode`, `CHN:<id>`, `CLL:<operation>`, ...).
    public var hasFilter: Bool {
        switch self {
        case .advertise, .channel, .associate, .update, .call: true
        default: false
        }
    }

    /// The response kind of a request kind.
    public var responseType: CoatyEventType? {
        switch self {
        case .discover: .resolve
        case .query: .retrieve
        case .update: .complete
        case .call: .returnEvent
        default: nil
        }
    }

    /// The event of a topic's code (the bytes of `rawValue`), read as one number: `init(rawValue:)` compares a string
    /// with the codes one after the other, and ran for every inbound event.
    init?(code: UnsafeBufferPointer<UInt8>) {
        guard code.count == 3 else { return nil }
        switch UInt32(code[0]) << 16 | UInt32(code[1]) << 8 | UInt32(code[2]) {
        case 0x41_44_56: self = .advertise  // ADV
        case 0x44_41_44: self = .deadvertise  // DAD
        case 0x43_48_4E: self = .channel  // CHN
        case 0x41_53_43: self = .associate  // ASC
        case 0x49_4F_56: self = .ioValue  // IOV
        case 0x44_53_43: self = .discover  // DSC
        case 0x52_53_56: self = .resolve  // RSV
        case 0x51_52_59: self = .query  // QRY
        case 0x52_54_56: self = .retrieve  // RTV
        case 0x55_50_44: self = .update  // UPD
        case 0x43_50_4C: self = .complete  // CPL
        case 0x43_4C_4C: self = .call  // CLL
        case 0x52_54_4E: self = .returnEvent  // RTN
        default: return nil
        }
    }

    public var isResponse: Bool {
        switch self {
        case .resolve, .retrieve, .complete, .returnEvent: true
        default: false
        }
    }
}

/// Rules for the names that go into topic levels: namespaces, channel ids, operations, context names, object types.
package enum CoatyName {
    /// Non-empty and free of NUL, `+`, `#` and `/`, as Coaty JS's `isValidEventFilter` requires. Checked for
    /// every event published, so the bytes are scanned in one buffer rather than through the UTF-8 view.
    public static func isValid(_ name: String) -> Bool {
        var name = name
        return !name.isEmpty
            && name.withUTF8 { bytes in
                !bytes.contains {
                    $0 == 0 || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: "/")
                }
            }
    }

    /// A topic an application may publish on: not empty, at most 65535 bytes, no wildcards or NUL.
    public static func isValidPublicationTopic(_ topic: String) -> Bool {
        !topic.isEmpty && topic.utf8.count <= 65535
            && !topic.utf8.contains { $0 == 0 || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }
    }

    /// A subscription filter: not empty, at most 65535 bytes, wildcards only as whole levels, `#` only last.
    public static func isValidSubscriptionFilter(_ filter: String) -> Bool {
        guard !filter.isEmpty, filter.utf8.count <= 65535, !filter.utf8.contains(0) else { return false }
        let levels = filter.split(separator: "/", omittingEmptySubsequences: false)
        for (index, level) in levels.enumerated() {
            if level.contains("#") && (level != "#" || index != levels.count - 1) { return false }
            if level.contains("+") && level != "+" { return false }
        }
        return true
    }

    /// Whether a topic matches a subscription filter with MQTT wildcard semantics.
    public static func topic(_ topic: String, matches filter: String) -> Bool {
        var topicLevels = topic.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)[...]
        var filterLevels = filter.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)[...]
        // Topics starting with `$` are not matched by leading wildcards.
        if let first = topicLevels.first, first.first == UInt8(ascii: "$"),
            let filterFirst = filterLevels.first,
            filterFirst.elementsEqual("+".utf8) || filterFirst.elementsEqual("#".utf8)
        {
            return false
        }
        while let filterLevel = filterLevels.first {
            if filterLevel.elementsEqual("#".utf8) { return true }
            guard let topicLevel = topicLevels.first else { return false }
            if !filterLevel.elementsEqual("+".utf8) && !filterLevel.elementsEqual(topicLevel) { return false }
            filterLevels = filterLevels.dropFirst()
            topicLevels = topicLevels.dropFirst()
        }
        return topicLevels.isEmpty
    }
}

/// A Coaty topic: `coaty/<version>/<namespace>/<code>[:<filter>]/<sourceId>[/<correlationId>]`.
public struct CoatyTopic: Sendable, Hashable, CustomStringConvertible {
    public static let protocolName = "coaty"
    public static let protocolVersion = 3
    public static let defaultNamespace = "-"

    public var version: Int
    public var namespace: String
    public var eventType: CoatyEventType
    /// What follows the first `:` of the event level: `IoNode`, `:com.example.Type`, a channel id, ...
    public var filter: String?
    /// The publishing agent's identity, or for IoValue the IO source's objectId.
    public var sourceId: String
    public var correlationId: String?

    public init(
        namespace: String, eventType: CoatyEventType, filter: String? = nil, sourceId: String,
        correlationId: String? = nil, version: Int = CoatyTopic.protocolVersion
    ) {
        self.version = version
        self.namespace = namespace
        self.eventType = eventType
        self.filter = filter
        self.sourceId = sourceId
        self.correlationId = correlationId
    }

    /// Whether the topic belongs to the Coaty protocol; others are Raw or external IoValue topics.
    public static func isCoatyTopic(_ topic: String) -> Bool {
        // Through the UTF-8 view, not `withUTF8`: that one is mutating, and the copy it needs cost a retain and a
        // release of the topic.
        let nameBytes = protocolNameBytes
        return topic.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.count > nameBytes.count && bytes[nameBytes.count] == UInt8(ascii: "/") && bytes.hasPrefix(nameBytes)
        } ?? topic.utf8.starts(with: protocolName.utf8 + [UInt8(ascii: "/")])
    }

    /// `protocolName` as bytes, to compare with the first level of every inbound topic without going through
    /// generic sequence algorithms on the UTF-8 view (which ran unspecialized, at ~500 instructions a topic). A
    /// constant in the binary: a stored static array cost a `swift_once` call on every use.
    private static var protocolNameBytes: UnsafeBufferPointer<UInt8> {
        let name: StaticString = "coaty"
        return UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
    }

    /// Parses an inbound topic, as strictly as needed to route it safely: the level count fits the event,
    /// events that need a filter have one and others have none, ids are non-empty.
    ///
    /// Levels are split at the bytes `/` and `:`, as the broker and Coaty JS split them. This runs for every
    /// inbound event, so it scans the contiguous UTF-8 bytes once and makes strings only of the levels it keeps.
    public init(parsing topic: String) throws(CoatyTopicError) {
        let parsed = topic.utf8.withContiguousStorageIfAvailable { bytes in
            Result { () throws(CoatyTopicError) in try CoatyTopic(levelsOf: bytes) }
        }
        self = try
            (parsed
            ?? Array(topic.utf8).withUnsafeBufferPointer { bytes in
                Result { () throws(CoatyTopicError) in try CoatyTopic(levelsOf: bytes) }
            }).get()
    }

    private init(levelsOf topic: UnsafeBufferPointer<UInt8>) throws(CoatyTopicError) {
        var levels = TopicLevels(topic)
        guard let protocolLevel = levels.next(), let versionLevel = levels.next(), let namespaceLevel = levels.next(),
            let eventLevel = levels.next(), let sourceLevel = levels.next(),
            protocolLevel.count == Self.protocolNameBytes.count, protocolLevel.hasPrefix(Self.protocolNameBytes)
        else { throw .notACoatyTopic }
        let correlationLevel = levels.next()
        let levelCount = correlationLevel == nil ? 5 : 6 + levels.countRemaining()

        let version: Int
        if versionLevel.count == 1, versionLevel[0] == UInt8(ascii: "3") {
            version = Self.protocolVersion
        } else {
            let text = String(decoding: versionLevel, as: UTF8.self)
            guard let number = Int(text), number == Self.protocolVersion else { throw .unsupportedVersion(text) }
            version = number
        }
        let code: UnsafeBufferPointer<UInt8>
        let filter: String?
        if let colon = eventLevel.firstIndex(of: UInt8(ascii: ":")) {
            code = UnsafeBufferPointer(rebasing: eventLevel[..<colon])
            filter = String(decoding: UnsafeBufferPointer(rebasing: eventLevel[(colon + 1)...]), as: UTF8.self)
        } else {
            code = eventLevel
            filter = nil
        }
        guard let eventType = CoatyEventType(code: code) else {
            throw .unknownEvent(String(decoding: code, as: UTF8.self))
        }
        guard levelCount == (eventType.isOneWay ? 5 : 6) else { throw .wrongLevelCount(levelCount) }
        if eventType.hasFilter {
            guard let filter, !filter.isEmpty else { throw .missingFilter }
        } else if filter != nil {
            throw .unexpectedFilter
        }
        guard !namespaceLevel.isEmpty else { throw .emptyLevel("namespace") }
        guard !sourceLevel.isEmpty else { throw .emptyLevel("sourceId") }
        var correlationId: String?
        if let correlationLevel {
            guard !correlationLevel.isEmpty else { throw .emptyLevel("correlationId") }
            correlationId = String(decoding: correlationLevel, as: UTF8.self)
        }
        self.init(
            namespace: String(decoding: namespaceLevel, as: UTF8.self), eventType: eventType, filter: filter,
            sourceId: String(decoding: sourceLevel, as: UTF8.self), correlationId: correlationId, version: version)
    }

    /// The topic name to publish on.
    public var description: String {
        EventTopics(namespace: namespace, sourceId: sourceId, version: version).topic(
            eventType, filter: filter, correlationId: correlationId)
    }

    /// The subscription filter for events of a kind: `+` for the source, for the correlation id of requests, and
    /// for the namespace when `namespace` is nil (cross-namespacing).
    public static func subscriptionFilter(
        namespace: String?, eventType: CoatyEventType, filter: String? = nil, correlationId: String? = nil
    ) -> String {
        var topic = "\(protocolName)/\(protocolVersion)/\(namespace ?? "+")/\(eventType.rawValue)"
        if let filter { topic += ":" + filter }
        topic += "/+"
        if !eventType.isOneWay { topic += "/" + (correlationId ?? "+") }
        return topic
    }

    /// The IoValue route a router creates for a source: `coaty/3/<routerNamespace>/IOV/<sourceId>`.
    public static func ioValueRoute(namespace: String, sourceId: String) -> String {
        "\(protocolName)/\(protocolVersion)/\(namespace)/\(CoatyEventType.ioValue.rawValue)/\(sourceId)"
    }
}

/// The topics one agent publishes its events on: the levels before and after the event level are the same for all
/// of them, so they are put together once, and each topic is written into a string of its final size at once (this
/// runs for every event published; appending level by level cost more than the rest of the topic handling).
public struct EventTopics: Sendable {
    /// `coaty/<version>/<namespace>/`
    private let head: String
    /// `/<sourceId>`
    private let sourceLevel: String

    public init(namespace: String, sourceId: String, version: Int = CoatyTopic.protocolVersion) {
        head = "\(CoatyTopic.protocolName)/\(version)/\(namespace)/"
        sourceLevel = "/" + sourceId
    }

    public func topic(_ eventType: CoatyEventType, filter: String? = nil, correlationId: String? = nil) -> String {
        let eventLevel = eventType.rawValue
        var length = head.utf8.count + eventLevel.utf8.count + sourceLevel.utf8.count
        if let filter { length += filter.utf8.count + 1 }
        if let correlationId { length += correlationId.utf8.count + 1 }
        // Pointers rather than a nested function that advances a captured position: each access to that was
        // checked for exclusivity at run time.
        return String(unsafeUninitializedCapacity: length) { buffer in
            guard let start = buffer.baseAddress else { return 0 }
            var end = Self.copy(head, to: start)
            end = Self.copy(eventLevel, to: end)
            if let filter {
                end.initialize(to: UInt8(ascii: ":"))
                end = Self.copy(filter, to: end + 1)
            }
            end = Self.copy(sourceLevel, to: end)
            if let correlationId {
                end.initialize(to: UInt8(ascii: "/"))
                end = Self.copy(correlationId, to: end + 1)
            }
            return end - start
        }
    }

    /// Copies the UTF-8 of `part` to `target` and returns the end of the copy.
    private static func copy(_ part: String, to target: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        var part = part
        return part.withUTF8 { bytes in
            guard let source = bytes.baseAddress else { return target }
            target.initialize(from: source, count: bytes.count)
            return target + bytes.count
        }
    }
}

extension UnsafeBufferPointer<UInt8> {
    fileprivate func hasPrefix(_ prefix: UnsafeBufferPointer<UInt8>) -> Bool {
        guard count >= prefix.count else { return false }
        for index in prefix.indices where self[index] != prefix[index] { return false }
        return true
    }
}

/// The levels of a topic, one after the other, as slices of its bytes.
private struct TopicLevels {
    private let bytes: UnsafeBufferPointer<UInt8>
    /// Where the next level starts; past the end once the last level was returned.
    private var start = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func next() -> UnsafeBufferPointer<UInt8>? {
        guard start <= bytes.count, let base = bytes.baseAddress else { return nil }
        // memchr, which compares a vector's width of bytes at a time: a loop over the bytes, and before it
        // `firstIndex(of:)` on a slice of the buffer, stood out in the profile of every inbound event.
        let end =
            memchr(base + start, Int32(UInt8(ascii: "/")), bytes.count - start).map {
                base.distance(to: $0.assumingMemoryBound(to: UInt8.self))
            } ?? bytes.count
        defer { start = end + 1 }
        return UnsafeBufferPointer(rebasing: bytes[start..<end])
    }

    mutating func countRemaining() -> Int {
        var count = 0
        while next() != nil { count += 1 }
        return count
    }
}

public enum CoatyTopicError: Error, Sendable, Hashable, CustomStringConvertible {
    case notACoatyTopic
    case unsupportedVersion(String)
    case unknownEvent(String)
    case wrongLevelCount(Int)
    case missingFilter
    case unexpectedFilter
    case emptyLevel(String)

    public var description: String {
        switch self {
        case .notACoatyTopic: "not a Coaty topic"
        case .unsupportedVersion(let version): "unsupported protocol version \"\(version)\""
        case .unknownEvent(let code): "unknown event \"\(code)\""
        case .wrongLevelCount(let count): "wrong number of topic levels (\(count))"
        case .missingFilter: "the event needs a filter after ':'"
        case .unexpectedFilter: "the event takes no filter"
        case .emptyLevel(let level): "empty \(level) level"
        }
    }
}
