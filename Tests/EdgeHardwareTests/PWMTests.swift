import CoatyJSON
import Foundation
import Testing

@testable import EdgeHardware

@Suite(.timeLimit(.minutes(1))) struct SysfsPWMChannelTests {
    @Test func startExportsThenWritesPeriodDutyAndEnableInTheKernelsOrder() throws {
        let sysfs = try PWMSysfsTree(channels: 2)
        defer { sysfs.finish() }
        let channel = SysfsPWMChannel(sysfsRoot: sysfs.tree.root, chip: "pwmchip0", channel: 1)
        try channel.start(frequency: 25_000, inverted: false, duty: 0.3)
        try waitForWrites(sysfs, 4)
        #expect(sysfs.writes.map(\.file) == ["export", "pwm1/period", "pwm1/duty_cycle", "pwm1/enable"])
        #expect(sysfs.writes.first?.text == "1")
        #expect(sysfs.contents("pwm1/period") == "40000")
        #expect(sysfs.contents("pwm1/duty_cycle") == "12000")
        #expect(sysfs.contents("pwm1/enable") == "1")
        #expect(sysfs.contents("pwm1/polarity") == "normal")

        // Afterwards only the duty cycle is written.
        try channel.set(duty: 0.75)
        try waitForWrites(sysfs, 5)
        #expect(sysfs.writes.last?.file == "pwm1/duty_cycle")
        #expect(sysfs.contents("pwm1/duty_cycle") == "30000")
    }

    @Test func invertingARunningChannelStopsItFirstAndShortensTheDutyBeforeThePeriod() throws {
        // Exported and running at 1 kHz, 70 %: the new period (40 µs) is shorter than the old duty cycle (700 µs).
        let sysfs = try PWMSysfsTree(
            channels: 1,
            exported: [0: ["period": "1000000", "duty_cycle": "700000", "polarity": "normal", "enable": "1"]])
        defer { sysfs.finish() }
        let channel = SysfsPWMChannel(sysfsRoot: sysfs.tree.root, chip: "pwmchip0", channel: 0)
        try channel.start(frequency: 25_000, inverted: true, duty: 0.5)
        try waitForWrites(sysfs, 6)
        #expect(
            sysfs.writes.map(\.file) == [
                "pwm0/enable", "pwm0/duty_cycle", "pwm0/period", "pwm0/polarity", "pwm0/duty_cycle", "pwm0/enable",
            ])
        #expect(sysfs.writes.contains { $0.file == "export" } == false)
        #expect(sysfs.contents("pwm0/polarity") == "inversed")
        #expect(sysfs.contents("pwm0/period") == "40000")
        #expect(sysfs.contents("pwm0/duty_cycle") == "20000")
        #expect(sysfs.contents("pwm0/enable") == "1")
    }

    @Test func aChannelTheChipDoesNotHaveIsAClearError() throws {
        let sysfs = try PWMSysfsTree(channels: 2)
        defer { sysfs.finish() }
        let channel = SysfsPWMChannel(sysfsRoot: sysfs.tree.root, chip: "pwmchip0", channel: 2)
        #expect(throws: PWMError(.noChannel, "\(sysfs.chipDirectory) has 2 channels, 0...1, not 2")) {
            try channel.start(frequency: 25_000, inverted: false, duty: 0)
        }
        let missing = SysfsPWMChannel(sysfsRoot: sysfs.tree.root, chip: "pwmchip3", channel: 0)
        #expect(throws: PWMError(.noChannel, "\(sysfs.tree.root)/class/pwm/pwmchip3/npwm does not exist")) {
            try missing.start(frequency: 25_000, inverted: false, duty: 0)
        }
        #expect(sysfs.writes.isEmpty)
    }

    private func waitForWrites(_ sysfs: PWMSysfsTree, _ count: Int) throws {
        let deadline = Date().addingTimeInterval(30)
        while sysfs.writes.count < count, Date() < deadline { usleep(5_000) }
        usleep(50_000)  // and no more than that
        #expect(sysfs.writes.count == count, "\(sysfs.writes)")
    }
}

