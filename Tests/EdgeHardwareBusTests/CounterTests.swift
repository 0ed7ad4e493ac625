import EdgeEmulation
import EdgeHardware
import Foundation
import Synchronization
import CoatyTestSupport
import Testing

/// Emulated GPIO chips of these suites, numbered apart from the other suites' chips in this process.
private enum Chips {
    private static let next = Atomic<Int>(200)

    static func new(lines: Int = 32, label: String = "coaty-emulated") throws -> EmulatedGPIOChip {
        try EmulatedHardware().addGPIOChip(next.add(1, ordering: .relaxed).newValue, lines: lines, label: label)
    }
}

/// Waits up to 30 s for `condition`.
private func eventually(_ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
}

@Suite(.emulatedHardware, .serialized, .timeLimit(.minutes(2))) struct PulseCounterTests {
    @Test func countsEveryPulseAt1kHzFromEdgeEvents() async throws {
        let chip = try Chips.new()
        let counter = try GPIOPulseCounter(chip: chip.path, line: 5)
        let counting = Task { try await counter.count() }
        defer { counting.cancel() }
        // Let the watching thread reach poll before the first edge.
        try await Task.sleep(for: .milliseconds(100))
        // The emulation's "kernel" is one thread that serves the emulated devices of every suite running meanwhile,
        // some of which hold it for seconds (a slow SHT3x): a FIFO deep enough for the whole train keeps those pauses
        // from counting against the counter, so this checks that every edge the kernel queued is counted. The kernel's
        // FIFO of 16 is what the counter benchmark (Tests/Tools/measure-counter.sh) uses, alone in its process.
        let train = try chip.startPulses(line: 5, rate: 1000, count: 3000, fifoDepth: 4096)
        let (delivered, dropped) = await Task.detached { train.finish() }.value
        try await eventually { counter.total == 3000 }
        #expect(dropped == 0, "the kernel's FIFO overflowed: the reader fell behind")
        #expect(delivered == 3000)
        #expect(counter.total == 3000)
        counting.cancel()
        try await counting.value
    }

    @Test func fallingAndBothEdgesAndActiveLow() async throws {
        let chip = try Chips.new()
        let both = try GPIOPulseCounter(chip: chip.path, line: 1, edge: .both)
        let falling = try GPIOPulseCounter(chip: chip.path, line: 2, activeLow: true, edge: .falling)
        let tasks = [Task { try await both.count() }, Task { try await falling.count() }]
        try await Task.sleep(for: .milliseconds(100))
        for _ in 0..<10 {
            try chip.drive(line: 1, true)
            try chip.drive(line: 1, false)
            try chip.drive(line: 2, true)
            try chip.drive(line: 2, false)
        }
        try await eventually { both.total == 20 && falling.total == 10 }
        #expect(both.total == 20)
        // Active low: the physical rising edge is the logical falling one.
        #expect(falling.total == 10)
        for task in tasks { task.cancel() }
    }

    @Test func bouncesWithinTheDebounceTimeDoNotCount() async throws {
        let chip = try Chips.new()
        let counter = try GPIOPulseCounter(chip: chip.path, line: 3, debounce: .milliseconds(5))
        let counting = Task { try await counter.count() }
        defer { counting.cancel() }
        try await Task.sleep(for: .milliseconds(100))
        // A contact that bounces: five rising edges within microseconds, three times, 50 ms apart.
        for _ in 0..<3 {
            try chip.drive(line: 3, true, false, true, false, true, false, true, false, true, false)
            try await Task.sleep(for: .milliseconds(50))
        }
        try await eventually { counter.total + counter.bounceCount == 15 }
        #expect(counter.total == 3)
        #expect(counter.bounceCount == 12)
    }

    @Test func aFailingLineEndsTheCountWithTheError() async throws {
        let chip = try Chips.new()
        let counter = try GPIOPulseCounter(chip: chip.path, line: 4)
        let counting = Task { try await counter.count() }
        try await Task.sleep(for: .milliseconds(100))
        try chip.failRequests(line: 4, errno: EIO)
        await #expect(throws: GPIOError.self) { try await counting.value }
    }
}

