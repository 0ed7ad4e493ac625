import Testing

@testable import EdgeHardware

/// Runs `values` through a fresh pipeline, the n-th value at n × `every` seconds.
private func outputs(_ filters: [ValueFilter], _ values: [Double], every seconds: Int = 10) -> [Double?] {
    var pipeline = ValuePipeline(filters)
    return values.enumerated().map { index, value in
        pipeline.process(value, at: .seconds(index * seconds))
    }
}

@Suite struct ValueFilterTests {
    @Test func offsetShiftsEveryValue() {
        #expect(outputs([.calibrate(LinearCalibration(offset: -0.5))], [21.5, -10, 0]) == [21, -10.5, -0.5])
    }

    @Test func linearCalibrationScalesThenShifts() {
        #expect(outputs([.calibrate(LinearCalibration(slope: 2, offset: 1))], [3, -0.5, 0]) == [7, 0, 1])
    }

    @Test func twoPointCalibrationPassesThroughBothReferencePoints() throws {
        let calibration = try #require(LinearCalibration(measured: 0.5, actual: 0, measured: 100.5, actual: 100))
        #expect(calibration == LinearCalibration(slope: 1, offset: -0.5))
        let steep = try #require(LinearCalibration(measured: 1, actual: 3, measured: 3, actual: 7))
        #expect(steep == LinearCalibration(slope: 2, offset: 1))
        #expect(outputs([.calibrate(steep)], [1, 3, 2]) == [3, 7, 5])
    }

    @Test func twoPointCalibrationNeedsTwoDifferentMeasuredValues() {
        #expect(LinearCalibration(measured: 20, actual: 19, measured: 20, actual: 21) == nil)
    }

    @Test func clampMovesValuesToTheNearestBound() {
        let clamp = ValueFilter.clamp(Clamp(lower: 0, upper: 100, outside: .clamp))
        #expect(outputs([clamp], [-1, 0, 50, 100, 100.4]) == [0, 0, 50, 100, 100])
    }

    @Test func clampCanDropValuesOutside() {
        let clamp = ValueFilter.clamp(Clamp(lower: -40, upper: 85, outside: .drop))
        #expect(outputs([clamp], [-127, -40, 21.5, 85, 85.5]) == [nil, -40, 21.5, 85, nil])
    }

    @Test func clampWithOneBound() {
        #expect(outputs([.clamp(Clamp(lower: 0, outside: .clamp))], [-3, 1e300]) == [0, 1e300])
        #expect(outputs([.clamp(Clamp(upper: 100, outside: .drop))], [-1e300, 101]) == [-1e300, nil])
    }

    @Test func deadbandPassesOnlyChangesOfAtLeastTheThresholdFromTheLastPassedValue() {
        let deadband = ValueFilter.deadband(Deadband(threshold: 0.5))
        #expect(outputs([deadband], [20, 20.25, 20.5, 20.75, 21, 19.5, 19.25]) == [20, nil, 20.5, nil, 21, 19.5, nil])
    }

    @Test func deadbandMeasuresFromTheLastPassedValueNotTheLastSeen() {
        // Creeping by 0.25 each time: every second step passes, never a drift that is never published.
        let deadband = ValueFilter.deadband(Deadband(threshold: 0.5))
        #expect(outputs([deadband], [10, 10.25, 10.5, 10.75, 11]) == [10, nil, 10.5, nil, 11])
    }

    @Test func movingAverageOverASlidingWindow() {
        let average = ValueFilter.movingAverage(MovingAverage(window: 3))
        #expect(outputs([average], [1, 2, 3, 4, 10]) == [1, 1.5, 2, 3, 17.0 / 3])
    }

    @Test func movingAverageOfOneIsTheValue() {
        #expect(outputs([.movingAverage(MovingAverage(window: 1))], [5, -2, 7.5]) == [5, -2, 7.5])
    }

    @Test func roundingToDecimalPlacesHalvesAwayFromZero() {
        #expect(outputs([.round(Rounding(digits: 1))], [2.25, -2.25, 21.04, 21.96]) == [2.3, -2.3, 21, 22])
        #expect(outputs([.round(Rounding(digits: 0))], [2.5, -2.5, 2.49]) == [3, -3, 2])
        #expect(outputs([.round(Rounding(digits: 2))], [0.125, 1013.256]) == [0.13, 1013.26])
    }

