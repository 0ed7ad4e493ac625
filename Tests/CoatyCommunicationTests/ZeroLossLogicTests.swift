import Testing

@testable import CoatyCommunication

/// The frames, the source's buffer and the actor's sequence of zero-loss delivery, apart from any connection.
@Suite struct ZeroLossLogicTests {
    let now = ContinuousClock.now

    @Test func framesRoundTripAndMalformedOnesAreRefused() {
        let frames: [ZeroLossFrame] = [
            .value(epoch: 42, sequence: 7, oldest: 3, payload: Array("21.5\n{}".utf8)),
            .value(epoch: 1, sequence: 0, oldest: 0, payload: []),
            .sync(epoch: 42),
            .acknowledgement(receiver: "agent-1", epoch: 42, next: 8, isResume: true),
            .acknowledgement(receiver: "agent-1", epoch: nil, next: 0, isResume: false),
        ]
        for frame in frames { #expect(ZeroLossFrame(frame.bytes) == frame) }
        #expect(String(decoding: ZeroLossFrame.sync(epoch: 9).bytes, as: UTF8.self) == "S 9\n")
        for bad in ["21.5", "V 1 2\n", "V 1 x 0\n", "S 1\nextra", "A a - 1 X\n", "A a b 1 R\n", "Q 1\n", "V -1 0 0\n"] {
            #expect(ZeroLossFrame(Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(
            ZeroLossFrame.parseTopic("coaty-edge/zl/abc/v").map { "\($0.sourceId) \($0.isValueTopic)" } == "abc true")
        #expect(
            ZeroLossFrame.parseTopic("coaty-edge/zl/abc/a").map { "\($0.sourceId) \($0.isValueTopic)" } == "abc false")
        #expect(ZeroLossFrame.parseTopic("coaty/3/-/IOV/abc") == nil)
    }

    func sequences(_ outbox: inout ZeroLossOutbox) -> [UInt64] {
        var sent: [UInt64] = []
        while case .value(_, let sequence, _, _)? = outbox.nextFrame() { sent.append(sequence) }
        return sent
    }

    /// Nothing is kept until an actor agent answers; then values go out, are retired when acknowledged, held after
    /// a connection loss and sent again from where the actor stands when it resumes.
    @Test func theSourceHoldsRetiresAndResumes() {
        var outbox = ZeroLossOutbox(options: ZeroLossOptions(), epoch: 5)
        let result37 = outbox.append([1])
        #expect(result37 == 0 && outbox.count == 0)
        outbox.acknowledge(receiver: "a", epoch: nil, next: 0, isResume: true, at: now)
        for byte in UInt8(0)..<4 { _ = outbox.append([byte]) }
        #expect(sequences(&outbox) == [0, 1, 2, 3])
        outbox.acknowledge(receiver: "a", epoch: 5, next: 2, isResume: false, at: now)
        #expect(outbox.count == 2)
        outbox.connectionLost()
        _ = outbox.append([4])
        #expect(sequences(&outbox).isEmpty && outbox.isHolding)
        outbox.acknowledge(receiver: "a", epoch: 5, next: 3, isResume: true, at: now)
        #expect(sequences(&outbox) == [3, 4])
        // A second actor agent that knows nothing of this run starts with the next value; the first one's
        // acknowledgement no longer retires alone.
        outbox.acknowledge(receiver: "b", epoch: 99, next: 0, isResume: true, at: now)
        _ = outbox.append([5])
        outbox.acknowledge(receiver: "a", epoch: 5, next: 6, isResume: false, at: now)
        #expect(sequences(&outbox) == [5])
        #expect(outbox.count == 1)
        outbox.acknowledge(receiver: "b", epoch: 5, next: 6, isResume: false, at: now)
        #expect(outbox.count == 0)
    }

    @Test func aFullBufferDropsByItsPolicyAndSilentActorAgentsAreForgotten() {
        var oldest = ZeroLossOutbox(options: ZeroLossOptions(maximumValues: 3, maximumBytes: 1 << 20), epoch: 1)
        oldest.acknowledge(receiver: "a", epoch: nil, next: 0, isResume: false, at: now)
        oldest.connectionLost()
        var dropped = 0
        for byte in UInt8(0)..<5 { dropped += oldest.append([byte]) }
        #expect(dropped == 2 && oldest.count == 3)
        oldest.acknowledge(receiver: "a", epoch: 1, next: 0, isResume: true, at: now)
        let first = oldest.nextFrame()
        #expect(first == .value(epoch: 1, sequence: 2, oldest: 2, payload: [2]))
        // An actor agent heard since the deadline stays; one silent since, with values it has not acknowledged, goes,
        // and with the last one the buffer.
        var forgotten = oldest.forgetReceivers(silentSince: now - .seconds(1))
        #expect(forgotten.receivers == 0 && forgotten.values == 0)
        forgotten = oldest.forgetReceivers(silentSince: now + .seconds(1))
        #expect(forgotten.receivers == 1 && forgotten.values == 3 && oldest.count == 0 && !oldest.hasReceivers)

        var newest = ZeroLossOutbox(
            options: ZeroLossOptions(maximumValues: 10, maximumBytes: 4, dropPolicy: .newest), epoch: 1)
        newest.acknowledge(receiver: "a", epoch: nil, next: 0, isResume: false, at: now)
        let drops = [newest.append([1, 2, 3]), newest.append([4, 5]), newest.append([6])]
        #expect(drops == [0, 1, 0])
        #expect(newest.count == 2 && newest.bytes == 4)
        for number in 0..<100 {
            newest.acknowledge(receiver: "made-up \(number)", epoch: nil, next: 0, isResume: false, at: now)
        }
        #expect(newest.receiverCount == ZeroLossOutbox.maximumReceivers)
    }

