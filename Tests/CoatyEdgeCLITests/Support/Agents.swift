/// Agent configurations for the tests: the temperature scenario of Coaty's IO routing guide, with an emulated
/// TMP102 as the sensor, a router routing by the context's operating state, and one actor per state.
enum Agents {
    static let sourceId = "c547e5cd-ef99-4ccd-b109-fc472fc2d421"
    static let normalActorId = "a731fc40-c0f8-486f-b5b6-b653c3cabaea"
    static let emergencyActorId = "a60a74f3-3d26-446f-a358-911867544944"
    static let contextName = "TemperatureMeasurement"

    static let sensorsAgentId = "5e4a0b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b"
    /// The MQTT client id Coaty derives from the identity.
    static let sensorsClientId = "Coaty5e4a0b1c2d3e4f508a"

    static func sensors(broker: Int, extra: String = "") -> String {
        """
        {
          "common": {
            "agentIdentity": {"name": "Temperature sensors", "objectId": "\(sensorsAgentId)"},
            "ioContextNodes": {"\(contextName)": {"ioSources": [
              {"objectId": "\(sourceId)", "name": "Boiler", "valueType": "coaty-edge.Temperature[Celsius]", "updateStrategy": 1}]}}
          },
          "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker)"},
          "devices": {
            "emulated": true,
            "sensors": [{"driver": "tmp102", "bus": "/dev/i2c-1", "address": "0x48", "pollInterval": "200ms",
                         "sources": {"temperature": {"ioSource": "\(sourceId)"}}}]
          }\(extra)
        }
        """
    }

    static func router(broker: Int, rules: String) -> String {
        """
        {
          "common": {"agentIdentity": {"name": "Temperature router"}},
          "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker)"},
          "controllers": {"router": {"type": "ioRouter", "rules": "\(rules)",
            "ioContext": {"name": "\(contextName)", "objectId": "55555555-5555-4555-8555-555555555555", "operatingState": "normal"}}}
        }
        """
    }

    static func actor(broker: Int, state: String, id: String, name: String, extra: String = "") -> String {
        """
        {
          "common": {
            "agentIdentity": {"name": "\(name)"},
            "ioContextNodes": {"\(contextName)": {
              "ioActors": [{"objectId": "\(id)", "name": "\(name) display", "valueType": "coaty-edge.Temperature[Celsius]"}],
              "characteristics": {"isResponsibleForOperatingState": "\(state)"}}}
          },
          "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker)"}\(extra)
        }
        """
    }

    static let sharedHostId = "0b7d3c2e-9a41-4f6e-8d25-3c1f6a9e7b40"

    /// An agent that hosts the shared object `setpoints` from its configuration, and nothing else.
    static func sharedHost(broker: Int, setpoints: String = #"{"data": {"fanOn": 60, "fanOff": 55, "mode": "auto"}}"#)
        -> String
    {
        """
        {
          "common": {"agentIdentity": {"name": "Setpoints host", "objectId": "\(sharedHostId)"}},
          "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker)"},
          "sharedObjects": {"setpoints": \(setpoints)}
        }
        """
    }

    static let rules = """
        {"rules": [
          {"name": "temperature-normal", "valueType": "coaty-edge.Temperature[Celsius]",
           "condition": {"and": [{"===": [{"var": "context.operatingState"}, "normal"]},
                                 {"===": [{"var": "actorNode.characteristics.isResponsibleForOperatingState"}, "normal"]}]}},
          {"name": "temperature-emergency", "valueType": "coaty-edge.Temperature[Celsius]",
           "condition": {"and": [{"===": [{"var": "context.operatingState"}, "emergency"]},
                                 {"===": [{"var": "actorNode.characteristics.isResponsibleForOperatingState"}, "emergency"]}]}}
        ]}
        """
}
