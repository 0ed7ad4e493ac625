import Testing

@testable import CoatyMQTT

/// The record of QoS 0 publications not yet written, as `MosquittoTransport` keeps it without holding its lock
/// across calls into libmosquitto: a write may be reported before its publication is noted.
@Suite struct PendingWritesTests {
    func message(_ number: Int) -> MQTTMessage { MQTTMessage(topic: "v\(number)", payload: []) }

    @Test func aWriteReportedBeforeItsNoteIsNotToldAsUnwritten() {
        var pending = PendingWrites()
        pending.written(7)
        pending.append(7, message(7))
        pending.append(8, message(8))
        #expect(pending.removeAll() == [message(8)])
        #expect(pending.removeAll().isEmpty)
    }

    /// The network thread writes in the order libmosquitto queued; the unwritten are told in the order published,
    /// also across a wrap of the message ids.
    @Test func theUnwrittenAreToldInTheOrderPublished() {
        var pending = PendingWrites()
        for (id, number) in [(65534, 1), (65535, 2), (1, 3), (2, 4)] { pending.append(Int32(id), message(number)) }
        pending.written(65535)
        #expect(pending.removeAll() == [message(1), message(3), message(4)])
    }
}

extension PendingWritesTests {
    /// Two publishers on two threads can note theirs in the other order than libmosquitto queued and writes them.
    @Test func aWriteOfALaterNoteLeavesTheEarlierPending() {
        var pending = PendingWrites()
        for id in 1...3 { pending.append(Int32(id), message(id)) }
        pending.written(2)
        pending.written(1)
        #expect(pending.removeAll() == [message(3)])
    }

    /// The steady state of a connection: each publication written soon after its note, thousands of them.
    @Test func writtenPublicationsAreNotToldLater() {
        var pending = PendingWrites()
        for id in 1...10_000 {
            pending.append(Int32(id), message(id))
            if id % 3 == 0 {
                for written in (id - 2)...id { pending.written(Int32(written)) }
            }
        }
        #expect(pending.removeAll() == [message(10_000)])
    }

    /// A note that stays pending (its publisher noted it after the connection ended) while thousands are written
    /// after it: the gaps they leave are dropped, and it is still told.
    @Test func aNoteThatStaysPendingHoldsOnlyItsOwnRoom() {
        var pending = PendingWrites()
        pending.append(1, message(1))
        for id in 2...10_000 {
            pending.append(Int32(id), message(id))
            pending.written(Int32(id))
            #expect(pending.heldNotes <= 64, "after \(id)")
        }
        #expect(pending.removeAll() == [message(1)])
        #expect(pending.heldNotes == 0)
    }

    /// Writes reported out of the order noted, across gaps: each is taken once, and the rest are told in order.
    @Test func writesOutOfOrderLeaveTheOthersInOrder() {
        var pending = PendingWrites()
        for id in 1...100 { pending.append(Int32(id), message(id)) }
        for id in stride(from: 2, through: 100, by: 2) { pending.written(Int32(id)) }
        pending.written(1)
        // A report of an id written already, as if repeated: not a pending one, so it waits as an early write.
        pending.written(2)
        #expect(pending.removeAll() == stride(from: 3, through: 99, by: 2).map { message($0) })
    }

    /// A connection's end tells its unwritten ones and starts the next connection's record afresh.
    @Test func theNextConnectionStartsAfresh() {
        var pending = PendingWrites()
        pending.append(1, message(1))
        pending.append(2, message(2))
        pending.written(1)
        #expect(pending.removeAll() == [message(2)])
        pending.append(3, message(3))
        pending.written(3)
        pending.append(4, message(4))
        pending.append(5, message(5))
        pending.written(5)
        #expect(pending.removeAll() == [message(4)])
        #expect(pending.heldNotes == 0)
    }
}
