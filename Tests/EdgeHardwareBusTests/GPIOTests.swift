import EdgeEmulation
import EdgeHardware
import Synchronization
import CoatyTestSupport
import Testing

@Suite struct DebouncerTests {
    let start = ContinuousClock.now

    @Test func bounceShorterThanTheWindowIsNoChange() {
        var debouncer = Debouncer(window: .milliseconds(20), level: false)
        debouncer.observe(true, at: start)
        #expect(debouncer.settle(at: start + .milliseconds(5)) == nil)
        debouncer.observe(false, at: start + .milliseconds(6))
        #expect(debouncer.deadline == nil)
        #expect(debouncer.settle(at: start + .milliseconds(100)) == nil)
        #expect(debouncer.level == false)
    }

    @Test func stableChangeCountsOnceWhenTheWindowHasPassed() {
        var debouncer = Debouncer(window: .milliseconds(20), level: false)
        debouncer.observe(true, at: start)
        debouncer.observe(false, at: start + .milliseconds(3))
        debouncer.observe(true, at: start + .milliseconds(4))
        #expect(debouncer.deadline == start + .milliseconds(24))
        #expect(debouncer.settle(at: start + .milliseconds(23)) == nil)
        #expect(debouncer.settle(at: start + .milliseconds(24)) == true)
        #expect(debouncer.settle(at: start + .milliseconds(500)) == nil)
        #expect(debouncer.level == true)
    }

    @Test func repeatedEdgeOfTheSameLevelKeepsItsStart() {
        var debouncer = Debouncer(window: .milliseconds(20), level: false)
        debouncer.observe(true, at: start)
        debouncer.observe(true, at: start + .milliseconds(10))
        #expect(debouncer.settle(at: start + .milliseconds(20)) == true)
    }

    @Test func zeroWindowPassesEveryEdge() {
        var debouncer = Debouncer(window: .zero, level: false)
        debouncer.observe(true, at: start)
        #expect(debouncer.settle(at: start) == true)
        debouncer.observe(false, at: start)
        #expect(debouncer.settle(at: start) == false)
    }
}

