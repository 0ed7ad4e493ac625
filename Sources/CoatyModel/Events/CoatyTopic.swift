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

    public var isResponse: Bool {
        switch self {
        case .resolve, .retrieve, .complete, .returnEvent: true
        default: false
        }
    }
}

/// Rules for the names that go into topic levels: namespaces, channel ids, operations, context names, object types.
public enum CoatyName {
    /// Non-empty and free of NUL, `+`, `#` and `/`, as Coaty JS's `isValidEventFilter` requires.
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && !name.utf8.contains { $0 == 0 || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: "/") }
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
            let filterFirst = filterLevels.first, filterFirst.elementsEqual("+".utf8) || filterFirst.elementsEqual("#".utf8)
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
        topic.utf8.starts(with: "coaty/".utf8)
    }

    /// Parses an inbound topic, as strictly as needed to route it safely: the level count fits the event,
    /// events that need a filter have one and others have none, ids are non-empty.
    ///
    /// Levels are split at the bytes `/` and `:`, as the broker and Coaty JS split them; this runs for every
    /// inbound event, and splitting the UTF-8 view costs a fraction of splitting Characters.
    public init(parsing topic: String) throws(CoatyTopicError) {
        let levels = topic.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard levels.count >= 5, levels[0].elementsEqual(Self.protocolName.utf8) else { throw .notACoatyTopic }
        guard let version = Int(Substring(levels[1])), version == Self.protocolVersion else {
            throw .unsupportedVersion(String(Substring(levels[1])))
        }
        let eventLevel = levels[3]
        let code: Substring
        let filter: String?
        if let colon = eventLevel.firstIndex(of: UInt8(ascii: ":")) {
            code = Substring(eventLevel[..<colon])
            filter = String(Substring(eventLevel[eventLevel.index(after: colon)...]))
        } else {
            code = Substring(eventLevel)
            filter = nil
        }
        guard let eventType = CoatyEventType(rawValue: String(code)) else { throw .unknownEvent(String(code)) }
        guard levels.count == (eventType.isOneWay ? 5 : 6) else { throw .wrongLevelCount(levels.count) }
        if eventType.hasFilter {
            guard let filter, !filter.isEmpty else { throw .missingFilter }
        } else if filter != nil {
            throw .unexpectedFilter
        }
        guard !levels[2].isEmpty else { throw .emptyLevel("namespace") }
        guard !levels[4].isEmpty else { throw .emptyLevel("sourceId") }
        if !eventType.isOneWay {
            guard !levels[5].isEmpty else { throw .emptyLevel("correlationId") }
        }
        self.init(
            namespace: String(Substring(levels[2])), eventType: eventType, filter: filter,
            sourceId: String(Substring(levels[4])), correlationId: eventType.isOneWay ? nil : String(Substring(levels[5])),
            version: version)
    }

    /// The topic name to publish on.
    public var description: String {
        var topic = "\(Self.protocolName)/\(version)/\(namespace)/\(eventType.rawValue)"
        if let filter { topic += ":" + filter }
        topic += "/" + sourceId
        if let correlationId { topic += "/" + correlationId }
        return topic
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
