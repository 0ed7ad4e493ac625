import CoatyJSON
import CoatyModel
import Testing

@testable import CoatySharedObjects

/// The wire form of shared objects and what clients and hosts make of each event, without a broker.
@Suite struct SharedObjectWireTests {
    @Test func theObjectTravelsAsACoatyObjectAndReadsBack() throws {
        let state = SharedObjectState(
            objectId: "8d9b0b5e-3e2f-4c8e-9d1a-0b1c2d3e4f50", name: "setpoints",
            hostId: "5f0c1a52-3f4b-4d7e-9a51-2c0e8b7d9a10",
            version: 3, data: ["fanOn": 60], expiryMinutes: 30, isReadOnly: true,
            change: SharedChange(key: "fanOn", value: 60, version: 3))
        #expect(
            state.object.description
                == #"{"name":"setpoints","coreType":"CoatyObject","objectType":"coaty-edge.SharedObject","objectId":"8d9b0b5e-3e2f-4c8e-9d1a-0b1c2d3e4f50","externalId":"setpoints","parentObjectId":"5f0c1a52-3f4b-4d7e-9a51-2c0e8b7d9a10","version":3,"data":{"fanOn":60},"expiry":30,"readOnly":true,"change":{"key":"fanOn","value":60}}"#
        )
        // What another agent receives is validated as a Coaty object first, then read as a shared object.
        let received = try CoatyObject(validating: JSONValue(parsing: Array(state.object.description.utf8)))
        #expect(SharedObjectState(received) == state)

        var deletion = state
        deletion.change = SharedChange(key: "fanOn", value: nil, version: 3)
        deletion.isReadOnly = false
        deletion.expiryMinutes = nil
        #expect(deletion.object["change"] == ["key": "fanOn", "deleted": true])
        #expect(deletion.object["readOnly"] == nil)
        #expect(SharedObjectState(deletion.object) == deletion)
    }

    @Test(arguments: [
        #"{"version":1,"data":{}}"#,
        #"{"parentObjectId":"h","data":{}}"#,
        #"{"parentObjectId":"h","version":-1,"data":{}}"#,
        #"{"parentObjectId":"h","version":1.5,"data":{}}"#,
        #"{"parentObjectId":"h","version":1,"data":[]}"#,
        #"{"parentObjectId":"h","version":1,"data":{},"expiry":0}"#,
        #"{"parentObjectId":"h","version":1,"data":{},"change":{"key":""}}"#,
        #"{"parentObjectId":"h","version":1,"data":{},"change":{"key":"k"}}"#,
    ])
    func objectsThatAreNoSharedObjectAreIgnored(members: String) throws {
        var object = CoatyObject(coreType: .coatyObject, objectType: SharedObjectWire.objectType, name: "n")
        object.externalId = "n"
        for member in try JSONValue(parsing: Array(members.utf8)).objectValue ?? [:] {
            object[member.key] = member.value
        }
        #expect(SharedObjectState(object) == nil)
    }

    @Test func aNameMustBeTheExternalIdAndAValidName() {
        var object = SharedObjectState(name: "a", hostId: "h").object
        object.externalId = "b"
        #expect(SharedObjectState(object) == nil)
        #expect(SharedObjectState(SharedObjectState(name: "a/b", hostId: "h").object) == nil)
    }

    @Test func requestsRoundTrip() throws {
        for request in [
            SharedObjectRequest.set(key: "k", value: ["nested": [1, 2]], expectedVersion: 4),
            .set(key: "k", value: .null, expectedVersion: nil),
            .delete(key: "k", expectedVersion: 0), .delete(key: "k", expectedVersion: nil), .deleteObject,
        ] {
            #expect(try SharedObjectRequest(updating: request.update(of: "id", name: "n").object) == request)
        }
        let long = String(repeating: "k", count: SharedObjectRequest.maximumKeyLength + 1)
        #expect(throws: JSONShapeError.self) {
            try SharedObjectRequest(
                updating: SharedObjectRequest.delete(key: long, expectedVersion: nil).update(of: "id", name: "n").object
            )
        }
    }
}

@Suite struct SharedReplicaTests {
    func state(_ version: Int, _ data: JSONObject, id: String = "o1", host: String = "h1", change: SharedChange? = nil)
        -> SharedObjectState
    {
        SharedObjectState(objectId: id, name: "n", hostId: host, version: version, data: data, change: change)
    }

