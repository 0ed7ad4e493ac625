import CoatyCommunication
import CoatyModel
import CoatyTestSupport
import Testing

@testable import CoatyIORouting

/// Every backpressure strategy with exact emitted values and times (milliseconds), on instants the test controls.
@Suite struct IoSourcePipelineTests {
    typealias Instant = ManualClock.Instant
    typealias Pipeline = IoSourcePipeline<Instant>

    enum Step {
        case value(Int, Double)
        case rebuild(Int, Pipeline.Mode)
    }

    func at(_ milliseconds: Int) -> Instant { Instant(offset: .milliseconds(milliseconds)) }

    /// Runs the steps in time order and returns (time, value) of every publication, firing deadlines between steps.
    func run(_ mode: Pipeline.Mode, _ steps: [Step], until end: Int = 10_000) -> [(Int, Double)] {
        var pipeline = Pipeline()
        pipeline.rebuild(mode, at: at(0))
        var published: [(Int, Double)] = []
        func fire(upTo time: Int) {
            while let deadline = pipeline.nextDeadline, deadline <= at(time) {
                if case .json(.number(let value))? = pipeline.advance(to: deadline) {
                    published.append((Int(deadline.offset / .milliseconds(1)), value))
                }
            }
        }
        for step in steps {
            switch step {
            case .value(let time, let value):
                fire(upTo: time)
                if case .publishNow(.json(.number(let now))) = pipeline.push(.json(.number(value)), at: at(time)) {
                    published.append((time, now))
                }
            case .rebuild(let time, let mode):
                fire(upTo: time)
                pipeline.rebuild(mode, at: at(time))
            }
        }
        fire(upTo: end)
        return published
    }

    func burst(from start: Int, every step: Int, count: Int, firstValue: Double = 1) -> [Step] {
        (0..<count).map { .value(start + $0 * step, firstValue + Double($0)) }
    }

    @Test func modesFollowCoatysRules() {
        #expect(Pipeline.Mode(isAssociated: false, updateRate: 100, strategy: .sample) == .closed)
        #expect(Pipeline.Mode(isAssociated: true, updateRate: nil, strategy: .sample) == .immediate)
        #expect(Pipeline.Mode(isAssociated: true, updateRate: 0, strategy: .throttle) == .immediate)
        #expect(Pipeline.Mode(isAssociated: true, updateRate: 100, strategy: .none) == .immediate)
        #expect(Pipeline.Mode(isAssociated: true, updateRate: 100, strategy: .default) == .sample(.milliseconds(100)))
        #expect(Pipeline.Mode(isAssociated: true, updateRate: 100, strategy: .sample) == .sample(.milliseconds(100)))
        #expect(
            Pipeline.Mode(isAssociated: true, updateRate: 2.5, strategy: .throttle) == .debounce(.microseconds(2500)))
    }

    @Test func immediateSendsEveryValueAtOnce() {
        let published = run(.immediate, burst(from: 0, every: 10, count: 4))
        #expect(published.map(\.0) == [0, 10, 20, 30])
        #expect(published.map(\.1) == [1, 2, 3, 4])
    }

    @Test func closedDropsEverything() {
        #expect(run(.closed, burst(from: 0, every: 10, count: 4)).isEmpty)
    }

    @Test func sampleSendsTheLatestValueOnceEveryInterval() {
        // A burst of 10 values every 25 ms from t=10: ticks at 100, 200, 300 carry the latest value each.
        let published = run(.sample(.milliseconds(100)), burst(from: 10, every: 25, count: 10))
        #expect(published.map(\.0) == [100, 200, 300])
        #expect(published.map(\.1) == [4, 8, 10])
    }

    @Test func sampleStaysSilentWithoutNewValues() {
        let published = run(.sample(.milliseconds(100)), [.value(130, 1), .value(950, 2)])
        #expect(published.map(\.0) == [200, 1000])
        #expect(published.map(\.1) == [1, 2])
    }

    @Test func sampleValueOnATickGoesOutOnTheNextTick() {
        #expect(run(.sample(.milliseconds(100)), [.value(200, 7)]).map(\.0) == [300])
    }

    @Test func debounceSendsTheLastValueAfterAQuietInterval() {
        let published = run(.debounce(.milliseconds(100)), burst(from: 0, every: 50, count: 5) + [.value(400, 9)])
        #expect(published.map(\.0) == [300, 500])
        #expect(published.map(\.1) == [5, 9])
    }

    @Test func debounceEmitsNothingWhileTheStreamIsFasterThanTheInterval() {
        let published = run(.debounce(.milliseconds(100)), burst(from: 0, every: 99, count: 50), until: 4_950)
        #expect(published.isEmpty)
        #expect(run(.debounce(.milliseconds(100)), burst(from: 0, every: 99, count: 50)).map(\.0) == [4_951])
    }

    @Test func rateChangeMidStreamDiscardsScheduledValuesAndRestartsTheGrid() {
        let steps: [Step] = [.value(30, 1), .rebuild(50, .sample(.milliseconds(200))), .value(60, 2), .value(300, 3)]
        let published = run(.sample(.milliseconds(100)), steps)
        #expect(published.map(\.0) == [250, 450])
        #expect(published.map(\.1) == [2, 3])
    }

    @Test func switchingFromDebounceToImmediate() {
        let steps: [Step] = [.value(0, 1), .rebuild(50, .immediate), .value(60, 2), .value(70, 3)]
        let published = run(.debounce(.milliseconds(100)), steps)
        #expect(published.map(\.0) == [60, 70])
        #expect(published.map(\.1) == [2, 3])
    }

    @Test func disassociationMidBurstDropsPendingAndLaterValues() {
        let steps = burst(from: 0, every: 10, count: 5) + [.rebuild(45, .closed)] + burst(from: 50, every: 10, count: 5)
        #expect(run(.sample(.milliseconds(100)), steps).isEmpty)
        #expect(run(.debounce(.milliseconds(20)), steps).isEmpty)
        let reassociated = steps + [.rebuild(200, .sample(.milliseconds(100))), .value(210, 42)]
        #expect(run(.sample(.milliseconds(100)), reassociated).map(\.0) == [300])
    }
}
