import CoatyJSON
import Testing

@testable import EdgeHardware

/// The states after each value, nil where the value was rejected.
private func states(_ logic: inout OutputLogic, _ values: [JSONValue]) -> [Bool?] {
    values.map { logic.receive($0) }
}

@Suite struct OutputLogicTests {
    let fan = Hysteresis(onAbove: 60, offBelow: 55)
    let heater = Hysteresis(onBelow: 18, offAbove: 21)

    @Test func switchingReadsBooleansOneAndZeroAndOnOffInAnyCase() {
        var logic = OutputLogic(control: .switching, initial: false, safeState: .off)
        #expect(
            states(&logic, [true, false, 1, 0, "on", "OFF", "On", "oFf"]) == [
                true, false, true, false, true, false, true, false,
            ])
        #expect(logic.rejectedValues == 0)
    }

    @Test func switchingCountsAndIgnoresEverythingElse() {
        var logic = OutputLogic(control: .switching, initial: true, safeState: .off)
        let values: [JSONValue] = [2, 0.5, -1, "yes", "true", "1", "", .null, [true], ["on": true]]
        #expect(states(&logic, values) == Array(repeating: nil, count: values.count))
        #expect(logic.rejectedValues == values.count)
        #expect(logic.state == true)
    }

    @Test func fanSwitchesOnAboveAndOffBelowAndHoldsInBetween() throws {
        var logic = OutputLogic(control: .hysteresis(try #require(fan)), initial: false, safeState: .off)
        let temperatures: [JSONValue] = [50, 58, 60, 60.5, 58, 55, 54.9, 57, 61]
        #expect(states(&logic, temperatures) == [false, false, false, true, true, true, false, false, true])
    }

    @Test func heaterSwitchesOnBelowAndOffAbove() throws {
        let heater = try #require(heater)
        #expect(!heater.onWhenHigh)
        var logic = OutputLogic(control: .hysteresis(heater), initial: false, safeState: .off)
        let temperatures: [JSONValue] = [20, 18, 17.9, 19, 21, 21.1, 19, -5]
        #expect(states(&logic, temperatures) == [false, false, true, true, true, false, false, true])
    }

    @Test func hysteresisHoldsItsInitialStateInsideTheBand() throws {
        var logic = OutputLogic(control: .hysteresis(try #require(fan)), initial: true, safeState: .off)
        #expect(states(&logic, [57, 55.5]) == [true, true])
    }

    @Test func hysteresisCountsAndIgnoresWhatIsNotANumber() throws {
        var logic = OutputLogic(control: .hysteresis(try #require(fan)), initial: false, safeState: .off)
        #expect(states(&logic, [61, true, "62", "on", .null, 50]) == [true, nil, nil, nil, nil, false])
        #expect(logic.rejectedValues == 4)
    }

    @Test func thresholdsMustLeaveABandInTheRightOrder() {
        #expect(Hysteresis(onAbove: 55, offBelow: 60) == nil)
        #expect(Hysteresis(onAbove: 55, offBelow: 55) == nil)
        #expect(Hysteresis(onBelow: 21, offAbove: 18) == nil)
        #expect(Hysteresis(onBelow: 18, offAbove: 18) == nil)
    }

    @Test(arguments: [(SafeState.on, false, true), (.off, true, false), (.keep, true, true), (.keep, false, false)])
    func safeState(safe: SafeState, before: Bool, after: Bool) {
        var logic = OutputLogic(control: .switching, initial: before, safeState: safe)
        #expect(logic.enterSafeState(lineState: before) == after)
        #expect(logic.state == after)
    }

    @Test func newThresholdsApplyToTheLastValueAtOnce() throws {
        var logic = OutputLogic(control: .hysteresis(try #require(fan)), initial: false, safeState: .off)
        #expect(logic.retune(try #require(Hysteresis(onAbove: 57, offBelow: 52))) == nil)
        #expect(logic.receive(58) == true)
        // The setpoint rises above the temperature: still inside the new band, the fan keeps running.
        #expect(logic.retune(try #require(Hysteresis(onAbove: 62, offBelow: 57))) == true)
        #expect(logic.retune(try #require(Hysteresis(onAbove: 65, offBelow: 59))) == false)
        #expect(logic.hysteresis == Hysteresis(onAbove: 65, offBelow: 59))
        #expect(states(&logic, [64, 65.5]) == [false, true])
    }

    @Test func sharedThresholdsStartFromTheirDefaultsAndHoldTheStateWithoutValues() throws {
        let withDefaults = SharedHysteresis(
            on: .shared(object: "setpoints", key: "fanOn", fallback: 60), off: .fixed(55), onWhenHigh: true)
        #expect(withDefaults.sharedObjectNames == ["setpoints"])
        var logic = OutputLogic(control: .sharedHysteresis(withDefaults), initial: false, safeState: .off)
        #expect(logic.hysteresis == Hysteresis(onAbove: 60, offBelow: 55))
        #expect(states(&logic, [61, 50]) == [true, false])
        #expect(withDefaults.thresholds(["setpoints": ["fanOn": 70]])! == (70, 55))
        #expect(withDefaults.thresholds(["setpoints": ["fanOn": "hot"]])! == (60, 55))

        let withoutDefaults = SharedHysteresis(
            on: .shared(object: "setpoints", key: "heaterOn", fallback: nil),
            off: .shared(object: "limits", key: "heaterOff", fallback: nil), onWhenHigh: false)
        #expect(withoutDefaults.sharedObjectNames == ["setpoints", "limits"])
        #expect(withoutDefaults.thresholds(["setpoints": ["heaterOn": 18]]) == nil)
        var heater = OutputLogic(control: .sharedHysteresis(withoutDefaults), initial: true, safeState: .off)
        #expect(heater.hysteresis == nil)
        #expect(states(&heater, [30, -10]) == [true, true])
        #expect(heater.rejectedValues == 0)
        let (on, off) = try #require(
            withoutDefaults.thresholds(["setpoints": ["heaterOn": 18], "limits": ["heaterOff": 21]]))
        #expect(heater.retune(try #require(withoutDefaults.hysteresis(on: on, off: off))) == true)
        #expect(heater.receive(22) == false)
        #expect(withoutDefaults.hysteresis(on: 21, off: 18) == nil)
    }

    @Test func hysteresisHoldsTheSafeStateUntilAValueLeavesTheBand() throws {
        var logic = OutputLogic(control: .hysteresis(try #require(fan)), initial: false, safeState: .off)
        #expect(logic.receive(61) == true)
        #expect(logic.enterSafeState(lineState: true) == false)
        #expect(states(&logic, [58, 60.1]) == [false, true])
    }
}

@Suite struct OutputDriverTests {
    let fault = GPIOError.io(errno: 5, "gpiochip0 line 17")

    /// The driver's start; its decisions take the time as an argument, so these tests set it.
    let start = ContinuousClock.now

    func fanDriver(_ line: RecordingOutput, safeState: SafeState = .off) throws -> OutputDriver<ContinuousClock.Instant>
    {
        let fan = try #require(Hysteresis(onAbove: 60, offBelow: 55))
        return try OutputDriver(
            line: line, logic: OutputLogic(control: .hysteresis(fan), initial: false, safeState: safeState), at: start)
    }

    @Test func setsTheInitialStateFirst() throws {
        let line = RecordingOutput()
        _ = try fanDriver(line)
        #expect(line.writes == [false])
    }

    @Test func writesTheLineOnlyWhenTheStateChanges() throws {
        let line = RecordingOutput()
        var driver = try fanDriver(line)
        let outcomes = [50, 61, 62, 58, 54, "hot"].map { driver.receive($0, at: start) }
        #expect(
            outcomes == [
                .unchanged, .switched(on: true), .unchanged, .unchanged, .switched(on: false), .rejected("hot"),
            ])
        #expect(line.writes == [false, true, false])
        #expect(driver.logic.rejectedValues == 1)
    }

    @Test func aFailedWriteIsReportedAndTheNextDecisionWritesAgain() throws {
        let line = RecordingOutput()
        var driver = try fanDriver(line)
        line.failNextWrites([fault])
        #expect(driver.receive(61, at: start) == .failed(fault))
        #expect(driver.receive(62, at: start) == .switched(on: true))
        #expect(driver.receive(63, at: start) == .unchanged)
        #expect(line.writes == [false, true])
    }

    @Test func safeStateIsWrittenWhenItDiffers() throws {
        let line = RecordingOutput()
        var driver = try fanDriver(line)
        #expect(driver.enterSafeState(at: start) == .unchanged)
        #expect(driver.receive(61, at: start) == .switched(on: true))
        #expect(driver.enterSafeState(at: start) == .switched(on: false))
        #expect(line.writes == [false, true, false])
    }

    @Test func keepLeavesTheLineAlone() throws {
        let line = RecordingOutput()
        var driver = try fanDriver(line, safeState: .keep)
        #expect(driver.receive(61, at: start) == .switched(on: true))
        #expect(driver.enterSafeState(at: start) == .unchanged)
        #expect(line.writes == [false, true])
    }

    @Test func aLineThatCannotBeSetFailsTheDriver() {
        let line = RecordingOutput()
        line.failNextWrites([fault])
        #expect(throws: fault) {
            try OutputDriver(
                line: line, logic: OutputLogic(control: .switching, initial: true, safeState: .off), at: start)
        }
    }

    /// minOffTime 10 s and minOnTime 30 s, counted from the driver's start: an early switch is held back with the time
    /// it must wait, a value that asks for the line's state again drops it, `settle` applies the state last asked for
    /// once the minimum has passed, and the safe state ignores the minimums.
    @Test func minimumOnAndOffTimesHoldSwitchesBackUntilTheyPassed() throws {
        let line = RecordingOutput()
        var driver = try OutputDriver(
            line: line, logic: OutputLogic(control: .switching, initial: false, safeState: .on),
            limits: SwitchingLimits(minimumOn: .seconds(30), minimumOff: .seconds(10)), at: start)
        func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

        #expect(driver.receive(true, at: at(5)) == .suppressed(on: true, remaining: .seconds(5)))
        #expect(driver.receive(false, at: at(6)) == .unchanged)
        #expect(driver.settle(at: at(10)) == .unchanged)
        #expect(driver.receive(true, at: at(7)) == .suppressed(on: true, remaining: .seconds(3)))
        #expect(driver.settle(at: at(9)) == .suppressed(on: true, remaining: .seconds(1)))
        #expect(driver.settle(at: at(10)) == .switched(on: true))

        #expect(driver.receive(false, at: at(20)) == .suppressed(on: false, remaining: .seconds(20)))
        #expect(driver.receive(true, at: at(25)) == .unchanged)
        #expect(driver.receive(false, at: at(30)) == .suppressed(on: false, remaining: .seconds(10)))
        #expect(driver.settle(at: at(40)) == .switched(on: false))
        #expect(driver.receive(true, at: at(41)) == .suppressed(on: true, remaining: .seconds(9)))

        // Safety first: the safe state comes at once; the switch on it replaces is not applied afterwards.
        #expect(driver.enterSafeState(at: at(42)) == .switched(on: true))
        #expect(driver.settle(at: at(60)) == .unchanged)
        #expect(line.writes == [false, true, false, true])
    }

    /// With `keep` as the safe state, a held-back switch is given up: the line stays as it is.
    @Test func keepGivesUpAHeldBackSwitch() throws {
        let line = RecordingOutput()
        var driver = try OutputDriver(
            line: line, logic: OutputLogic(control: .switching, initial: true, safeState: .keep),
            limits: SwitchingLimits(minimumOn: .seconds(30)), at: start)
        #expect(driver.receive(false, at: start + .seconds(1)) == .suppressed(on: false, remaining: .seconds(29)))
        #expect(driver.enterSafeState(at: start + .seconds(2)) == .unchanged)
        #expect(driver.settle(at: start + .seconds(60)) == .unchanged)
        #expect(line.writes == [true])
    }
}

@Suite struct InputValuesTests {
    func collect(_ values: InputValues) async -> (values: [JSONValue], error: (any Error)?) {
        var collected: [JSONValue] = []
        do {
            for try await value in values { collected.append(value) }
            return (collected, nil)
        } catch {
            return (collected, error)
        }
    }

    @Test func publishesTheStartStateThenEachChangeOnce() async {
        let input = ScriptedInput(initial: .success(true), changes: [true, false, false, true])
        let result = await collect(InputValues(input: input, mapping: .boolean))
        #expect(result.values == [true, false, true])
        #expect(result.error == nil)
    }

    @Test func mapsStatesToConfiguredValues() async {
        let input = ScriptedInput(initial: .success(false), changes: [true])
        let result = await collect(InputValues(input: input, mapping: InputMapping(active: "open", inactive: "closed")))
        #expect(result.values == ["closed", "open"])
    }

    @Test func aFailingLineEndsTheValuesWithItsError() async {
        let fault = GPIOError.io(errno: 5, "gpiochip0 line 22")
        let input = ScriptedInput(initial: .success(false), changes: [true], thenFail: fault)
        let result = await collect(InputValues(input: input, mapping: .boolean))
        #expect(result.values == [false, true])
        #expect(result.error as? GPIOError == fault)
    }

    @Test func aLineThatCannotBeReadFailsAtOnce() async {
        let fault = GPIOError.lineUnavailable("gpiochip0 line 22 is in use")
        let result = await collect(
            InputValues(input: ScriptedInput(initial: .failure(fault), changes: []), mapping: .boolean))
        #expect(result.values == [])
        #expect(result.error as? GPIOError == fault)
    }
}
