import Testing

@testable import CoatyCommunication

/// The inbound lookup of IO routes, which hashes a topic only when a route of its length slot is in the table.
@Suite struct IoRouteTableTests {
    typealias Table = CommunicationManager.IoRouteTable
    typealias Delivery = CommunicationManager.IoRouteDelivery

    /// A delivery told apart from others by its number of receivers.
    func delivery(_ receivers: Int) -> Delivery {
        Delivery(
            receivers: Array(
                repeating: .init(isRaw: true, deliver: { _ in }, reject: nil, hasRoom: nil), count: receivers))
    }

    @Test func findsEachRouteAndNoOtherTopic() {
        var table = Table()
        let route = "coaty/2/-/IOV/s1"
        #expect(table.delivery(on: route) == nil)
        table.setDelivery(delivery(1), on: route)
        table.setDelivery(delivery(2), on: "coaty/2/-/IOV/s2")
        #expect(table.delivery(on: route)?.receivers?.count == 1)
        #expect(table.delivery(on: "coaty/2/-/IOV/s2")?.receivers?.count == 2)
        // Same length, other topic; and topics of other lengths (an event's).
        #expect(table.delivery(on: "coaty/2/-/IOV/s3") == nil)
        #expect(table.delivery(on: "coaty/2/-/CHN:ping/a1b2") == nil)
        #expect(table.delivery(on: "") == nil)
    }

    /// Routes whose lengths share a slot (lengths 256 apart) and a route replaced, then removed: each removal takes
    /// away exactly its own route, so the others of its slot are still found.
    @Test func removingARouteKeepsTheOthersOfItsLengthSlot() {
        var table = Table()
        let short = "r/" + String(repeating: "a", count: 10)
        let long = "r/" + String(repeating: "b", count: 10 + 256)
        let sameLength = "r/" + String(repeating: "c", count: 10)
        table.setDelivery(delivery(1), on: short)
        table.setDelivery(delivery(2), on: long)
        table.setDelivery(delivery(3), on: sameLength)
        table.setDelivery(delivery(4), on: short)
        #expect(table.delivery(on: short)?.receivers?.count == 4)

        table.setDelivery(nil, on: short)
        #expect(table.delivery(on: short) == nil)
        #expect(table.delivery(on: long)?.receivers?.count == 2)
        #expect(table.delivery(on: sameLength)?.receivers?.count == 3)

        // Removing a route that is not there changes nothing.
        table.setDelivery(nil, on: short)
        #expect(table.delivery(on: sameLength)?.receivers?.count == 3)
        table.setDelivery(nil, on: sameLength)
        #expect(table.delivery(on: long)?.receivers?.count == 2)
        table.setDelivery(nil, on: long)
        #expect(table.delivery(on: long) == nil)

        // And a route added again is found again.
        table.setDelivery(delivery(5), on: sameLength)
        #expect(table.delivery(on: sameLength)?.receivers?.count == 5)
    }
}
