// Custom object types and object filters: a Swift type for an application's object type, registered so that
// received objects of that type arrive as it; and the filters that select objects in Query and Call.
import CoatyJSON
import CoatyModel

// snippet.type
/// A thermostat, an application object type on the core type CoatyObject.
struct Thermostat: CoatyObjectConvertible {
    static var coreType: CoreType { .coatyObject }
    static var objectType: String? { "com.example.Thermostat" }
    let object: CoatyObject

    /// A new thermostat.
    init(name: String, setpoint: Double) {
        var object = CoatyObject(coreType: .coatyObject, objectType: Self.objectType, name: name)
        object["setpoint"] = .number(setpoint)
        self.object = object
    }

    /// A received object: checks what this type requires beyond a CoatyObject.
    init(_ object: CoatyObject) throws(JSONShapeError) {
        guard object.objectType == Self.objectType else {
            throw JSONShapeError(path: JSONPath([.key("objectType")]), reason: "expected \(Self.objectType ?? "")")
        }
        guard object["setpoint"]?.numberValue != nil else {
            throw JSONShapeError(path: JSONPath([.key("setpoint")]), reason: "expected a number")
        }
        self.object = object
    }

    var setpoint: Double { object["setpoint"]?.numberValue ?? 0 }
}
// snippet.end

// snippet.registry
var registry = CoatyObjectRegistry()
registry.register(Thermostat.self)
let received = try CoatyObject(
    validating: JSONValue(
        parsing:
            #"{"objectId":"5f0c1a52-3f4b-4d7e-9a51-2c0e8b7d9a10","name":"Hall","objectType":"com.example.Thermostat","coreType":"CoatyObject","setpoint":21.5}"#
    ))
if let thermostat = try registry.view(of: received) as? Thermostat {
    print("\(thermostat.name): \(thermostat.setpoint) °C")
}
// snippet.end

// snippet.filter
// Conditions on properties (dot paths reach into nested objects), then ordering, skip and take, as in Coaty JS.
let warmRooms = ObjectFilter(
    .or([
        ObjectFilterCondition("setpoint", .greaterThan(21)),
        ObjectFilterCondition("location.floor", .in([6, 7, 8])),
    ]),
    orderByProperties: [ObjectFilterOrdering("setpoint", .descending), ObjectFilterOrdering("name", .ascending)],
    take: 10, skip: 0)
let thermostats = [Thermostat(name: "Hall", setpoint: 21.5), Thermostat(name: "Cellar", setpoint: 16)].map(\.object)
print(ObjectMatcher.select(thermostats, filter: warmRooms).map(\.name))
// The wire form Coaty JS sends and reads: {"conditions":{"or":[["setpoint",[2,21]],...]},...}
print(JSONValue.object(warmRooms.json).serialized())
// snippet.end

// snippet.context
// A Call's context filter against a callee's context object.
var room = CoatyObject(coreType: .coatyObject, objectType: "com.example.Room", name: "Room 7.12")
room["floor"] = 7
print(ObjectMatcher.matches(room, filter: ContextFilter("floor", .between(6, 8))))  // true
print(ObjectMatcher.matches(room, filter: ContextFilter("name", .like("Room 7.%"))))  // true
// snippet.end