@Suite(.emulatedHardware, .serialized, .timeLimit(.minutes(1))) struct GPIOTests {
    private static let nextChip = Atomic<Int>(0)

    private func newChip(lines: Int = 8) throws -> EmulatedGPIOChip {
        try EmulatedHardware().addGPIOChip(Self.nextChip.add(1, ordering: .relaxed).newValue, lines: lines)
    }

    @Test func outputStartsAtItsInitialStateAndFollowsSet() throws {
        let chip = try newChip()
        let output = try GPIOOutput(chip: chip.path, line: 3, initiallyActive: true)
        #expect(output.label == "GPIO output line 3 of \(chip.path)")
        var state = try chip.state(line: 3)
        #expect(state.isRequested && state.isOutput && !state.isActiveLow)
        #expect(state.consumer == "coaty-edge")
        #expect(state.level == true)
        try output.set(active: false)
        #expect(try chip.state(line: 3).level == false)
        #expect(try output.isActive() == false)
        try output.set(active: true)
        state = try chip.state(line: 3)
        #expect(state.level == true)
    }

    @Test func activeLowOutputDrivesLowWhenActive() throws {
        let chip = try newChip()
        let output = try GPIOOutput(chip: chip.path, line: 0, activeLow: true, initiallyActive: false)
        #expect(try chip.state(line: 0).level == true)
        #expect(try chip.state(line: 0).isActiveLow)
        try output.set(active: true)
        #expect(try chip.state(line: 0).level == false)
        #expect(try output.isActive() == true)
    }

    @Test func failingOutputReportsTheError() throws {
        let chip = try newChip()
        let output = try GPIOOutput(chip: chip.path, line: 6)
        try chip.failRequests(line: 6, errno: 5)
        #expect(throws: GPIOError.io(errno: 5, "cannot set line 6 of \(chip.path): Input/output error")) {
            try output.set(active: true)
        }
        try chip.failRequests(line: 6, errno: 0)
        try output.set(active: true)
        #expect(try chip.state(line: 6).level == true)
    }

    @Test func releasedWhenTheOutputGoesAway() throws {
        let chip = try newChip()
        var output: GPIOOutput? = try GPIOOutput(chip: chip.path, line: 1)
        #expect(output != nil)
        output = nil
        #expect(try waitUntil { try !chip.state(line: 1).isRequested })
    }

    @Test func missingChipIsNoChip() {
        #expect {
            try GPIOOutput(chip: "/dev/gpiochip250", line: 0)
        } throws: { error in
            guard case GPIOError.noChip(let detail) = error else { return false }
            return detail.contains("/dev/gpiochip250")
        }
    }

    @Test func lineOutsideTheChipIsUnavailable() throws {
        let chip = try newChip(lines: 4)
        #expect(throws: GPIOError.lineUnavailable("\(chip.path) has no line 4; its lines are 0...3")) {
            try GPIOInput(chip: chip.path, line: 4)
        }
    }

    @Test func lineInUseIsUnavailable() throws {
        let chip = try newChip()
        let first = try GPIOOutput(chip: chip.path, line: 2)
        #expect(throws: GPIOError.lineUnavailable("line 2 of \(chip.path) is in use by \"coaty-edge\"")) {
            try GPIOInput(chip: chip.path, line: 2)
        }
        withExtendedLifetime(first) {}
    }

    @Test func inputReadsTheLogicalLevelAndRequestsTheBias() throws {
        let chip = try newChip()
        let input = try GPIOInput(chip: chip.path, line: 5, bias: .pullUp)
        let inverted = try GPIOInput(chip: chip.path, line: 6, activeLow: true, bias: .pullDown)
        #expect(try chip.state(line: 5).bias == .pullUp)
        #expect(try chip.state(line: 6).bias == .pullDown)
        #expect(try input.read() == false)
        #expect(try inverted.read() == true)
        try chip.drive(line: 5, true)
        try chip.drive(line: 6, true)
        #expect(try input.read() == true)
        #expect(try inverted.read() == false)
    }

    @Test func inputReportsEveryEdgeWithoutDebouncing() async throws {
        let chip = try newChip()
        let input = try GPIOInput(chip: chip.path, line: 4, activeLow: true)
        var changes = input.changes().makeAsyncIterator()
        // Active low: the line rests low, which reads active.
        try chip.drive(line: 4, true)
        #expect(try await changes.next() == false)
        try chip.drive(line: 4, false)
        #expect(try await changes.next() == true)
        try chip.drive(line: 4, true, false, true)
        #expect(try await changes.next() == false)
        #expect(try await changes.next() == true)
        #expect(try await changes.next() == false)
    }

    @Test func bounceWithinTheWindowIsNoChangeAndAStableChangeIsOne() async throws {
        let chip = try newChip()
        let input = try GPIOInput(chip: chip.path, line: 7, debounceWindow: .milliseconds(50))
        let stream = input.changes()
        try chip.drive(line: 7, true, false)  // a bounce back to the old level
        try chip.drive(line: 7, true, false, true)  // a bounce that ends in a change
        var seen: [Bool] = []
        var failure: (any Error)?
        do {
            for try await level in stream {
                seen.append(level)
                // Everything driven so far is behind us now; a failure ends the stream after it.
                try chip.failRequests(line: 7, errno: 5)
            }
        } catch {
            failure = error
        }
        #expect(seen == [true])
        #expect(
            failure as? GPIOError
                == .io(errno: 5, "cannot read edge events of line 7 of \(chip.path): Input/output error"))
    }

    @Test func cancellingTheConsumerEndsTheWatchAndReleasesTheLine() async throws {
        let chip = try newChip()
        var input: GPIOInput? = try GPIOInput(chip: chip.path, line: 2)
        let stream = try #require(input).changes()
        let consumer = Task {
            var seen: [Bool] = []
            for try await level in stream {
                seen.append(level)
                withUnsafeCurrentTask { $0?.cancel() }
            }
            return seen
        }
        try chip.drive(line: 2, true)
        // Cancelled after the first change, the loop ends without an error.
        #expect(try await consumer.value == [true])
        input = nil
        #expect(try waitUntil { try !chip.state(line: 2).isRequested })
    }

    @Test func oneWatcherAtATime() async throws {
        let chip = try newChip()
        let input = try GPIOInput(chip: chip.path, line: 1)
        let first = input.changes()
        var second = input.changes().makeAsyncIterator()
        await #expect(throws: GPIOError.lineUnavailable("\(input.label) is already being watched")) {
            try await second.next()
        }
        withExtendedLifetime(first) {}
    }
}

/// Waits for a state the emulation reaches on its own thread (a closed request is noticed asynchronously).
/// Bounded: gives up after 5 s, which fails the expectation.
private func waitUntil(_ condition: () throws -> Bool) throws -> Bool {
    for _ in 0..<5000 {
        if try condition() { return true }
        usleepMilliseconds(1)
    }
    return false
}

#if canImport(Glibc)
    import Glibc
#endif

private func usleepMilliseconds(_ milliseconds: UInt32) {
    usleep(milliseconds * 1000)
}