    @Test func heartbeatPassesValuesAndRepeatsTheLastWhileNothingPasses() {
        var heartbeat = ValueFilter.heartbeat(Heartbeat(period: .seconds(60)))
        let script: [(seconds: Int, value: Double?, expected: Double?)] = [
            (0, 20, 20), (10, nil, nil), (59, nil, nil), (60, nil, 20), (70, nil, nil), (119, nil, nil),
            (120, nil, 20), (125, 21, 21), (180, nil, nil), (185, nil, 21), (190, 22, 22), (191, 23, 23),
        ]
        for step in script {
            #expect(heartbeat.process(step.value, at: .seconds(step.seconds)) == step.expected, "at \(step.seconds) s")
        }
    }

    @Test func heartbeatHasNothingToRepeatBeforeTheFirstValue() {
        var heartbeat = ValueFilter.heartbeat(Heartbeat(period: .seconds(1)))
        #expect(heartbeat.process(nil, at: .seconds(0)) == nil)
        #expect(heartbeat.process(nil, at: .seconds(100)) == nil)
    }
}

@Suite struct ValuePipelineTests {
    @Test func emptyPipelinePassesEveryValue() {
        #expect(outputs([], [1, 2, 2]) == [1, 2, 2])
    }

    @Test func heartbeatAfterDeadbandRepublishesUnchangedValues() {
        let filters: [ValueFilter] = [.deadband(Deadband(threshold: 0.5)), .heartbeat(Heartbeat(period: .seconds(60)))]
        let values = Array(repeating: 20.0, count: 13) + [20.1, 21]
        let expected: [Double?] = [20, nil, nil, nil, nil, nil, 20, nil, nil, nil, nil, nil, 20, nil, 21]
        #expect(outputs(filters, values) == expected)
    }

    @Test func filtersRunInTheConfiguredOrder() {
        let round = ValueFilter.round(Rounding(digits: 0))
        let deadband = ValueFilter.deadband(Deadband(threshold: 1))
        // Rounded first, 20.4 -> 20 and 20.6 -> 21 differ by 1; the raw values differ by only 0.2.
        #expect(outputs([round, deadband], [20.4, 20.6]) == [20, 21])
        #expect(outputs([deadband, round], [20.4, 20.6]) == [20, nil])
    }

    @Test func calibrateClampAverageRoundDeadbandHeartbeat() {
        let filters: [ValueFilter] = [
            .calibrate(LinearCalibration(offset: -0.5)),
            .clamp(Clamp(lower: 0, upper: 50, outside: .drop)),
            .movingAverage(MovingAverage(window: 2)),
            .round(Rounding(digits: 1)),
            .deadband(Deadband(threshold: 0.3)),
            .heartbeat(Heartbeat(period: .seconds(30))),
        ]
        let values: [Double] = [20.5, 20.75, 99, 21.5, 21.5, 21.5, 21.5, 21.5, 21.5, 21.5, 21.5]
        // 0 s: 20 passes. 10 s: mean(20, 20.25) = 20.125 -> 20.1, inside the deadband. 20 s: 98.5 is dropped
        // and leaves the average alone. 30 s: mean(20.25, 21) = 20.625 -> 20.6 passes. 40 s: 21 passes.
        // Then 21 stays inside the deadband and the heartbeat repeats it 30 s after 40 s, and again at 100 s.
        let expected: [Double?] = [20, nil, nil, 20.6, 21, nil, nil, 21, nil, nil, 21]
        #expect(outputs(filters, values) == expected)
    }

    @Test func valuesThatAreNotFiniteAreNeverPublished() {
        #expect(outputs([], [.nan, .infinity, -.infinity, 1]) == [nil, nil, nil, 1])
        let heartbeat = ValueFilter.heartbeat(Heartbeat(period: .seconds(20)))
        // A NaN counts as no value: the heartbeat repeats the last good one when its period is up.
        #expect(outputs([heartbeat], [5, .nan, .nan, .nan]) == [5, nil, 5, nil])
        #expect(outputs([.deadband(Deadband(threshold: 1))], [5, .nan, 5.5, 6]) == [5, nil, nil, 6])
    }

    @Test func calibrationThatOverflowsIsNotPublished() {
        #expect(outputs([.calibrate(LinearCalibration(slope: 1e308, offset: 0))], [10, 0]) == [nil, 0])
    }

    @Test func eachPipelineKeepsItsOwnState() {
        var first = ValuePipeline([.deadband(Deadband(threshold: 1))])
        var second = first
        #expect(first.process(10, at: .zero) == 10)
        #expect(second.process(10.5, at: .zero) == 10.5)
        #expect(first.process(10.5, at: .seconds(1)) == nil)
    }
}