    @Test func theFirstObjectBindsThenChangesInSequenceAreChanges() {
        var replica = SharedReplica(name: "n")
        #expect(
            replica.absorb(state(2, ["a": 1])) == [
                .snapshot(SharedSnapshot(objectId: "o1", hostId: "h1", version: 2, data: ["a": 1]))
            ])
        let change = SharedChange(key: "a", value: 2, version: 3)
        #expect(replica.absorb(state(3, ["a": 2], change: change)) == [.changed(change)])
        // The same version again (an advertisement after the Complete), or an older one: nothing.
        #expect(replica.absorb(state(3, ["a": 2], change: change)).isEmpty)
        #expect(replica.absorb(state(2, ["a": 1])).isEmpty)
        // A gap (missed advertisements): the whole data.
        #expect(
            replica.absorb(state(6, ["a": 5, "b": 1], change: SharedChange(key: "b", value: 1, version: 6)))
                == [.snapshot(SharedSnapshot(objectId: "o1", hostId: "h1", version: 6, data: ["a": 5, "b": 1]))])
        #expect(replica.absorb(SharedObjectState(objectId: "o1", name: "other", hostId: "h1", version: 9)).isEmpty)
    }

    @Test func anotherObjectOfTheNameIsTakenOnlyOnceOursIsGone() {
        var replica = SharedReplica(name: "n")
        _ = replica.absorb(state(1, ["a": 1]))
        #expect(replica.absorb(state(0, [:], id: "o2", host: "h2")).isEmpty)
        #expect(replica.deadvertised(["unrelated"]).isEmpty)
        #expect(replica.deadvertised(["h1"]) == [.unavailable])
        #expect(replica.status == .unavailable)
        #expect(replica.deadvertised(["h1"]).isEmpty)
        #expect(
            replica.absorb(state(0, ["b": 2], id: "o2", host: "h2")) == [
                .snapshot(SharedSnapshot(objectId: "o2", hostId: "h2", version: 0, data: ["b": 2]))
            ])
        #expect(replica.status == .connected)
    }

    @Test func theSameObjectComingBackIsASnapshotEvenAtAnOlderVersion() {
        var replica = SharedReplica(name: "n")
        _ = replica.absorb(state(5, ["a": 5]))
        #expect(replica.unanswered(heardBefore: replica.timesHeard) == [.unavailable])
        #expect(
            replica.absorb(state(0, ["a": 0])) == [
                .snapshot(SharedSnapshot(objectId: "o1", hostId: "h1", version: 0, data: ["a": 0]))
            ])
    }

    @Test func aDeletedObjectStaysDeleted() {
        var replica = SharedReplica(name: "n")
        #expect(replica.deadvertised(["o1"]).isEmpty)
        _ = replica.absorb(state(1, [:]))
        #expect(replica.deadvertised(["x", "o1"]) == [.deleted])
        #expect(replica.absorb(state(2, [:])).isEmpty)
        #expect(replica.absorb(state(0, [:], id: "o2")).isEmpty)
        #expect(replica.unanswered(heardBefore: replica.timesHeard).isEmpty)
        #expect(!replica.accepts(messageTo: "o1"))
    }

    @Test func anUnansweredDiscoverLeavesAHostHeardSinceItWentOutConnected() {
        var replica = SharedReplica(name: "n")
        let beforeTheDiscover = replica.timesHeard
        _ = replica.absorb(state(0, ["a": 0]))
        #expect(replica.unanswered(heardBefore: beforeTheDiscover).isEmpty)
        #expect(replica.status == .connected)
        // An advertisement that changes nothing still shows the host is there.
        let beforeTheNext = replica.timesHeard
        #expect(replica.absorb(state(0, ["a": 0])).isEmpty)
        #expect(replica.unanswered(heardBefore: beforeTheNext).isEmpty)
        #expect(replica.unanswered(heardBefore: replica.timesHeard) == [.unavailable])
    }
}

@Suite struct HostedSharedObjectTests {
    func hosted(_ data: JSONObject = [:], readOnly: Bool = false, limits: SharedObjectLimits = SharedObjectLimits())
        -> HostedSharedObject
    {
        HostedSharedObject(
            state: SharedObjectState(objectId: "o", name: "n", hostId: "host", data: data, isReadOnly: readOnly),
            lastActivity: .zero,
            limits: limits)
    }

    @Test func acceptedChangesRaiseTheVersionAndMarkActivity() {
        var object = hosted(["a": 1])
        #expect(
            object.apply(.set(key: "b", value: 2, expectedVersion: 0), from: "x", at: .seconds(5))
                == .changed(SharedChange(key: "b", value: 2, version: 1)))
        #expect(
            object.apply(.delete(key: "a", expectedVersion: nil), from: "y", at: .seconds(9))
                == .changed(SharedChange(key: "a", value: nil, version: 2)))
        #expect(object.state.data == ["b": 2])
        #expect(object.lastActivity == .seconds(9))
        #expect(object.apply(.deleteObject, from: "z", at: .seconds(10)) == .deleted)
    }

    @Test func refusalsChangeNothing() {
        var object = hosted(["a": 1], limits: SharedObjectLimits(maximumValueBytes: 8, maximumDataBytes: 20))
        #expect(
            object.apply(.set(key: "a", value: 2, expectedVersion: 3), from: "x", at: .seconds(1))
                == .refused(.staleVersion, "stale version 3 of shared object n; the current version is 0"))
        #expect(
            object.apply(.set(key: "a", value: "123456789", expectedVersion: nil), from: "x", at: .seconds(1))
                == .refused(.tooLarge, "the value of a has 11 bytes; at most 8 are allowed"))
        #expect(
            object.apply(.set(key: "bbbbbbbbbb", value: "1234", expectedVersion: nil), from: "x", at: .seconds(1))
                == .refused(.tooLarge, "shared object n would have 27 bytes of data; at most 20 are allowed"))
        #expect(
            object.apply(.delete(key: "b", expectedVersion: nil), from: "x", at: .seconds(1))
                == .refused(.unknownKey, "shared object n has no key b"))
        #expect(object.state.version == 0)
        #expect(object.state.data == ["a": 1])
        #expect(object.lastActivity == .zero)

        var readOnly = hosted(readOnly: true)
        #expect(
            readOnly.apply(.deleteObject, from: "x", at: .zero)
                == .refused(.notAllowed, "shared object n is read-only: only its host may change it"))
        #expect(
            readOnly.apply(.set(key: "k", value: 1, expectedVersion: nil), from: "host", at: .zero)
                == .changed(SharedChange(key: "k", value: 1, version: 1)))
    }

    @Test func expiryCountsFromTheLastActivity() {
        var object = hosted()
        #expect(object.expiryDeadline == nil)
        object.state.expiryMinutes = 1.5
        object.lastActivity = .seconds(10)
        #expect(object.expiryDeadline == .seconds(100))
    }
}