@Suite(.emulatedHardware, .serialized, .timeLimit(.minutes(1))) struct GPIOChipLabelTests {
    @Test func aChipIsFoundByItsLabelAndALineByItsName() throws {
        let chip = try Chips.new(lines: 54, label: "pinctrl-rp1-\(UUID().uuidString.prefix(8))")
        let label = try #require(GPIOChips.info(ofChipAt: chip.path)?.label)
        for offset in [17, 27] { try chip.name(line: offset, "GPIO\(offset)") }
        let byName = try GPIOChips.resolve(GPIOLineAddress(chip: label, lineName: "GPIO17"))
        #expect(byName.chip.name == "gpiochip\(chip.number)")
        #expect(byName.offset == 17)
        #expect(byName.description == "gpiochip\(chip.number) (\(label)) line 17 (GPIO17)")
        let byOffset = try GPIOChips.resolve(GPIOLineAddress(chip: label, offset: 27))
        #expect(byOffset.offset == 27 && byOffset.lineName == "GPIO27")
        // The line found is the one requested: an output on it drives the emulated line.
        let output = try GPIOOutput(chip: byName.chipPath, line: byName.offset, initiallyActive: true)
        #expect(try chip.state(line: 17).level == true)
        _ = output
    }

    @Test func whatIsNotFoundSaysWhichChipsArePresent() throws {
        let chip = try Chips.new(lines: 8, label: "listed-\(UUID().uuidString.prefix(8))")
        let label = try #require(GPIOChips.info(ofChipAt: chip.path)?.label)
        #expect(
            GPIOChips.present().contains {
                $0.name == "gpiochip\(chip.number)" && $0.label == label && $0.lineCount == 8
            })
        do {
            _ = try GPIOChips.resolve(GPIOLineAddress(chip: "pinctrl-bcm2711", offset: 17))
            Issue.record("an absent label resolved")
        } catch {
            #expect(
                error.description.hasPrefix(
                    "no GPIO chip: no GPIO chip named or labelled \"pinctrl-bcm2711\"; chips present: "))
            #expect(error.description.contains("gpiochip\(chip.number) (\(label), 8 lines)"))
        }
        #expect(throws: GPIOError.lineUnavailable("gpiochip\(chip.number) (\(label)) has no line named \"GPIO99\"")) {
            try GPIOChips.resolve(GPIOLineAddress(chip: label, lineName: "GPIO99"))
        }
        #expect(
            throws: GPIOError.lineUnavailable("gpiochip\(chip.number) (\(label)) has no line 8; its lines are 0...7")
        ) {
            try GPIOChips.resolve(GPIOLineAddress(chip: label, offset: 8))
        }
    }
}

@Suite(.emulatedHardware, .serialized, .timeLimit(.minutes(1))) struct PulseOutputTests {
    @Test func aPulseDrivesTheEmulatedLineOnForItsTimeThenOff() async throws {
        let chip = try Chips.new()
        let clock = ContinuousClock()
        let line = try GPIOOutput(chip: chip.path, line: 6)
        var output = try OutputDriver(
            line: line,
            logic: OutputLogic(
                control: .pulse(PulseSettings(duration: .milliseconds(300))), initial: false, safeState: .off),
            at: clock.now)
        let start = clock.now
        #expect(output.receive(true, at: start) == .switched(on: true))
        #expect(try chip.state(line: 6).level == true)
        // A second command restarts it: the line stays on until 300 ms after that.
        try await clock.sleep(until: start + .milliseconds(200))
        #expect(output.receive("on", at: clock.now) == .unchanged)
        let deadline = try #require(output.pulseDeadline)
        #expect(deadline >= start + .milliseconds(500))
        #expect(output.settle(at: start + .milliseconds(300)) == .unchanged)
        #expect(try chip.state(line: 6).level == true)
        try await clock.sleep(until: deadline)
        #expect(output.settle(at: clock.now) == .switched(on: false))
        #expect(try chip.state(line: 6).level == false)
        // The safe state ends a pulse at once.
        _ = output.receive(true, at: clock.now)
        #expect(try chip.state(line: 6).level == true)
        #expect(output.enterSafeState(at: clock.now) == .switched(on: false))
        #expect(try chip.state(line: 6).level == false)
    }
}
