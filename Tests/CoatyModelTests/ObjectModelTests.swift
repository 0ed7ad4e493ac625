import CoatyJSON
import Testing

@testable import CoatyModel

@Suite struct ObjectModelTests {
    /// An application type that the receiver registered.
    struct Thermostat: CoatyObjectConvertible {
        static var coreType: CoreType { .coatyObject }
        static var objectType: String? { "com.example.Thermostat" }
        let object: CoatyObject

        init(_ object: CoatyObject) throws(JSONShapeError) {
            try Self.checkType(of: object)
            guard object["setpoint"]?.numberValue != nil else {
                throw JSONShapeError(path: JSONPath([.key("setpoint")]), reason: "expected a number")
            }
            self.object = object
        }

        var setpoint: Double { object["setpoint"]?.numberValue ?? 0 }
    }

    static let unknownTypeFrame =
        #"{"object":{"name":"Hall","coreType":"IoContext","objectType":"com.example.HallContext","objectId":"9d2c5f2e-1c1b-4a47-8d3e-2f1e0b9a7c11","operatingState":"emergency","zones":[{"id":1,"limits":{"max":60.5}}],"note":null,"parentObjectId":"44444444-4444-4444-8444-444444444444"}}"#

    @Test func unregisteredTypeDecodesToItsCoreTypeAndReencodesWithoutLoss() throws {
        let decoded = CoatyCodec.decode(
            topic: "coaty/3/-/ADV::com.example.HallContext/44444444-4444-4444-8444-444444444444",
            payload: Array(Self.unknownTypeFrame.utf8))
        guard case .success(.event(_, .advertise(let event))) = decoded else {
            Issue.record("not decoded: \(decoded)")
            return
        }
        let view = try CoatyObjectRegistry().view(of: event.object)
        let context = try #require(view as? IoContext)
        #expect(context["operatingState"] == "emergency")
        #expect(context["note"] == .null)
        // Republished, as a router does with an updated context: nothing is lost, the order is kept.
        #expect(AdvertiseEvent(object: context.object).payload.serialized() == Self.unknownTypeFrame)
        var changed = context
        changed["operatingState"] = "normal"
        let text = UpdateEvent(object: changed.object).payload.serialized()
        #expect(text == Self.unknownTypeFrame.replacing("emergency", with: "normal"))
    }

    @Test func registeredTypeGetsItsOwnView() throws {
        var registry = CoatyObjectRegistry()
        registry.register(Thermostat.self)
        var object = CoatyObject(coreType: .coatyObject, objectType: "com.example.Thermostat", name: "t")
        object["setpoint"] = 21.5
        let view = try registry.view(of: object)
        #expect((view as? Thermostat)?.setpoint == 21.5)
        object["setpoint"] = nil
        #expect(throws: JSONShapeError.self) { try registry.view(of: object) }
        let other = CoatyObject(coreType: .coatyObject, objectType: "com.example.Other", name: "o")
        #expect(try registry.view(of: other) is CoatyObject)
    }

