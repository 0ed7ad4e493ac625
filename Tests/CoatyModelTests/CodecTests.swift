import CoatyJSON
import Testing

@testable import CoatyModel

@Suite struct CodecTests {
    static let agent = "22222222-2222-4222-8222-222222222222"
    static let correlation = "79ad88ff-0737-4d8b-9cda-8d4edbfb6f9c"
    static let identity = #"{"objectId":"1","name":"n","objectType":"coaty.Identity","coreType":"Identity"}"#

    private func decode(_ topic: String, _ payload: String) -> Result<InboundMessage, InboundRejection> {
        CoatyCodec.decode(topic: topic, payload: Array(payload.utf8))
    }

    /// Payloads Coaty JS drops are rejected with a reason, never a crash.
    @Test(arguments: [
        ("coaty/3/-/DSC/\(agent)/\(correlation)", #"{"objectId":null}"#, "$.objectId: expected a string"),
        ("coaty/3/-/DSC/\(agent)/\(correlation)", #"{"objectId":"x","coreTypes":["Identity"]}"#, "takes no types"),
        ("coaty/3/-/DSC/\(agent)/\(correlation)", #"{"coreTypes":["Identity"],"objectTypes":["x"]}"#, "exactly one of"),
        (
            "coaty/3/-/DSC/\(agent)/\(correlation)", #"{"coreTypes":["Thing"]}"#,
            "$.coreTypes[0]: \"Thing\" is not a core type"
        ),
        ("coaty/3/-/DSC/\(agent)/\(correlation)", #"{}"#, "exactly one of"),
        ("coaty/3/-/RSV/\(agent)/\(correlation)", #"{"privateData":{}}"#, "needs \"object\" or \"relatedObjects\""),
        (
            "coaty/3/-/ADV:Identity/\(agent)", #"{"object":\#(identity),"privateData":null}"#,
            "$.privateData: expected an object"
        ),
        ("coaty/3/-/ADV:IoNode/\(agent)", #"{"object":\#(identity)}"#, "does not match the topic's core type"),
        ("coaty/3/-/ADV::my.Type/\(agent)", #"{"object":\#(identity)}"#, "does not match the topic's object type"),
        ("coaty/3/-/DAD/\(agent)", #"{"objectIds":["a",""]}"#, "$.objectIds[1]: must not be an empty string"),
        ("coaty/3/-/DAD/\(agent)", #"{"objectIds":"a"}"#, "expected an array"),
        ("coaty/3/-/CHN:c/\(agent)", #"{"object":\#(identity),"objects":[]}"#, "exactly one of"),
        // A Channel event's common shape (one object, maybe private data) is read in one pass; what does not fit it
        // goes the general way: the same errors at the same paths either way.
        (
            "coaty/3/-/CHN:c/\(agent)", #"{"object":{"objectId":"1","objectType":"t","coreType":"CoatyObject"}}"#,
            "$.object: missing required member \"name\""
        ),
        ("coaty/3/-/CHN:c/\(agent)", #"{"object":5}"#, "$.object: expected a Coaty object, found number"),
        ("coaty/3/-/CHN:c/\(agent)", #"{"object":\#(identity),"privateData":[]}"#, "$.privateData: expected an object"),
        ("coaty/3/-/CHN:c/\(agent)", #"{"privateData":{}}"#, "exactly one of"),
        (
            "coaty/3/-/ASC:ctx/\(agent)", #"{"ioSourceId":"s","ioActorId":"a","associatingRoute":""}"#,
            "$.associatingRoute: must not be an empty string"
        ),
        (
            "coaty/3/-/ASC:ctx/\(agent)", #"{"ioSourceId":"s","ioActorId":"a","associatingRoute":"coaty/3/-/IOV/#"}"#,
            "$.associatingRoute: is not an MQTT topic to publish on"
        ),
        (
            "coaty/3/-/ASC:ctx/\(agent)", #"{"ioSourceId":"s","ioActorId":"a","associatingRoute":"plant/+/temp"}"#,
            "$.associatingRoute: is not an MQTT topic to publish on"
        ),
        ("coaty/3/-/ASC:ctx/\(agent)", #"{"ioSourceId":"s"}"#, "missing required member \"ioActorId\""),
        (
            "coaty/3/-/ASC:ctx/\(agent)", #"{"ioSourceId":"s","ioActorId":"a","updateRate":"fast"}"#,
            "$.updateRate: expected a number"
        ),
        ("coaty/3/-/RTN/\(agent)/\(correlation)", #"{"result":1,"error":{"code":1,"message":"m"}}"#, "exactly one of"),
        ("coaty/3/-/RTN/\(agent)/\(correlation)", #"{"error":{"code":1}}"#, "missing required member \"message\""),
        ("coaty/3/-/RTN/\(agent)/\(correlation)", #"{"error":null}"#, "$.error: expected an object"),
        ("coaty/3/-/CLL:op/\(agent)/\(correlation)", #"{"parameters":5}"#, "parameters must be an array or an object"),
        ("coaty/3/-/CLL:op/\(agent)/\(correlation)", #"{"filter":7}"#, "$.filter"),
        ("coaty/3/-/UPD:Identity/\(agent)/\(correlation)", #"{"object":null}"#, "expected a Coaty object"),
        ("coaty/3/-/CPL/\(agent)/\(correlation)", #"not json"#, "payload is not JSON"),
        ("coaty/3/-/CPL/\(agent)/\(correlation)", "", "payload is not JSON"),
        ("coaty/3/-/RTV/\(agent)/\(correlation)", #"[]"#, "expected an object"),
        ("coaty/3/-/XYZ/\(agent)", "{}", "unknown event \"XYZ\""),
        ("coaty/2/-/DAD/\(agent)", "{}", "unsupported protocol version"),
        ("coaty/3/-/DAD/\(agent)/\(correlation)", "{}", "wrong number of topic levels"),
        ("coaty/3/-/DSC/\(agent)", "{}", "wrong number of topic levels"),
        ("coaty/3/-/ADV/\(agent)", "{}", "needs a filter"),
        ("coaty/3/-/DAD:x/\(agent)", "{}", "takes no filter"),
        ("coaty/3/-/RSV/\(agent)/", "{}", "empty correlationId level"),
        ("coaty/3//DAD/\(agent)", "{}", "empty namespace level"),
    ])
    func malformedEventsAreRejectedWithAReason(topic: String, payload: String, reason: String) {
        switch decode(topic, payload) {
        case .success(let message):
            Issue.record("accepted \(message)")
        case .failure(let rejection):
            #expect(rejection.reason.contains(reason), "\(rejection.reason)")
            #expect(rejection.topic == topic)
        }
    }

    @Test func validEventsOfEveryKindDecode() throws {
        let cases: [(String, String, CoatyEventType)] = [
            (
                "coaty/3/ns/CHN:temperature/\(Self.agent)", #"{"objects":[\#(Self.identity)],"privateData":{"a":1}}"#,
                .channel
            ),
            (
                "coaty/3/ns/CHN:temperature/\(Self.agent)", #"{"object":\#(Self.identity),"privateData":{"a":1}}"#,
                .channel
            ),
            ("coaty/3/ns/CHN:temperature/\(Self.agent)", #"{"object":\#(Self.identity)}"#, .channel),
            (
                "coaty/3/ns/DSC/\(Self.agent)/\(Self.correlation)",
                #"{"externalId":"e","objectTypes":["t"],"coreTypes":["IoNode"]}"#, .discover
            ),
            ("coaty/3/ns/RSV/\(Self.agent)/\(Self.correlation)", #"{"relatedObjects":[]}"#, .resolve),
            ("coaty/3/ns/RTV/\(Self.agent)/\(Self.correlation)", #"{"objects":[]}"#, .retrieve),
            ("coaty/3/ns/RTN/\(Self.agent)/\(Self.correlation)", #"{"result":null,"executionInfo":[1]}"#, .returnEvent),
            ("coaty/3/ns/RTN/\(Self.agent)/\(Self.correlation)", #"{"result":{"value":21.5}}"#, .returnEvent),
            (
                "coaty/3/ns/RTN/\(Self.agent)/\(Self.correlation)",
                #"{"error":{"code":-32602,"message":"Invalid params"}}"#,
                .returnEvent
            ),
            ("coaty/3/ns/CLL:op/\(Self.agent)/\(Self.correlation)", #"{"parameters":{"value":21.5}}"#, .call),
            ("coaty/3/ns/CLL:op/\(Self.agent)/\(Self.correlation)", #"{"parameters":[1,"a"]}"#, .call),
            ("coaty/3/ns/CLL:op/\(Self.agent)/\(Self.correlation)", #"{}"#, .call),
            ("coaty/3/ns/CPL/\(Self.agent)/\(Self.correlation)", #"{"object":\#(Self.identity)}"#, .complete),
            ("coaty/3/ns/ASC:a:b/\(Self.agent)", #"{"ioSourceId":"s","ioActorId":"a","updateRate":0.5}"#, .associate),
        ]
        for (topic, payload, type) in cases {
            guard case .success(.event(let parsed, let event)) = decode(topic, payload) else {
                Issue.record("rejected \(topic)")
                continue
            }
            #expect(event.eventType == type)
            #expect(parsed.namespace == "ns")
            #expect(event.payload.serialized() == payload)
        }
        guard
            case .success(.event(let topic, .associate(let associate))) =
                decode("coaty/3/ns/ASC:a:b/\(Self.agent)", #"{"ioSourceId":"s","ioActorId":"a"}"#)
        else { Issue.record("associate"); return }
        #expect(topic.filter == "a:b")
        #expect(associate.ioContextName == "a:b")
        #expect(!associate.isAssociation)
        guard
            case .success(.event(_, .returnEvent(let returned))) =
                decode("coaty/3/ns/RTN/\(Self.agent)/\(Self.correlation)", #"{"result":null}"#)
        else { Issue.record("return"); return }
        #expect(returned.outcome == .result(.null))
    }

    /// Coaty JS never sends `isExternalRoute` (receivers take it as false); one sent by another router is
    /// ignored, and an external route, a topic outside Coaty, is a route like any other.
    @Test func associateIgnoresIsExternalRoute() {
        let payload =
            #"{"ioSourceId":"s","ioActorId":"a","associatingRoute":"plant/line1/temp","isExternalRoute":true}"#
        guard case .success(.event(_, .associate(let associate))) = decode("coaty/3/-/ASC:ctx/\(Self.agent)", payload)
        else {
            Issue.record("rejected \(payload)")
            return
        }
        #expect(associate.associatingRoute == "plant/line1/temp")
        #expect(
            associate.payload.serialized()
                == #"{"ioSourceId":"s","ioActorId":"a","associatingRoute":"plant/line1/temp"}"#)
    }

    /// Coaty JS 2.4.1 throws while validating a Query that has no `objectFilter` (publishing and receiving alike),
    /// so every Query goes out with one, empty if need be; receiving one without it stays fine.
    @Test func queriesAlwaysCarryAnObjectFilter() throws {
        #expect(
            QueryEvent(objectTypes: ["coaty.test.Item"]).payload.serialized()
                == #"{"objectTypes":["coaty.test.Item"],"objectFilter":{}}"#)
        #expect(QueryEvent(coreTypes: [.task]).payload.serialized() == #"{"coreTypes":["Task"],"objectFilter":{}}"#)
        let filtered = QueryEvent(objectTypes: ["t"], objectFilter: ObjectFilter(take: 2))
        #expect(filtered.payload.serialized() == #"{"objectTypes":["t"],"objectFilter":{"take":2}}"#)

        let received = try QueryEvent(payload: JSONValue(parsing: Array(#"{"objectTypes":["t"]}"#.utf8)))
        #expect(received.objectFilter == nil)
        #expect(received.matches(CoatyObject(coreType: .coatyObject, objectType: "t", name: "n")))
        #expect(received.payload.serialized() == #"{"objectTypes":["t"],"objectFilter":{}}"#)
    }

    @Test func rejectionsPrintTopicsSafely() {
        let rejection = InboundRejection(topic: "coaty/3/\u{1B}[2J/" + String(repeating: "x", count: 500), reason: "r")
        #expect(!rejection.description.contains("\u{1B}"))
        #expect(rejection.description.hasPrefix("coaty/3/\\u{1B}[2J/xxx"))
        #expect(rejection.description.count < 220)
    }

    /// A combining mark after `/` or `:` does not glue the separator to the next level: the broker and Coaty JS
    /// split at the bytes.
    @Test func topicLevelsSplitAtTheSeparatorBytes() {
        let topic = "coaty/3/-/CHN:\u{301}temperature/\u{301}\(Self.agent)"
        guard case .success(.event(let parsed, .channel(let channel))) = decode(topic, #"{"objects":[]}"#) else {
            Issue.record("rejected \(topic)")
            return
        }
        #expect(parsed.filter == "\u{301}temperature")
        #expect(channel.channelId == "\u{301}temperature")
        #expect(parsed.sourceId == "\u{301}\(Self.agent)")
        #expect(parsed.description == topic)
    }

    /// The event level is read as bytes: every code names its event, and a code one byte off, of another length or
    /// in lower case names none, with the code in the error as it came.
    @Test func eventCodesAreReadExactly() {
        for eventType in CoatyEventType.allCases {
            let code = Array(eventType.rawValue.utf8)
            #expect(code.withUnsafeBufferPointer { CoatyEventType(code: $0) } == eventType)
            var lastByteOff = code
            lastByteOff[2] &+= 1
            var firstByteOff = code
            firstByteOff[0] &-= 1
            let lowerCase = code.map { $0 | 0x20 }
            for unknown in [lastByteOff, firstByteOff, Array(code.prefix(2)), code + [code[2]], lowerCase] {
                #expect(unknown.withUnsafeBufferPointer { CoatyEventType(code: $0) } == nil)
            }
        }
        for code in ["", "A", "ADVX", "adv", "ÄDV"] {
            let topic = "coaty/3/-/\(code):filter/\(Self.agent)"
            guard case .failure(let rejection) = decode(topic, "{}") else {
                Issue.record("accepted \(topic)")
                continue
            }
            #expect(rejection.reason == "unknown event \"\(code)\"")
        }
    }

    @Test func ioValueAndRawTopicsPassThroughUndecoded() {
        let bytes: [UInt8] = [0xFF, 0x00, 0x41]
        #expect(
            CoatyCodec.decode(topic: "coaty/3/-/IOV/c547e5cd", payload: bytes)
                == .success(.ioValue(topic: "coaty/3/-/IOV/c547e5cd", payload: bytes)))
        #expect(
            CoatyCodec.decode(topic: "plant/line1/temp", payload: bytes)
                == .success(.raw(topic: "plant/line1/temp", payload: bytes)))
        #expect(CoatyCodec.decode(topic: "coaty", payload: bytes) == .success(.raw(topic: "coaty", payload: bytes)))
    }

    @Test func discoverMatchingAndResponseChecks() throws {
        let identity = Identity(objectId: "i", name: "n")
        #expect(DiscoverEvent.coreTypes([.identity]).matches(identity.object))
        #expect(!DiscoverEvent.objectTypes(["coaty.IoNode"]).matches(identity.object))
        #expect(DiscoverEvent.objectId("i").accepts(ResolveEvent(object: identity.object)))
        #expect(!DiscoverEvent.objectId("j").accepts(ResolveEvent(object: identity.object)))
        #expect(DiscoverEvent.coreTypes([.identity]).isDiscoveringTypes)
        #expect(DiscoverEvent.objectId("i").isDiscoveringObjectId)
        #expect(!DiscoverEvent.externalId("e", objectId: "i").isDiscoveringObjectId)
        let update = UpdateEvent(object: identity.object)
        #expect(update.accepts(CompleteEvent(object: identity.object)))
        #expect(!update.accepts(CompleteEvent(object: Identity().object)))
    }

    @Test func names() {
        #expect(CoatyName.isValid("foo_bar-baz"))
        #expect(CoatyName.isValid("coaty.test.Temperature[Celsius]"))
        for invalid in ["", "foo+/", "a#", "a/b", "a\u{0}b"] {
            #expect(!CoatyName.isValid(invalid))
        }
        #expect(CoatyName.isValidPublicationTopic("/test/42/"))
        #expect(!CoatyName.isValidPublicationTopic("a/+/b"))
        #expect(CoatyName.isValidSubscriptionFilter("a/+/#"))
        #expect(!CoatyName.isValidSubscriptionFilter("a/#/b"))
        #expect(!CoatyName.isValidSubscriptionFilter("a/b+"))
    }

    @Test(arguments: [
        ("a/b/c", "a/b/c", true), ("a/b/c", "a/+/c", true), ("a/b/c", "a/#", true), ("a", "a/#", true),
        ("a/b/c", "+/+", false), ("a/b", "a/b/c", false), ("/test/42/", "/test/42/", true),
        ("/test/42/", "+/+/+/+", true),
        ("$SYS/x", "#", false), ("$SYS/x", "$SYS/#", true), ("a//b", "a/+/b", true), ("a/b", "#", true),
    ])
    func mqttWildcardMatching(topic: String, filter: String, matches: Bool) {
        #expect(CoatyName.topic(topic, matches: filter) == matches)
    }
}
