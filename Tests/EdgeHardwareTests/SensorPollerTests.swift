import Synchronization
import Testing

@testable import EdgeHardware

private struct TimedEvent: Hashable, CustomStringConvertible {
    var time: Duration
    var event: SensorEvent

    init(_ seconds: Double, _ event: SensorEvent) {
        self.time = .seconds(seconds)
        self.event = event
    }

    var description: String { "\(time): \(event)" }
}

private typealias Status = SensorStatus<VirtualClock.Instant>

/// Every event the poller delivers until the sensor's script is used up, with the clock time at delivery.
private func collect(_ poller: SensorPoller<VirtualClock>) async -> [TimedEvent] {
    // In a task of its own: the scripted sensor ends the run by cancelling the task that reads it.
    await Task {
        var events: [TimedEvent] = []
        for await event in poller {
            events.append(TimedEvent(Double(poller.clock.now.offset.components.seconds), event))
        }
        return events
    }.value
}

private func seconds(_ values: [Double]) -> [VirtualClock.Instant] {
    values.map(VirtualClock.at)
}

@Suite struct SensorPollerTests {
    let clock = VirtualClock()
    let noDevice = SensorError.noDevice("/dev/i2c-1 0x76")
    let eio = SensorError.io(errno: 5, "/dev/i2c-1 0x76")

    func poller(
        _ sensor: ScriptedSensor, interval: Duration = .seconds(10),
        backoff: Backoff = Backoff(minimum: .seconds(1), maximum: .seconds(8)),
        pipelines: [Quantity: ValuePipeline] = [.temperature: ValuePipeline()]
    ) -> SensorPoller<VirtualClock> {
        SensorPoller(sensor: sensor, interval: interval, backoff: backoff, pipelines: pipelines, clock: clock)
    }