    @Test func ioPointsExposeTheirFields() throws {
        let source = IoSource(
            objectId: "s", name: "Temperature", valueType: "t", updateStrategy: .throttle, updateRate: 100.5,
            externalRoute: "plant/line1/temp")
        #expect(source.updateStrategy == .throttle)
        #expect(source.updateRate == 100.5)
        #expect(source.externalRoute == "plant/line1/temp")
        #expect(!source.useRawIoValues)
        #expect(
            source.object.json.serialized()
                == #"{"name":"Temperature","coreType":"IoSource","objectType":"coaty.IoSource","objectId":"s","valueType":"t","updateStrategy":3,"updateRate":100.5,"externalRoute":"plant/line1/temp"}"#
        )
        let actor = IoActor(name: "a", valueType: "t")
        #expect(source.isCompatible(with: actor))
        #expect(!source.isCompatible(with: IoActor(name: "b", valueType: "t", useRawIoValues: true)))
        #expect(!source.isCompatible(with: IoActor(name: "c", valueType: "u")))
        #expect(IoSource(name: "d", valueType: "t").updateStrategy == .default)
    }

    @Test func absentOptionalsAreNeverWrittenAsNull() {
        let texts = [
            AdvertiseEvent(object: Identity().object).payload.serialized(),
            ResolveEvent(object: Identity().object).payload.serialized(),
            CompleteEvent(object: Identity().object).payload.serialized(),
            ChannelEvent(channelId: "c", content: .objects([])).payload.serialized(),
            RetrieveEvent(objects: []).payload.serialized(),
            DiscoverEvent.objectId("x").payload.serialized(),
            DiscoverEvent.externalId("e").payload.serialized(),
            IoNode(contextName: "c", parentObjectId: "p", ioSources: [], ioActors: []).object.json.serialized(),
            IoSource(name: "s", valueType: "t").object.json.serialized(),
            ReturnEvent(.result(1)).payload.serialized(),
            CoatyTask(name: "t", creatorId: "c", status: .pending).object.json.serialized(),
            Log(level: .info, message: "m").object.json.serialized(),
        ]
        for text in texts {
            #expect(!text.contains("null"), "\(text)")
        }
    }

    @Test func everyCoreTypeRoundTripsThroughValidation() throws {
        let creator = CoatyUUID.random()
        let objects: [CoatyObject] = [
            CoatyObject(coreType: .coatyObject, name: "o"),
            User(name: "u", formattedName: "Ada Lovelace").object,
            Annotation(name: "a", type: .image, creatorId: creator, status: .published).object,
            CoatyTask(name: "t", creatorId: creator, status: .inProgress).object,
            IoContext(name: "c").object,
            IoNode(
                contextName: "c", parentObjectId: creator, ioSources: [IoSource(name: "s", valueType: "t")],
                ioActors: []
            ).object,
            IoSource(name: "s", valueType: "t").object,
            IoActor(name: "a", valueType: "t").object,
            Identity().object,
            Log(level: .warning, message: "m").object,
            Location(name: "l", latitude: 48.1, longitude: 11.6, accuracy: 5).object,
            Snapshot(of: IoContext(name: "c").object, creatorId: creator).object,
        ]
        #expect(Set(objects.map(\.coreType)) == Set(CoreType.allCases))
        for object in objects {
            let decoded = try CoatyObject(validating: try JSONValue(parsing: object.json.serialized()))
            #expect(decoded == object)
            let view = try CoatyObjectRegistry().view(of: decoded)
            #expect(view.object == object)
        }
    }

    @Test(arguments: [
        (
            #"{"name":"x","coreType":"Identity","objectType":"coaty.Identity"}"#,
            "$: missing required member \"objectId\""
        ),
        (
            #"{"name":"x","coreType":"Identity","objectType":"coaty.Identity","objectId":""}"#,
            "$.objectId: must not be an empty string"
        ),
        (
            #"{"name":"x","coreType":"Thing","objectType":"t","objectId":"1"}"#,
            "$.coreType: \"Thing\" is not a core type"
        ),
        (
            #"{"name":"x","coreType":"CoatyObject","objectType":"t","objectId":"1","parentObjectId":null}"#,
            "$.parentObjectId: expected a string, found null"
        ),
        (
            #"{"name":null,"coreType":"CoatyObject","objectType":"t","objectId":"1"}"#,
            "$.name: expected a string, found null"
        ),
        (
            #"{"name":"s","coreType":"IoSource","objectType":"coaty.IoSource","objectId":"1","valueType":"t","updateStrategy":4}"#,
            "$.updateStrategy: 4 is out of range 0...3"
        ),
        (
            #"{"name":"s","coreType":"IoSource","objectType":"coaty.IoSource","objectId":"1","valueType":"t","updateRate":-1}"#,
            "$.updateRate: -1 is out of range"
        ),
        (
            #"{"name":"s","coreType":"IoActor","objectType":"coaty.IoActor","objectId":"1"}"#,
            "$: missing required member \"valueType\""
        ),
        (
            #"{"name":"n","coreType":"IoNode","objectType":"coaty.IoNode","objectId":"1","ioSources":[{"name":"a","coreType":"IoActor","objectType":"coaty.IoActor","objectId":"2","valueType":"t"}]}"#,
            "$.ioSources[0]: expected an object of core type IoSource"
        ),
        (
            #"{"name":"n","coreType":"IoNode","objectType":"coaty.IoNode","objectId":"1","characteristics":[]}"#,
            "$.characteristics: expected an object, found array"
        ),
        (
            #"{"name":"l","coreType":"Log","objectType":"coaty.Log","objectId":"1","logLevel":15,"logMessage":"m","logDate":"d"}"#,
            "$.logLevel: 15 is not a log level"
        ),
        (
            #"{"name":"t","coreType":"Task","objectType":"coaty.Task","objectId":"1","creatorId":"c","creationTimestamp":1,"status":7}"#,
            "$.status: 7 is out of range 0...6"
        ),
        (
            #"{"name":"u","coreType":"User","objectType":"coaty.User","objectId":"1","names":{"givenName":"A"}}"#,
            "$.names: familyName and givenName go together"
        ),
        (
            #"{"name":"s","coreType":"Snapshot","objectType":"coaty.Snapshot","objectId":"1","parentObjectId":"p","creationTimestamp":1,"creatorId":"c","object":{}}"#,
            "$.object: missing required member \"name\""
        ),
    ])
    func invalidObjectsAreRejectedWithPathAndReason(json: String, expected: String) throws {
        do {
            _ = try CoatyObject(validating: try JSONValue(parsing: json))
            Issue.record("accepted: \(json)")
        } catch {
            #expect("\(error)".hasPrefix(expected), "\(error)")
        }
    }

    /// The one-pass check of the core fields that received objects go through first agrees with the field-by-field
    /// check that names the first wrong field: on every object with one or two core fields absent or of another value.
    @Test func theOnePassCheckOfTheCoreFieldsAgreesWithTheFieldByFieldCheck() throws {
        let fields = [
            "name", "objectType", "objectId", "coreType", "parentObjectId", "externalId", "locationId", "isDeactivated",
        ]
        let variants: [JSONValue?] = [nil, .null, "", "x", "Identity", "IoSource", true, 1, [:]]
        let valid: JSONObject = [
            "name": "n", "objectType": "coaty.Identity", "objectId": "1", "coreType": "Identity",
            "parentObjectId": "p", "externalId": "e", "locationId": "l", "isDeactivated": false, "other": 1,
        ]
        var objects = [valid]
        for (index, first) in fields.enumerated() {
            for firstValue in variants {
                var once = valid
                once[first] = firstValue
                objects.append(once)
                for second in fields[(index + 1)...] {
                    for secondValue in variants {
                        var twice = once
                        twice[second] = secondValue
                        objects.append(twice)
                    }
                }
            }
        }
        var accepted = 0
        for json in objects {
            let fieldByField = try? CoatyObjectShape.checkCoreFields(of: JSONCursor(.object(json)))
            #expect(CoatyObjectShape.coreTypeOfValidCoreFields(json) == fieldByField, "\(json.serialized())")
            if fieldByField != nil { accepted += 1 }
        }
        // Both outcomes occur among the variants.
        #expect(accepted > 100 && accepted < objects.count - 100, "\(accepted) of \(objects.count)")
    }

    /// An object in an event that fails its check is named by its path in the payload, as before the one-pass check.
    @Test(arguments: [
        (
            #"{"object":{"name":"x","coreType":"CoatyObject","objectType":"t"}}"#,
            "$.object: missing required member \"objectId\""
        ),
        (
            #"{"objects":[{"name":"x","coreType":"CoatyObject","objectType":"t","objectId":"1"},{"name":"x","coreType":"CoatyObject","objectType":"t","objectId":"1","isDeactivated":"yes"}]}"#,
            "$.objects[1].isDeactivated: expected a boolean, found string"
        ),
        (
            #"{"object":{"name":"s","coreType":"IoSource","objectType":"coaty.IoSource","objectId":"1"}}"#,
            "$.object: missing required member \"valueType\""
        ),
    ])
    func invalidObjectsInEventsAreNamedByTheirPath(payload: String, expected: String) throws {
        do {
            _ = try ChannelEvent(channelId: "c", payload: try JSONValue(parsing: payload))
            Issue.record("accepted: \(payload)")
        } catch {
            #expect("\(error)" == expected)
        }
    }

    /// Objects nested in objects (a Snapshot of a Snapshot, an IoNode among an IoNode's sources) are checked only
    /// to a bounded depth: one message must not be able to exhaust the stack of the agent that receives it.
    @Test func deeplyNestedObjectsAreRejectedNotACrash() throws {
        var snapshot = CoatyObject(coreType: .coatyObject, name: "leaf").jsonValue
        var node = IoNode(contextName: "c", parentObjectId: "p", ioSources: [], ioActors: []).jsonValue
        for _ in 0..<200 {  // within the JSON parser's 512 levels
            snapshot = [
                "name": "Snapshot", "coreType": "Snapshot", "objectType": "coaty.Snapshot", "objectId": "s",
                "parentObjectId": "p", "creationTimestamp": 1, "creatorId": "c", "object": snapshot,
            ]
            var wrapper = IoNode(contextName: "c", parentObjectId: "p", ioSources: [], ioActors: []).object.json
            wrapper["ioSources"] = .array([node])
            node = .object(wrapper)
        }
        for payload in [snapshot, node] {
            #expect {
                _ = try CoatyObject(validating: try JSONValue(parsing: payload.serialized()))
            } throws: { error in
                (error as? JSONShapeError)?.reason == "Coaty objects nested deeper than 16 levels"
            }
        }
        var shallow = CoatyObject(coreType: .coatyObject, name: "leaf")
        for _ in 0..<CoatyObjectShape.maximumNesting { shallow = Snapshot(of: shallow, creatorId: "c").object }
        #expect(throws: Never.self) { try CoatyObject(validating: shallow.jsonValue) }
    }

    @Test func uuidsAreVersion4Lowercase() {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let id = CoatyUUID.random()
            #expect(CoatyUUID.isVersion4(id))
            #expect(id == id.lowercased())
            seen.insert(id)
        }
        #expect(seen.count == 1000)
        // The id is drawn as two 64-bit halves.
        Self.expectEveryRandomDigitVaries(in: seen)
        #expect(!CoatyUUID.isVersion4("5f0c1a52-3f4b-3d7e-9a51-2c0e8b7d9a10"))
        #expect(!CoatyUUID.isVersion4("5f0c1a52-3f4b-4d7e-7a51-2c0e8b7d9a10"))
    }

    /// Each random byte becomes two lowercase hex digits in order, with the version and variant bits set.
    @Test func uuidDigitsFollowTheRandomBytes() {
        struct Counting: RandomNumberGenerator {
            var value: UInt64 = 0
            mutating func next() -> UInt64 {
                defer { value += 0x11 }
                return value
            }
        }
        var generator = Counting()
        #expect(CoatyUUID.random(using: &generator) == "00112233-4455-4677-8899-aabbccddeeff")
    }

    /// Ids made in a batch (a requester's spare correlation ids) are version 4 UUIDs as single ones are, all distinct,
    /// with every random digit varying across the batch and its position.
    @Test func uuidsMadeInBatchesAreVersion4AndDistinct() {
        #expect(CoatyUUID.random(count: 0).isEmpty)
        var seen = Set<String>()
        for _ in 0..<50 {
            let batch = CoatyUUID.random(count: 20)
            #expect(batch.count == 20)
            for id in batch {
                #expect(CoatyUUID.isVersion4(id))
                #expect(id == id.lowercased())
            }
            seen.formUnion(batch)
        }
        #expect(seen.count == 1000)
        Self.expectEveryRandomDigitVaries(in: seen)
    }

    /// No random digit of the ids is stuck at one value (the hyphens and the version digit are fixed; the variant
    /// digit has four values).
    static func expectEveryRandomDigitVaries(in ids: Set<String>) {
        let fixed: Set<Int> = [8, 13, 14, 18, 23]
        for position in 0..<36 where !fixed.contains(position) {
            let digits = Set(ids.map { Array($0.utf8)[position] })
            #expect(digits.count > (position == 19 ? 1 : 4), "digit \(position): \(digits.count) values")
        }
    }

    @Test func logDateIsLocalISOWithOffsetAndMilliseconds() {
        let text = CoatyTimestamp.localISOString(milliseconds: 1_620_050_531_123)
        #expect(text.count == 29)
        #expect(text.contains(".123"))
        let pattern = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{2}:\d{2}/
        #expect(text.wholeMatch(of: pattern) != nil)
    }
}