@Suite struct FanCurveTests {
    @Test func interpolatesLinearlyAndHoldsBeyondTheEnds() throws {
        let curve = try FanCurve(json: [[40, 0], [60, 50], [80, 100]])
        #expect(curve.duty(at: 20) == 0)
        #expect(curve.duty(at: 40) == 0)
        #expect(curve.duty(at: 50) == 25)
        #expect(curve.duty(at: 70) == 75)
        #expect(curve.duty(at: 95) == 100)
        let objects = try FanCurve(json: [["input": 40, "duty": 0], ["input": 60, "duty": 50]])
        #expect(objects.duty(at: 55) == 37.5)
    }

    @Test(arguments: [
        ("[]", "needs at least one point"),
        ("[[40, 0], [40, 50]]", "point 1: input 40 must be above the previous point's, 40"),
        ("[[40, 0], [60, 120]]", "point 1: duty 120 is outside 0...100"),
        ("[[40, 0], [60]]", "point 1: expected a point like [40, 0] or {\"input\": 40, \"duty\": 0}"),
        ("\"fast\"", "expected an array of points like [40, 0] or {\"input\": 40, \"duty\": 0}, found string"),
    ])
    func invalidPointsSayWhy(text: String, reason: String) throws {
        let json = try JSONValue(parsing: text)
        #expect(throws: CurveError.self) { try FanCurve(json: json) }
        do {
            _ = try FanCurve(json: json)
        } catch {
            #expect(error.description == reason)
        }
    }

    @Test func theHysteresisBandHoldsTheDutyUntilTheInputFallsThroughIt() throws {
        var follower = CurveFollower(curve: try FanCurve(json: [[40, 0], [60, 50], [80, 100]]), band: 3)
        #expect(follower.duty(for: 70) == 75)
        // Wobbling down by less than the band: the duty holds.
        #expect(follower.duty(for: 68) == 75)
        #expect(follower.duty(for: 67.5) == 75)
        #expect(follower.duty(for: 69.9) == 75)
        // Falling further: the duty follows, 3 degrees behind.
        #expect(follower.duty(for: 66) == 72.5)
        #expect(follower.duty(for: 57) == 50)
        // Rising again follows at once.
        #expect(follower.duty(for: 60.5) == 51.25)
        // New points apply to the input held.
        #expect(follower.retune(try FanCurve(json: [[50, 0], [70, 100]])) == 52.5)
    }
}