    /// Each sequence number once and in order; a gap asks for a resume once, and values the source dropped are
    /// skipped; a new epoch starts over.
    @Test func theActorDeliversInOrderOnce() {
        var inbox = ZeroLossInbox()
        var outcomes: [ZeroLossInbox.Outcome] = []
        for (epoch, sequence, oldest) in [
            (3, 10, 10), (3, 10, 10), (3, 12, 10), (3, 13, 10), (3, 11, 10), (3, 20, 18), (3, 18, 18),
        ] as [(UInt64, UInt64, UInt64)] {
            outcomes.append(inbox.receive(epoch: epoch, sequence: sequence, oldest: oldest, at: now))
        }
        #expect(
            outcomes == [
                .deliver, .duplicate, .gap(askResume: true), .gap(askResume: false), .deliver, .gap(askResume: true),
                .deliver,
            ])
        #expect(inbox.next == 19)
        let restarted = inbox.receive(epoch: 4, sequence: 0, oldest: 0, at: now)
        #expect(restarted == .deliver && inbox.next == 1)
    }

    /// A value an actor has no room for is held back, not counted as received; the frames behind it are gaps that
    /// wait for the resume (no resume per frame); sent again with room, it and the rest are delivered in order.
    @Test func aValueWithoutRoomIsHeldBackUntilSentAgain() {
        var inbox = ZeroLossInbox()
        var outcomes: [ZeroLossInbox.Outcome] = []
        for (sequence, hasRoom) in [(0, true), (1, false), (2, true), (3, true), (1, false)] as [(UInt64, Bool)] {
            outcomes.append(inbox.receive(epoch: 7, sequence: sequence, oldest: 0, hasRoom: hasRoom, at: now))
        }
        #expect(outcomes == [.deliver, .heldBack, .gap(askResume: false), .gap(askResume: false), .heldBack])
        #expect(inbox.next == 1 && inbox.isHeldBack && inbox.receivedSinceAcknowledgement == 1)
        // The manager's tick asks for the resume once there is room, and clears the mark.
        inbox.isHeldBack = false
        for sequence: UInt64 in 1...3 {
            outcomes.append(inbox.receive(epoch: 7, sequence: sequence, oldest: 0, hasRoom: true, at: now))
        }
        #expect(outcomes.suffix(3) == [.deliver, .deliver, .deliver])
        #expect(inbox.next == 4)
    }

    /// Plain copies are duplicates while frames come, and take over after 30 s without any frame.
    @Test func plainCopiesTakeOverWhenFramesStop() {
        var inbox = ZeroLossInbox()
        var copies = [inbox.isPlainCopy(at: now)]
        _ = inbox.receive(epoch: 1, sequence: 0, oldest: 0, at: now)
        copies += [inbox.isPlainCopy(at: now + .seconds(1)), inbox.isPlainCopy(at: now + .seconds(20))]
        _ = inbox.receive(epoch: 1, sequence: 1, oldest: 0, at: now + .seconds(25))
        for seconds in [40, 69, 71] { copies.append(inbox.isPlainCopy(at: now + .seconds(seconds))) }
        #expect(copies == [false, true, true, true, true, false])
        #expect(inbox.epoch == nil)
    }

    /// An outage longer than the take-over time lets nothing through: the copies that come first after it (sent
    /// before the source resumes its frames) are still duplicates, and so are those after a sync or a reconnect;
    /// copies that keep coming without frames for 30 s still take over. Before, the first copy after a 2-minute
    /// outage took over at once, and the frames of the backlog then arrived out of order and again.
    @Test func anOutageDoesNotLetPlainCopiesTakeOver() {
        var inbox = ZeroLossInbox()
        _ = inbox.receive(epoch: 1, sequence: 0, oldest: 0, at: now)
        var copies = [inbox.isPlainCopy(at: now)]
        // 2 minutes of silence (the broker is away), then copies without frames (the source holds them).
        copies += [inbox.isPlainCopy(at: now + .seconds(120)), inbox.isPlainCopy(at: now + .seconds(121))]
        inbox.framesArrive(at: now + .seconds(122))  // a sync
        copies += [inbox.isPlainCopy(at: now + .seconds(140)), inbox.isPlainCopy(at: now + .seconds(151))]
        inbox.reconnected()
        copies += [inbox.isPlainCopy(at: now + .seconds(160)), inbox.isPlainCopy(at: now + .seconds(185))]
        copies.append(inbox.isPlainCopy(at: now + .seconds(191)))
        #expect(copies == [true, true, true, true, true, true, true, false])
    }
}
