import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatySharedObjects
import CoatyTestSupport
import Foundation
import Testing

@testable import CoatyRuntime

@Suite struct ConfigurationTests {
    static let full = #"""
        {
          "common": {
            "agentIdentity": {"name": "Greenhouse", "objectId": "2f4a8d7c-51b6-4f0e-9c3a-7d1e2b3c4d5e"},
            "ioContextNodes": {
              "TemperatureMeasurement": {
                "ioSources": [{"objectId": "c547e5cd-ef99-4ccd-b109-fc472fc2d421", "name": "Soil", "valueType": "coaty-edge.Temperature[Celsius]", "updateStrategy": 2, "updateRate": 500}],
                "ioActors": [{"objectId": "a731fc40-c0f8-486f-b5b6-b653c3cabaea", "name": "Fan", "coreType": "IoActor", "objectType": "coaty.IoActor", "valueType": "coaty-edge.Temperature[Celsius]"}],
                "characteristics": {"isResponsibleForOperatingState": "normal"}
              }
            }
          },
          "communication": {
            "brokerUrl": "mqtt://192.168.1.5:1884", "namespace": "greenhouse", "shouldEnableCrossNamespacing": true,
            "username": "pi", "password": "secret", "keepAlive": 30, "maxInboundPayload": 65536,
            "reconnect": {"minDelay": 0.5, "maxDelay": 60, "maxAttempts": 12}
          },
          "controllers": {"Router": {"ioContext": {"name": "TemperatureMeasurement"}}},
          "logging": {"level": "debug"},
          "metrics": {"port": 9464, "host": "::1"}
        }
        """#

    @Test func readsEverySection() throws {
        let configuration = try Configuration.parse(Array(Self.full.utf8), source: "agent.json")
        #expect(configuration.identity.name == "Greenhouse")
        #expect(configuration.identity.objectId == "2f4a8d7c-51b6-4f0e-9c3a-7d1e2b3c4d5e")
        let node = try #require(configuration.ioNodes.first)
        #expect(node.contextName == "TemperatureMeasurement")
        #expect(node.ioSources.first?.updateStrategy == .sample)
        #expect(node.ioSources.first?.updateRate == 500)
        // Missing coreType and objectType are filled in; what the user wrote keeps its order.
        #expect(
            node.ioSources.first?.object.json.keys == [
                "objectId", "name", "valueType", "updateStrategy", "updateRate", "coreType", "objectType",
            ])
        #expect(node.ioActors.first?.name == "Fan")
        #expect(node.characteristics?["isResponsibleForOperatingState"] == "normal")
        let communication = configuration.communication
        #expect(communication.host == "192.168.1.5")
        #expect(communication.port == 1884)
        #expect(communication.namespace == "greenhouse")
        #expect(communication.shouldEnableCrossNamespacing)
        #expect(communication.username == "pi" && communication.password == "secret")
        #expect(communication.keepAlive == .seconds(30))
        #expect(communication.maximumInboundPayload == 65536)
        #expect(communication.reconnect.minimumDelay == .milliseconds(500))
        #expect(communication.reconnect.maximumDelay == .seconds(60))
        #expect(communication.reconnect.maximumAttempts == 12)
        #expect(configuration.controllerOptions["Router"]?.path.description == "$.controllers.Router")
        #expect(configuration.logLevel == .debug)
        #expect(configuration.metrics == Configuration.MetricsEndpoint(host: "::1", port: 9464))
    }

    @Test func minimalConfigurationGetsCoatyDefaults() throws {
        let configuration = try Configuration.parse(
            Array(#"{"communication": {"brokerUrl": "mqtt://localhost"}}"#.utf8), source: "m.json")
        #expect(configuration.identity.name == "Coaty Agent")
        #expect(CoatyUUID.isVersion4(configuration.identity.objectId))
        #expect(configuration.communication.port == 1883)
        #expect(configuration.communication.namespace == "-")
        #expect(configuration.communication.keepAlive == .seconds(60))
        #expect(configuration.communication.maximumInboundPayload == 256 * 1024)
        #expect(
            configuration.communication.offlineQueue
                == OfflineQueueLimits(maximumMessages: 10_000, maximumBytes: 4 << 20, dropPolicy: .oldest))
        #expect(configuration.communication.zeroLoss == nil)
        #expect(configuration.ioNodes.isEmpty)
        #expect(configuration.metrics == nil)
    }

    @Test func theOfflineQueueBoundAndPolicy() throws {
        let json =
            #"{"communication": {"brokerUrl": "mqtt://h", "offlineQueue": {"maxMessages": 500, "maxBytes": 65536, "drop": "newest"}}}"#
        let configuration = try Configuration.parse(Array(json.utf8), source: "m.json")
        #expect(
            configuration.communication.offlineQueue
                == OfflineQueueLimits(maximumMessages: 500, maximumBytes: 65536, dropPolicy: .newest))
    }

    @Test func zeroLossDeliveryIsOnWithTrueOrItsBounds() throws {
        func zeroLoss(_ value: String) throws -> ZeroLossOptions? {
            let json = #"{"communication": {"brokerUrl": "mqtt://h", "zeroLoss": "# + value + "}}"
            return try Configuration.parse(Array(json.utf8), source: "m.json").communication.zeroLoss
        }
        #expect(
            try zeroLoss("true") == ZeroLossOptions(maximumValues: 10_000, maximumBytes: 1 << 20, dropPolicy: .oldest))
        #expect(try zeroLoss("false") == nil)
        #expect(
            try zeroLoss(#"{"maxValues": 50, "maxBytes": 4096, "drop": "newest"}"#)
                == ZeroLossOptions(maximumValues: 50, maximumBytes: 4096, dropPolicy: .newest))
    }

    @Test func metricsListenOnLoopbackUnlessAHostIsGiven() throws {
        let json = #"{"communication": {"brokerUrl": "mqtt://h"}, "metrics": {"port": 9100}}"#
        let configuration = try Configuration.parse(Array(json.utf8), source: "m.json")
        #expect(configuration.metrics == Configuration.MetricsEndpoint(host: "127.0.0.1", port: 9100))
    }

    @Test(arguments: [
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "comunication": {}}"#,
            #"m.json: $.comunication: unknown member "comunication""#
        ),
        (#"{}"#, #"m.json: $: missing required member "communication""#),
        (#"{"communication": {"brokerUrl": 5}}"#, "m.json: $.communication.brokerUrl: expected a string, found number"),
        (#"{"communication": {"brokerUrl": "http://h"}}"#, "m.json: $.communication.brokerUrl: "),
        (
            #"{"communication": {"brokerUrl": "mqtts://h"}}"#,
            #"m.json: $.communication: an mqtts:// broker needs "tls""#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "namespace": "a/b"}}"#,
            "m.json: $.communication.namespace: namespace must be"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "keepAlive": 1}}"#,
            "m.json: $.communication.keepAlive: 1 is out of range 5...65535"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "maxInboundPayload": 100}}"#,
            "m.json: $.communication.maxInboundPayload: 100 is out of range 1024...268435455"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "offlineQueue": {"drop": "random"}}}"#,
            #"m.json: $.communication.offlineQueue.drop: "random" is neither "oldest" nor "newest""#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "offlineQueue": {"maxMessages": 0}}}"#,
            "m.json: $.communication.offlineQueue.maxMessages: 0 is out of range"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "zeroLoss": {"drop": "all"}}}"#,
            #"m.json: $.communication.zeroLoss.drop: "all" is neither "oldest" nor "newest""#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "zeroLoss": {"maxValue": 5}}}"#,
            #"m.json: $.communication.zeroLoss.maxValue: unknown member "maxValue""#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "zeroLoss": "yes"}}"#,
            "m.json: $.communication.zeroLoss: expected an object, found string"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "maxInboundPayload": 65536}, "sharedObjects": {"s": {}}}"#,
            "m.json: $.sharedObjects.s: its advertisements reach 151552 bytes"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "maxInboundPayload": "256k"}}"#,
            "m.json: $.communication.maxInboundPayload: expected an integer, found string"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "reconnect": {"minDelay": 5, "maxDelay": 1}}}"#,
            #"m.json: $.communication.reconnect: "maxDelay" must not be less"#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "password": "a", "passwordFile": "b"}}"#,
            "m.json: $.communication: give either"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "tls": {"caFile": "ca.pem", "certFile": "c.pem"}}}"#,
            #"m.json: $.communication.tls: "certFile" and "keyFile" go together"#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "common": {"ioContextNodes": {"ctx": {"ioSources": [{"name": "s", "valueType": "t"}]}}}}"#,
            #"m.json: $.common.ioContextNodes.ctx.ioSources[0]: missing required member "objectId""#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "common": {"ioContextNodes": {"ctx": {"ioSources": [{"objectId": "1", "name": "s", "valueType": "t", "coreType": "IoActor"}]}}}}"#,
            #"m.json: $.common.ioContextNodes.ctx.ioSources[0].coreType: must be "IoSource" here"#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "common": {"ioContextNodes": {"ctx": {"ioSources": [{"objectId": "1", "name": "s", "valueType": "t", "updateStrategy": 7}]}}}}"#,
            "m.json: $.common.ioContextNodes.ctx.ioSources[0].updateStrategy: 7 is out of range 0...3"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "common": {"ioContextNodes": {"ctx": {"ioSources": [{"objectId": "1", "name": "s", "valueType": "t"}], "ioActors": [{"objectId": "1", "name": "a", "valueType": "t"}]}}}}"#,
            "m.json: $.common.ioContextNodes.ctx.ioActors[0].objectId: 1 is already used at $.common.ioContextNodes.ctx.ioSources[0]"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "common": {"ioContextNodes": {"a/b": {}}}}"#,
            #"m.json: $.common.ioContextNodes["a/b"]: IO context name"#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "logging": {"level": "loud"}}"#,
            #"m.json: $.logging.level: "loud" is not one of"#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "metrics": {"port": 0}}"#,
            "m.json: $.metrics.port: 0 is out of range 1...65535"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "metrics": {}}"#,
            #"m.json: $.metrics: missing required member "port""#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "metrics": {"port": 9464, "host": "localhost"}}"#,
            #"m.json: $.metrics.host: "localhost" is not an IPv4 or IPv6 address"#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "metrics": {"port": 9464, "path": "/m"}}"#,
            #"m.json: $.metrics.path: unknown member "path""#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "controllers": {"Router": []}}"#,
            "m.json: $.controllers.Router: expected an object, found array"
        ),
        (
            "{\n  \"communication\": {\n    \"brokerUrl\": \"mqtt://h\",\n  }\n}",
            "m.json: not valid JSON: line 4, column 3:"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "sharedObjects": {"a+b": {}}}"#,
            #"m.json: $.sharedObjects["a+b"]: a shared object name must be"#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "sharedObjects": {"s": {"data": [1]}}}"#,
            "m.json: $.sharedObjects.s.data: expected an object, found array"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "sharedObjects": {"s": {"expiry": 0}}}"#,
            "m.json: $.sharedObjects.s.expiry: 0 is out of range"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "sharedObjects": {"s": {"readonly": true}}}"#,
            #"m.json: $.sharedObjects.s.readonly: unknown member "readonly""#
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "sharedObjects": {"s": {"data": {"k": "0123456789"}, "maxDataBytes": 16}}}"#,
            "m.json: $.sharedObjects.s: its data has 18 bytes, more than maxDataBytes (16)"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "sharedObjects": {"s": {"objectId": "x"}, "t": {"objectId": "x"}}}"#,
            "m.json: $.sharedObjects.t.objectId: x is already the objectId of another shared object"
        ),
        // Numbers too large for an integer are out of range, not "not whole".
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "keepAlive": 1e308}}"#,
            "m.json: $.communication.keepAlive: 1e+308 is out of range 5...65535"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "reconnect": {"maxAttempts": 1e19}}}"#,
            "m.json: $.communication.reconnect.maxAttempts: 10000000000000000000 is out of range 1...9007199254740992"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "metrics": {"port": -1e300}}"#,
            "m.json: $.metrics.port: -1e+300 is out of range 1...65535"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "sharedObjects": {"s": {"maxValueBytes": 1e100}}}"#,
            "m.json: $.sharedObjects.s.maxValueBytes: 1e+100 is out of range 16...1048576"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "reconnect": {"maxDelay": 1e400}}}"#,
            "m.json: $.communication.reconnect.maxDelay: 1e400 is beyond the range of numbers (about ±1.8e308) (line 1, column 71)"
        ),
        // A key given twice is an error where it is given again, at the top level and nested.
        (
            "{\"communication\": {\"brokerUrl\": \"mqtt://h\"},\n \"communication\": {\"brokerUrl\": \"mqtt://g\"}}",
            "m.json: $.communication: duplicate key (line 2, column 2)"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h", "keepAlive": 30, "keepAlive": 60}}"#,
            "m.json: $.communication.keepAlive: duplicate key (line 1, column 62)"
        ),
        (
            #"{"communication": {"brokerUrl": "mqtt://h"}, "sharedObjects": {"s": {"data": {"fanOn": 60, "fanOn": 70}}}}"#,
            "m.json: $.sharedObjects.s.data.fanOn: duplicate key (line 1, column 92)"
        ),
    ])
    func errorsNameFilePathAndReason(json: String, expected: String) {
        do {
            _ = try Configuration.parse(Array(json.utf8), source: "m.json")
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.description.hasPrefix(expected), "\(error)")
        }
    }

    @Test func invalidUTF8InAStringIsAnErrorAtItsPath() {
        let json =
            Array(#"{"communication": {"brokerUrl": "mqtt://h"}, "common": {"agentIdentity": {"name": "Gr"#.utf8)
            + [0xE9] + Array(#"nhaus"}}}"#.utf8)  // "é" in Latin-1, as an editor with the wrong encoding saves it
        #expect(
            throws: ConfigurationError(
                file: "m.json", path: JSONPath([.key("common"), .key("agentIdentity"), .key("name")]),
                reason: "invalid UTF-8 (byte 0xe9) (line 1, column 86)")
        ) { try Configuration.parse(json, source: "m.json") }
    }

    @Test func sharedObjectsToHost() throws {
        let configuration = try Configuration.parse(
            Array(
                #"""
                {"communication": {"brokerUrl": "mqtt://h"},
                 "sharedObjects": {"setpoints": {"data": {"fanOn": 60}, "expiry": 30, "readOnly": true, "maxValueBytes": 64},
                                   "modes": {"objectId": "0c6e3b0a-3f0e-4d7c-9e0a-7f1b2c3d4e5f"}}}
                """#.utf8), source: "m.json")
        #expect(
            configuration.sharedObjects == [
                SharedObjectDefinition(
                    name: "setpoints", data: ["fanOn": 60], expiryMinutes: 30, isReadOnly: true,
                    limits: SharedObjectLimits(maximumValueBytes: 64)),
                SharedObjectDefinition(name: "modes", objectId: "0c6e3b0a-3f0e-4d7c-9e0a-7f1b2c3d4e5f"),
            ])
    }

    @Test func loadsFromAFileAndReadsThePasswordFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-config-\(CoatyUUID.random())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let passwordFile = directory.appendingPathComponent("password")
        try Data("s3cret\n".utf8).write(to: passwordFile)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile.path)
        let configFile = directory.appendingPathComponent("agent.json")
        try Data(
            #"{"communication": {"brokerUrl": "mqtt://h", "username": "u", "passwordFile": "\#(passwordFile.path)"}}"#
                .utf8
        ).write(to: configFile)
        let configuration = try Configuration.load(file: configFile.path)
        #expect(configuration.communication.password == "s3cret")
        #expect(configuration.source == configFile.path)

        let missing = directory.appendingPathComponent("absent.json").path
        #expect(
            throws: ConfigurationError(
                file: missing, path: nil, reason: "cannot read the file: No such file or directory")
        ) {
            try Configuration.load(file: missing)
        }
    }

    /// As ssh refuses a private key others may read: the file, the JSON path and what to do, unless allowed.
    @Test func refusesAPasswordFileThatOthersMayRead() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-config-\(CoatyUUID.random())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let passwordFile = directory.appendingPathComponent("password")
        try Data("s3cret\n".utf8).write(to: passwordFile)
        let json = Array(
            #"{"communication": {"brokerUrl": "mqtt://h", "username": "u", "passwordFile": "\#(passwordFile.path)"}}"#
                .utf8)
        for (mode, reason) in [
            (0o644, "is readable by others (0644)"), (0o640, "is readable by its group (0640)"),
            (0o620, "is accessible by its group (0620)"), (0o604, "is readable by others (0604)"),
        ] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: passwordFile.path)
            #expect(
                throws: ConfigurationError(
                    file: "m.json", path: JSONPath([.key("communication"), .key("passwordFile")]),
                    reason: "\(passwordFile.path) \(reason); chmod 600 it (or allow it with --allow-open-password-file)"
                )
            ) {
                try Configuration.parse(json, source: "m.json")
            }
            let allowed = try Configuration.parse(json, source: "m.json", allowsOpenPasswordFile: true)
            #expect(allowed.communication.password == "s3cret")
        }
        for mode in [0o600, 0o400] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: passwordFile.path)
            #expect(try Configuration.parse(json, source: "m.json").communication.password == "s3cret")
        }
    }

    /// A device, a directory or a huge file is refused with the reason, before anything is read into memory.
    @Test func loadRefusesWhatIsNotARegularFileOfAtMostOneMebibyte() throws {
        let directory = try ScratchDirectory("coaty-config")
        defer { directory.remove() }
        #expect(
            throws: ConfigurationError(file: "/dev/zero", path: nil, reason: "not a regular file (a character device)")
        ) {
            try Configuration.load(file: "/dev/zero")
        }
        #expect(throws: ConfigurationError(file: directory.path, path: nil, reason: "not a regular file (a directory)"))
        {
            try Configuration.load(file: directory.path)
        }
        let large = try directory.write(
            #"{"communication": {"brokerUrl": "mqtt://h"}}"# + String(repeating: " ", count: 3 << 20), to: "large.json"
        ).path
        #expect(throws: ConfigurationError(file: large, path: nil, reason: "3.1 MiB is larger than the limit of 1 MiB"))
        {
            try Configuration.load(file: large)
        }
        let justAbove = try directory.write(
            #"{"communication": {"brokerUrl": "mqtt://h"}}"# + String(repeating: " ", count: 1 << 20), to: "above.json"
        ).path
        #expect(
            throws: ConfigurationError(file: justAbove, path: nil, reason: "1.1 MiB is larger than the limit of 1 MiB")
        ) {
            try Configuration.load(file: justAbove)
        }
        let atTheLimit = try directory.write(
            #"{"communication": {"brokerUrl": "mqtt://h"}}"#.padding(toLength: 1 << 20, withPad: " ", startingAt: 0),
            to: "limit.json"
        ).path
        #expect(throws: Never.self) { try Configuration.load(file: atTheLimit) }
    }

    /// A FIFO would block the reader until some writer comes; it is refused at once instead.
    @Test func aFIFOAsConfigurationOrPasswordFileIsRefusedWithoutWaiting() throws {
        let directory = try ScratchDirectory("coaty-config")
        defer { directory.remove() }
        let fifo = directory.path + "/agent.json"
        try makeFIFO(fifo)
        let configurationError = returnsPromptly(unblocking: fifo) { () -> ConfigurationError? in
            do throws(ConfigurationError) {
                _ = try Configuration.load(file: fifo)
                return nil
            } catch {
                return error
            }
        }
        #expect(
            configurationError
                == .some(ConfigurationError(file: fifo, path: nil, reason: "not a regular file (a FIFO)")))

        let passwordFIFO = directory.path + "/password"
        try makeFIFO(passwordFIFO)
        let configuration = try directory.write(
            #"{"communication": {"brokerUrl": "mqtt://h", "username": "u", "passwordFile": "\#(passwordFIFO)"}}"#,
            to: "password.json"
        ).path
        let passwordError = returnsPromptly(unblocking: passwordFIFO) { () -> ConfigurationError? in
            do throws(ConfigurationError) {
                _ = try Configuration.load(file: configuration)
                return nil
            } catch {
                return error
            }
        }
        #expect(
            passwordError
                == .some(
                    ConfigurationError(
                        file: configuration, path: JSONPath([.key("communication"), .key("passwordFile")]),
                        reason: "\(passwordFIFO): not a regular file (a FIFO)")))
    }

    @Test func passwordFilesAreLimitedTo64KiBAndTLSFilesMustBeRegularFiles() throws {
        let directory = try ScratchDirectory("coaty-config")
        defer { directory.remove() }
        let password = try directory.write(String(repeating: "x", count: (64 << 10) + 1), to: "password").path
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: password)
        #expect(
            throws: ConfigurationError(
                file: "m.json", path: JSONPath([.key("communication"), .key("passwordFile")]),
                reason: "\(password): 64.1 KiB is larger than the limit of 64 KiB")
        ) {
            try Configuration.parse(
                Array(#"{"communication": {"brokerUrl": "mqtt://h", "passwordFile": "\#(password)"}}"#.utf8),
                source: "m.json")
        }
        // libmosquitto opens them itself, and would block on a FIFO. A missing file is left to the connection.
        let fifo = directory.path + "/ca.crt"
        try makeFIFO(fifo)
        #expect(
            throws: ConfigurationError(
                file: "m.json", path: JSONPath([.key("communication"), .key("tls"), .key("caFile")]),
                reason: "\(fifo): not a regular file (a FIFO)")
        ) {
            try Configuration.parse(
                Array(#"{"communication": {"brokerUrl": "mqtts://h", "tls": {"caFile": "\#(fifo)"}}}"#.utf8),
                source: "m.json")
        }
        #expect(
            throws: ConfigurationError(
                file: "m.json", path: JSONPath([.key("communication"), .key("tls"), .key("keyFile")]),
                reason: "\(directory.path): not a regular file (a directory)")
        ) {
            try Configuration.parse(
                Array(
                    #"""
                    {"communication": {"brokerUrl": "mqtts://h", "tls": {"caFile": "/nonexistent/ca.crt", "certFile": "/nonexistent/c.crt", "keyFile": "\#(directory.path)"}}}
                    """#.utf8), source: "m.json")
        }
    }
}