@Suite(.timeLimit(.minutes(1))) struct PWMOutputDriverTests {
    let start = ContinuousClock.now
    typealias Driver = PWMOutputDriver<ContinuousClock.Instant>

    /// A channel exported already, stopped, at 25 kHz (40000 ns).
    private func makeTree() throws -> PWMSysfsTree {
        try PWMSysfsTree(
            channels: 1, exported: [0: ["period": "40000", "duty_cycle": "0", "polarity": "normal", "enable": "0"]])
    }

    private func driver(_ sysfs: PWMSysfsTree, _ settings: PWMSettings, _ control: PWMControl = .direct) throws
        -> Driver
    {
        try Driver(
            channel: SysfsPWMChannel(sysfsRoot: sysfs.tree.root, chip: "pwmchip0", channel: 0), settings: settings,
            control: control, at: start)
    }

    private func nanoseconds(_ sysfs: PWMSysfsTree) -> String? { sysfs.contents("pwm0/duty_cycle") }

    @Test func percentagesMapIntoTheDutyRange() throws {
        let sysfs = try makeTree()
        defer { sysfs.finish() }
        var pwm = try driver(sysfs, PWMSettings(range: DutyRange(minimum: 30, maximum: 90, stopBelow: 10)))
        #expect(sysfs.contents("pwm0/enable") == "1")
        #expect(pwm.receive(50, at: start) == .set(duty: 50, next: nil))
        #expect(nanoseconds(sysfs) == "20000")
        #expect(pwm.receive(15, at: start) == .set(duty: 30, next: nil))  // raised to the minimum
        #expect(nanoseconds(sysfs) == "12000")
        #expect(pwm.receive(5, at: start) == .set(duty: 0, next: nil))  // below stopBelow: stopped
        #expect(nanoseconds(sysfs) == "0")
        #expect(pwm.receive(100, at: start) == .set(duty: 90, next: nil))
        #expect(pwm.receive(100, at: start) == .unchanged(next: nil))
        #expect(pwm.receive(101, at: start) == .rejected(101, reason: "a duty is a percentage, 0...100"))
        #expect(pwm.receive("fast", at: start) == .rejected("fast", reason: "not a number"))
        #expect(pwm.rejectedValues == 2)
        #expect(nanoseconds(sysfs) == "36000")
    }

    @Test func aStartFromStandstillKicksAtFullDutyFirst() throws {
        let sysfs = try makeTree()
        defer { sysfs.finish() }
        var pwm = try driver(sysfs, PWMSettings(kickStart: KickStart(duty: 100, duration: .milliseconds(500))))
        let kickEnds = start + .milliseconds(500)
        #expect(pwm.receive(30, at: start) == .set(duty: 100, next: kickEnds))
        #expect(nanoseconds(sysfs) == "40000")
        // A new duty during the kick waits for its end; the kick runs on.
        #expect(pwm.receive(35, at: start + .milliseconds(100)) == .unchanged(next: kickEnds))
        #expect(pwm.advance(at: start + .milliseconds(499)) == .unchanged(next: kickEnds))
        #expect(nanoseconds(sysfs) == "40000")
        #expect(pwm.advance(at: kickEnds) == .set(duty: 35, next: nil))
        #expect(nanoseconds(sysfs) == "14000")
        // A running fan gets no kick.
        #expect(pwm.receive(20, at: start + .seconds(1)) == .set(duty: 20, next: nil))
        // Stopped and started again: a kick again.
        #expect(pwm.receive(0, at: start + .seconds(2)) == .set(duty: 0, next: nil))
        #expect(pwm.receive(20, at: start + .seconds(3)) == .set(duty: 100, next: start + .milliseconds(3500)))
        // A stop during the kick stops at once.
        #expect(pwm.receive(0, at: start + .milliseconds(3100)) == .set(duty: 0, next: nil))
        #expect(nanoseconds(sysfs) == "0")
    }

    @Test func theSlewRateLimitsHowFastTheDutyMoves() throws {
        let sysfs = try makeTree()
        defer { sysfs.finish() }
        var pwm = try driver(sysfs, PWMSettings(range: DutyRange(minimum: 20), slewRate: 10))
        let step = Driver.slewStep
        // From standstill it starts at its minimum, then climbs 10 % per second.
        #expect(pwm.receive(50, at: start) == .set(duty: 20, next: start + step))
        #expect(pwm.advance(at: start + .seconds(1)) == .set(duty: 30, next: start + .seconds(1) + step))
        #expect(
            pwm.advance(at: start + .milliseconds(1500)) == .set(duty: 35, next: start + .milliseconds(1500) + step))
        #expect(pwm.advance(at: start + .seconds(5)) == .set(duty: 50, next: nil))
        #expect(nanoseconds(sysfs) == "20000")
        // Idle for a minute, then down: the slew counts from the new value, not from the last step.
        #expect(pwm.receive(0, at: start + .seconds(65)) == .unchanged(next: start + .seconds(65) + step))
        #expect(pwm.advance(at: start + .seconds(66)) == .set(duty: 40, next: start + .seconds(66) + step))
        // Below the minimum it stops rather than stalling.
        #expect(pwm.advance(at: start + .seconds(68)) == .set(duty: 20, next: start + .seconds(68) + step))
        #expect(pwm.advance(at: start + .milliseconds(68_500)) == .set(duty: 0, next: nil))
        #expect(nanoseconds(sysfs) == "0")
    }

    @Test func aFanCurveDrivesTheDutyFromATemperatureWithItsBand() throws {
        let sysfs = try makeTree()
        defer { sysfs.finish() }
        let curve = CurveSettings(points: .fixed(try FanCurve(json: [[40, 0], [60, 50], [80, 100]])), band: 2)
        var pwm = try driver(sysfs, PWMSettings(), .curve(curve))
        #expect(pwm.receive(30, at: start) == .unchanged(next: nil))
        #expect(pwm.receive(64, at: start) == .set(duty: 60, next: nil))
        #expect(nanoseconds(sysfs) == "24000")
        #expect(pwm.receive(62.5, at: start) == .unchanged(next: nil))  // within the band
        #expect(pwm.receive(61, at: start) == .set(duty: 57.5, next: nil))  // read at 63
        #expect(nanoseconds(sysfs) == "23000")
        #expect(pwm.retune(try FanCurve(json: [[40, 0], [63, 100]]), at: start) == .set(duty: 100, next: nil))
        #expect(nanoseconds(sysfs) == "40000")
    }

    @Test func sharedPointsWithoutADefaultIgnoreValuesUntilTheyArrive() throws {
        let sysfs = try makeTree()
        defer { sysfs.finish() }
        var pwm = try driver(
            sysfs, PWMSettings(), .curve(CurveSettings(points: .shared(object: "fan", key: "curve", fallback: nil))))
        #expect(pwm.receive(64, at: start) == .rejected(64, reason: "the curve has no points yet"))
        #expect(pwm.retune(try FanCurve(json: [[40, 0], [80, 100]]), at: start) == .unchanged(next: nil))
        #expect(pwm.receive(60, at: start) == .set(duty: 50, next: nil))
    }

    @Test func theSafeDutyAppliesAtOnceWhateverTheSlewAndTheKick() throws {
        let sysfs = try makeTree()
        defer { sysfs.finish() }
        var pwm = try driver(sysfs, PWMSettings(kickStart: KickStart(duration: .seconds(1)), slewRate: 1, safeDuty: 80))
        _ = pwm.receive(30, at: start)
        #expect(pwm.enterSafeState(at: start + .milliseconds(10)) == .set(duty: 80, next: nil))
        #expect(nanoseconds(sysfs) == "32000")
        #expect(pwm.advance(at: start + .seconds(2)) == .unchanged(next: nil))
        var keeping = try driver(sysfs, PWMSettings(safeDuty: nil))
        _ = keeping.receive(30, at: start)
        #expect(keeping.enterSafeState(at: start) == .unchanged(next: nil))
        #expect(nanoseconds(sysfs) == "12000")
    }
}