    @Test func pollsAtOnceAndThenEveryInterval() async {
        let sensor = ScriptedSensor(clock: clock, [.temperature(20), .temperature(21), .temperature(22)])
        let events = await collect(poller(sensor))
        #expect(
            events == [
                TimedEvent(0, .value(.temperature, 20)), TimedEvent(10, .value(.temperature, 21)),
                TimedEvent(20, .value(.temperature, 22)),
            ])
        #expect(sensor.readTimes == seconds([0, 10, 20, 30]))
    }

    @Test func publishesTheConfiguredQuantitiesThroughTheirPipelinesInTheSensorsOrder() async {
        let reading = [Measurement(.temperature, 21.04), Measurement(.humidity, 45.5), Measurement(.pressure, 1013.25)]
        let sensor = ScriptedSensor([.temperature, .humidity, .pressure], clock: clock, [.measure(reading)])
        let pipelines: [Quantity: ValuePipeline] = [
            .pressure: ValuePipeline(), .temperature: ValuePipeline([.round(Rounding(digits: 1))]),
        ]
        let events = await collect(poller(sensor, pipelines: pipelines))
        #expect(events == [TimedEvent(0, .value(.temperature, 21)), TimedEvent(0, .value(.pressure, 1013.25))])
    }

    @Test func aReadingWithoutAPublishedQuantityIsAFailure() async {
        let sensor = ScriptedSensor([.temperature, .pressure], clock: clock, [.temperature(20)])
        let events = await collect(
            poller(sensor, pipelines: [.temperature: ValuePipeline(), .pressure: ValuePipeline()]))
        #expect(events == [TimedEvent(0, .failed(.invalidReading("scripted sensor returned no pressure")))])
    }

    @Test func failingSensorIsRetriedWithExponentialBackoffAndRecoversByItself() async {
        let sensor = ScriptedSensor(
            clock: clock,
            [
                .temperature(20),
                .fail(noDevice), .fail(noDevice), .fail(eio), .fail(eio), .fail(eio), .fail(eio),
                .temperature(21), .temperature(22),
            ])
        let poller = poller(sensor, backoff: Backoff(minimum: .seconds(1), maximum: .seconds(8)))
        let statuses = Mutex<[Status]>([])
        sensor.observeReads { statuses.withLock { $0.append(poller.status) } }

        let events = await collect(poller)

        // The change of reason at 13 is reported (a stale reason would mislead); the retries that fail alike are not.
        #expect(
            events == [
                TimedEvent(0, .value(.temperature, 20)),
                TimedEvent(10, .failed(noDevice)), TimedEvent(13, .failed(eio)),
                TimedEvent(41, .recovered(failedAttempts: 6)), TimedEvent(41, .value(.temperature, 21)),
                TimedEvent(51, .value(.temperature, 22)),
            ])
        // Failures at 10, 11, 13, 17, 25 and 33 are retried after 1, 2, 4, 8 (the cap) and 8 seconds.
        #expect(sensor.readTimes == seconds([0, 10, 11, 13, 17, 25, 33, 41, 51, 61]))
        let since = VirtualClock.at(10)
        #expect(
            statuses.withLock { $0 } == [
                .ok, .ok,
                .failing(since: since, error: noDevice, attempts: 1),
                .failing(since: since, error: noDevice, attempts: 2),
                .failing(since: since, error: eio, attempts: 3), .failing(since: since, error: eio, attempts: 4),
                .failing(since: since, error: eio, attempts: 5), .failing(since: since, error: eio, attempts: 6),
                .ok, .ok,
            ])
    }

    @Test func backoffStartsOverAfterARecovery() async {
        let sensor = ScriptedSensor(
            clock: clock,
            [
                .fail(eio), .fail(eio), .temperature(20), .fail(noDevice), .temperature(21),
            ])
        let events = await collect(poller(sensor, backoff: Backoff(minimum: .seconds(2), maximum: .seconds(60))))
        #expect(
            events == [
                TimedEvent(0, .failed(eio)),
                TimedEvent(6, .recovered(failedAttempts: 2)), TimedEvent(6, .value(.temperature, 20)),
                TimedEvent(16, .failed(noDevice)),
                TimedEvent(18, .recovered(failedAttempts: 1)), TimedEvent(18, .value(.temperature, 21)),
            ])
        #expect(sensor.readTimes == seconds([0, 2, 6, 16, 18, 28]))
    }

    @Test func aSensorThatNeverAnswersIsTriedEverLessOftenUpToTheMaximum() async {
        let sensor = ScriptedSensor(clock: clock, Array(repeating: .fail(noDevice), count: 10))
        let poller = poller(sensor, backoff: Backoff(minimum: .seconds(1), maximum: .seconds(60)))
        let events = await collect(poller)
        #expect(events == [TimedEvent(0, .failed(noDevice))])
        #expect(sensor.readTimes == seconds([0, 1, 3, 7, 15, 31, 63, 123, 183, 243, 303]))
        // The 11th read found the script used up; its error is the latest one.
        #expect(poller.status == .failing(since: VirtualClock.at(0), error: .noDevice("script used up"), attempts: 11))
    }

    @Test func statusIsOkAgainWhenTheRecoveryIsDelivered() async {
        let sensor = ScriptedSensor(clock: clock, [.fail(eio), .temperature(20)])
        let poller = poller(sensor)
        await Task {
            var iterator = poller.makeAsyncIterator()
            #expect(poller.status == .ok)
            #expect(await iterator.next() == .failed(eio))
            #expect(poller.status == .failing(since: VirtualClock.at(0), error: eio, attempts: 1))
            #expect(await iterator.next() == .recovered(failedAttempts: 1))
            #expect(poller.status == .ok)
        }.value
    }

    @Test func aPollThatComesDueDuringASlowReadRunsAtOnceAndTheScheduleContinuesFromThere() async {
        let sensor = ScriptedSensor(
            clock: clock,
            [
                .temperature(1), .slow(.seconds(15), [Measurement(.temperature, 2)]), .temperature(3), .temperature(4),
            ])
        let events = await collect(poller(sensor))
        #expect(
            events == [
                TimedEvent(0, .value(.temperature, 1)), TimedEvent(25, .value(.temperature, 2)),
                TimedEvent(25, .value(.temperature, 3)), TimedEvent(35, .value(.temperature, 4)),
            ])
        #expect(sensor.readTimes == seconds([0, 10, 25, 35, 45]))
    }

    @Test func pipelineTimeIsPollerTime() async {
        // Constant readings every 10 s: the deadband holds them back and the heartbeat repeats one every 30 s.
        let sensor = ScriptedSensor(clock: clock, Array(repeating: .temperature(20), count: 8))
        let pipeline = ValuePipeline([.deadband(Deadband(threshold: 0.1)), .heartbeat(Heartbeat(period: .seconds(30)))])
        let events = await collect(poller(sensor, pipelines: [.temperature: pipeline]))
        #expect(
            events == [
                TimedEvent(0, .value(.temperature, 20)), TimedEvent(30, .value(.temperature, 20)),
                TimedEvent(60, .value(.temperature, 20)),
            ])
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellingEndsTheSequenceWhileItWaitsForTheNextPoll() async {
        struct SteadySensor: Sensor {
            let label = "steady"
            let quantities: [Quantity] = [.temperature]
            func read() async throws(SensorError) -> [Measurement] { [Measurement(.temperature, 20)] }
        }
        let poller = SensorPoller(
            sensor: SteadySensor(), interval: .seconds(3600),
            backoff: Backoff(minimum: .seconds(1), maximum: .seconds(2)),
            pipelines: [.temperature: ValuePipeline()])
        let (firstEvent, signal) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task {
            var events: [SensorEvent] = []
            for await event in poller {
                events.append(event)
                signal.yield()
            }
            return events
        }
        for await _ in firstEvent { break }
        consumer.cancel()
        #expect(await consumer.value == [.value(.temperature, 20)])
    }
}

@Suite struct BackoffTests {
    @Test func doublesFromTheMinimumUpToTheMaximum() {
        let backoff = Backoff(minimum: .seconds(1), maximum: .seconds(8))
        #expect((1...6).map(backoff.delay(afterFailures:)) == [1, 2, 4, 8, 8, 8].map(Duration.seconds))
        #expect(backoff.delay(afterFailures: .max) == .seconds(8))
    }

    @Test func capsADoublingThatOvershoots() {
        let backoff = Backoff(minimum: .milliseconds(1500), maximum: .seconds(5))
        #expect((1...4).map(backoff.delay(afterFailures:)) == [1.5, 3, 5, 5].map(Duration.seconds))
    }

    @Test func equalBoundsMeanAFixedDelay() {
        let backoff = Backoff(minimum: .seconds(30), maximum: .seconds(30))
        #expect((1...3).map(backoff.delay(afterFailures:)) == [30, 30, 30].map(Duration.seconds))
    }
}
