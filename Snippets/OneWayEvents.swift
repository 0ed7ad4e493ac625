// One-way events: Advertise, Deadvertise, Channel and Raw, published and observed with a communication manager.
import CoatyCommunication
import CoatyJSON
import CoatyModel

func oneWayEvents(_ manager: CommunicationManager) async throws {
    // snippet.advertise
    var thermostat = CoatyObject(coreType: .coatyObject, objectType: "com.example.Thermostat", name: "Hall")
    thermostat["setpoint"] = 21.5
    // Published on ADV:CoatyObject and, as the object type is an application's, on ADV::com.example.Thermostat.
    try await manager.publishAdvertise(AdvertiseEvent(object: thermostat))

    let thermostats = try manager.observeAdvertise(objectType: "com.example.Thermostat")
    Task {
        for await advertised in thermostats {
            print("\(advertised.sourceId) advertised \(advertised.event.object.name)")
        }
    }
    // snippet.end

    // snippet.deadvertise
    await manager.publishDeadvertise(DeadvertiseEvent(objectIds: [thermostat.objectId]))
    let gone = manager.observeDeadvertise()
    Task {
        for await deadvertised in gone {
            print("gone: \(deadvertised.event.objectIds)")
        }
    }
    // snippet.end

    // snippet.channel
    let alarms = try manager.observeChannel("com.example.alarms")
    Task {
        for await alarm in alarms {
            print("alarm: \(alarm.event.objects.map(\.name))")
        }
    }
    let alarm = CoatyObject(coreType: .coatyObject, objectType: "com.example.Alarm", name: "Smoke in the hall")
    try await manager.publishChannel(ChannelEvent(channelId: "com.example.alarms", content: .object(alarm)))
    // snippet.end

    // snippet.raw
    // Raw messages use application topics (never under coaty/) and carry bytes; MQTT wildcards work in filters.
    let states = try manager.observeRaw(filter: "plant/+/state")
    Task {
        for await (topic, payload) in states {
            print("\(topic): \(String(decoding: payload, as: UTF8.self))")
        }
    }
    try manager.publishRaw(topic: "plant/line1/state", payload: Array("on".utf8), retain: true)
    // snippet.end
}

let manager = CommunicationManager(identity: Identity(name: "One-way"), options: CommunicationOptions())
manager.start()
try await oneWayEvents(manager)
await manager.stop()