@Suite struct PulseOutputLogicTests {
    let start = ContinuousClock.now

    private func driver(_ line: RecordingOutput, _ pulse: PulseSettings, limits: SwitchingLimits = SwitchingLimits())
        throws
        -> OutputDriver<ContinuousClock.Instant>
    {
        try OutputDriver(
            line: line, logic: OutputLogic(control: .pulse(pulse), initial: false, safeState: .off), limits: limits,
            at: start)
    }

    @Test func aPulseSwitchesOnForItsTimeThenOff() throws {
        let line = RecordingOutput()
        var output = try driver(line, PulseSettings(duration: .seconds(2)))
        #expect(output.receive(true, at: start) == .switched(on: true))
        #expect(output.pulseDeadline == start + .seconds(2))
        #expect(output.settle(at: start + .seconds(1)) == .unchanged)
        #expect(output.settle(at: start + .seconds(2)) == .switched(on: false))
        #expect(output.pulseDeadline == nil)
        #expect(line.writes == [false, true, false])
    }

    @Test func aRequestedTimeIsCappedAtTheMaximum() throws {
        let line = RecordingOutput()
        var output = try driver(line, PulseSettings(duration: .seconds(2), maximum: .seconds(10)))
        #expect(output.receive(4.5, at: start) == .switched(on: true))
        #expect(output.pulseDeadline == start + .milliseconds(4500))
        #expect(output.receive(0, at: start + .seconds(1)) == .switched(on: false))
        #expect(output.receive(60, at: start + .seconds(2)) == .switched(on: true))
        #expect(output.pulseDeadline == start + .seconds(12))
        #expect(output.receive("maybe", at: start + .seconds(3)) == .rejected("maybe"))
    }

    @Test func aNewCommandRestartsOrExtendsThePulse() throws {
        var restarting = try driver(RecordingOutput(), PulseSettings(duration: .seconds(2)))
        _ = restarting.receive(true, at: start)
        #expect(restarting.receive(true, at: start + .milliseconds(1500)) == .unchanged)
        #expect(restarting.pulseDeadline == start + .milliseconds(3500))

        var extending = try driver(
            RecordingOutput(), PulseSettings(duration: .seconds(2), maximum: .seconds(5), retrigger: .extend))
        _ = extending.receive(true, at: start)
        _ = extending.receive(true, at: start + .milliseconds(500))
        #expect(extending.pulseDeadline == start + .seconds(4))
        _ = extending.receive(true, at: start + .seconds(1))
        #expect(extending.pulseDeadline == start + .seconds(6))  // capped at 5 s from the command
    }

    @Test func aPulseHeldBackByMinOffTimeCountsFromItsSwitch() throws {
        let line = RecordingOutput()
        var output = try driver(
            line, PulseSettings(duration: .seconds(2)), limits: SwitchingLimits(minimumOff: .seconds(5)))
        #expect(output.receive(true, at: start + .seconds(1)) == .suppressed(on: true, remaining: .seconds(4)))
        #expect(output.settle(at: start + .seconds(5)) == .switched(on: true))
        #expect(output.pulseDeadline == start + .seconds(7))
        #expect(output.settle(at: start + .seconds(7)) == .switched(on: false))
    }

    @Test func theSafeStateEndsAPulse() throws {
        let line = RecordingOutput()
        var output = try driver(line, PulseSettings(duration: .seconds(60)))
        _ = output.receive(true, at: start)
        #expect(output.enterSafeState(at: start + .seconds(1)) == .switched(on: false))
        #expect(output.pulseDeadline == nil)
        #expect(output.settle(at: start + .seconds(61)) == .unchanged)
    }
}

@Suite struct CounterValueTests {
    let start = ContinuousClock.now

    @Test func theRateCoversTheWindow() {
        var rate = PulseRate<ContinuousClock.Instant>(window: .seconds(10), per: .seconds(60))
        #expect(rate.sample(0, at: start) == nil)
        #expect(rate.sample(5, at: start + .seconds(5)) == 60)  // 5 pulses in 5 s: 60 per minute
        #expect(rate.sample(10, at: start + .seconds(10)) == 60)
        #expect(rate.sample(30, at: start + .seconds(15)) == 150)  // 25 pulses since 5 s: the window's start
        #expect(rate.sample(30, at: start + .seconds(30)) == 0)
    }

    @Test func theTotalSurvivesInItsFileWrittenAtomically() throws {
        let tree = try SysfsTree()
        let file = CounterStateFile(path: tree.root + "/water.count")
        #expect(try file.load() == 0)
        try file.store(123_456_789)
        #expect(try file.load() == 123_456_789)
        #expect(try String(contentsOfFile: file.path, encoding: .utf8) == "{\"total\": 123456789}\n")
        #expect(FileManager.default.fileExists(atPath: file.path + ".tmp") == false)
        try tree.write("water.count", "{\"total\": -3}")
        #expect(
            throws: CounterStateFile.Failure(
                description:
                    "\(file.path): $.total: not a count; expected {\"total\": <whole number>} (fix or remove the file)")
        ) {
            try file.load()
        }
    }
}
