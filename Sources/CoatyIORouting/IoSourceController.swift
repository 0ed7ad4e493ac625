import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatyRuntime
import CoreMetrics
import ElapsedTime
import Logging
import Synchronization

/// Publishes the values of this agent's IO sources, shaped by each source's backpressure strategy and the update
/// rate its router asked for. Values of a source that is not associated are dropped, as are those its strategy
/// replaces by newer ones, and those scheduled when it stops; each is counted by reason in the manager's
/// `coaty_edge_values_dropped_total{source, reason}`.
public final class IoSourceController<C: Clock>: Controller where C.Duration == Duration {
    private let clock: C
    /// The instant that `ElapsedInstant`s count from.
    private let origin: C.Instant
    private let state = Mutex(SourceTable())

    public init(clock: C) {
        self.clock = clock
        origin = clock.now
    }

    private var now: ElapsedInstant { ElapsedInstant(origin.duration(to: clock.now)) }

    public func onInit(_ context: ControllerContext) async throws {
        let sources = context.communicationManager.ioNodeDefinitions.flatMap(\.ioSources)
        state.withLock { state in
            state.manager = context.communicationManager
            state.logger = context.logger
            for source in sources { state.sources[source.objectId] = SourceEntry(source: source) }
        }
    }

    /// One task for all sources: their IoStates come in one stream.
    public func whileStarted(_ context: ControllerContext) async {
        let manager = context.communicationManager
        let ids = state.withLock { Array($0.sources.keys) }
        if let states = try? manager.observeIoStates(of: ids) {
            for await (id, ioState) in states { apply(ioState, to: id) }
        }
        // Stopped: no source stays associated and nothing scheduled survives; a restart brings fresh IoStates.
        for id in ids { apply(IoState(hasAssociations: false), to: id, isStopping: true) }
    }

    private func apply(_ ioState: IoState, to id: String, isStopping: Bool = false) {
        let (discarded, associateWatchers) = state.withLock {
            state -> ((CommunicationManager, ValueDropReason)?, [ObservationStream<String>.Continuation]) in
            guard let index = state.sources.index(forKey: id) else { return (nil, []) }
            let watchers = ioState.hasAssociations ? Array(state.associateWatchers.values) : []
            let source = state.sources.values[index]
            let changed = source.isAssociated != ioState.hasAssociations || source.updateRate != ioState.updateRate
            state.sources.values[index].isAssociated = ioState.hasAssociations
            state.sources.values[index].updateRate = ioState.updateRate
            if ioState.hasAssociations { state.sources.values[index].associates += 1 }
            state.sources.values[index].watchers?.send(state.sources.values[index])
            guard changed || source.pipeline.mode == .closed && ioState.hasAssociations else { return (nil, watchers) }
            source.timer?.cancel()
            state.sources.values[index].timer = nil
            state.sources.values[index].timerGeneration += 1
            let discards = state.sources.values[index].pipeline.rebuild(
                .init(
                    isAssociated: ioState.hasAssociations, updateRate: ioState.updateRate,
                    strategy: source.source.updateStrategy),
                at: now)
            guard discards, let manager = state.manager else { return (nil, watchers) }
            // A value that waited for its deadline: a new rate or association starts afresh, as in Coaty JS.
            return ((manager, isStopping ? .stop : ioState.hasAssociations ? .superseded : .noAssociation), watchers)
        }
        if let (manager, reason) = discarded { manager.countDroppedValues(of: id, reason) }
        for watcher in associateWatchers { watcher.yield(id) }
    }

    /// Publishes a JSON value of an own source, subject to its strategy. Returns false when the value was dropped
    /// because the source is not associated.
    @discardableResult
    public func publish(_ value: JSONValue, from source: IoSource) throws(CoatyError) -> Bool {
        try publish(.json(value), from: source.objectId)
    }

    /// Publishes raw bytes of an own source with `useRawIoValues`.
    @discardableResult
    public func publish(raw bytes: [UInt8], from source: IoSource) throws(CoatyError) -> Bool {
        try publish(.raw(bytes), from: source.objectId)
    }

    @discardableResult
    public func publish(_ value: IoValue, from sourceId: String) throws(CoatyError) -> Bool {
        let now = now
        let outcome = try state.withLock { state throws(CoatyError) -> Outcome? in
            guard let index = state.sources.index(forKey: sourceId) else { throw .unknownIoPoint(sourceId) }
            // Read once, and changed in place: every read through `values[index]` copies the whole entry, and
            // copying it out and back cost as much as the rest of a publication.
            let entry = state.sources.values[index]
            switch value {
            case .raw: guard entry.isRaw else { throw .ioValueFormatMismatch(sourceId: sourceId) }
            case .json: guard !entry.isRaw else { throw .ioValueFormatMismatch(sourceId: sourceId) }
            }
            guard let manager = state.manager else { return nil }
            let supersedes = entry.pipeline.hasPending
            switch state.sources.values[index].pipeline.push(value, at: now) {
            case .dropped:
                state.sources.values[index].dropped += 1
                return .dropped(manager)
            case .publishNow(let value):
                return .publish(entry.source, manager, value, entry.counters)
            case .scheduled:
                if entry.timer == nil {
                    state.sources.values[index].timer = makeTimer(for: sourceId, generation: entry.timerGeneration)
                }
                return .scheduled(manager, entry.counters, supersedes: supersedes)
            }
        }
        switch outcome {
        case nil:
            return false
        case .dropped(let manager):
            manager.countDroppedValues(of: sourceId, .noAssociation)
            return false
        case .scheduled(let manager, let counters, let supersedes):
            counters.published.increment()
            if supersedes { manager.countDroppedValues(of: sourceId, .superseded) }
            return true
        case .publish(let source, let manager, let value, let counters):
            counters.published.increment()
            if try manager.publishIoValue(value, of: source) { counters.routed.increment() }
            return true
        }
    }

    /// Runs `body`, which publishes values of several sources (the sensor reads of one turn), so that the values
    /// it sends leave together when it returns, in as few TCP segments as fit. `body` must not block or wait.
    package func publishingTogether<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard let manager = state.withLock({ $0.manager }) else { return try body() }
        return try manager.publishingTogether(body)
    }

    /// What `publish` does after leaving the lock.
    private enum Outcome {
        case dropped(CommunicationManager)
        case scheduled(CommunicationManager, SourceCounters, supersedes: Bool)
        case publish(IoSource, CommunicationManager, IoValue, SourceCounters)
    }

    /// Sleeps until the source's next deadline and publishes what is due, until nothing is scheduled.
    private func makeTimer(for sourceId: String, generation: Int) -> Task<Void, Never> {
        Task { [clock, origin] in
            while true {
                let deadline = state.withLock { state -> ElapsedInstant? in
                    guard state.sources[sourceId]?.timerGeneration == generation else { return nil }
                    guard let deadline = state.sources[sourceId]?.pipeline.nextDeadline else {
                        state.sources[sourceId]?.timer = nil
                        return nil
                    }
                    return deadline
                }
                guard let deadline else { return }
                do {
                    try await clock.sleep(until: origin.advanced(by: deadline.sinceOrigin), tolerance: nil)
                } catch {
                    return
                }
                let due = state.withLock { state -> (IoValue, IoSource, CommunicationManager, SourceCounters)? in
                    guard var source = state.sources[sourceId], source.timerGeneration == generation,
                        let manager = state.manager, let value = source.pipeline.advance(to: now)
                    else { return nil }
                    defer { state.sources[sourceId] = source }
                    return (value, source.source, manager, source.counters)
                }
                if let (value, source, manager, counters) = due {
                    do {
                        if try manager.publishIoValue(value, of: source) { counters.routed.increment() }
                    } catch {
                        state.withLock { $0.logger }.error("cannot publish a value of \(source.name): \(error)")
                    }
                }
            }
        }
    }

    /// Whether the source is associated now, then every change.
    public func associations(of source: IoSource) -> ObservationStream<Bool> {
        watchers(of: source)?.association.stream() ?? .finished
    }

    /// How many Associates that leave the source associated it has taken (0 before the first), then every new one:
    /// unlike `associations(of:)`, this also tells of an actor that joins a source already associated with another.
    public func associates(of source: IoSource) -> ObservationStream<Int> {
        watchers(of: source)?.associates.stream() ?? .finished
    }

    /// The objectId of every own source that has taken an Associate that left it associated, then of the source each
    /// new such Associate concerns, for every source in one stream, as they arrive: what `associates(of:)` tells of
    /// one source, without a stream and a task per source.
    package func associates() -> ObservationStream<String> {
        let (stream, continuation) = ObservationStream.makeStream(of: String.self)
        let id = state.withLock { state in
            for (id, entry) in state.sources where entry.associates > 0 { continuation.yield(id) }
            state.nextWatcherId += 1
            state.associateWatchers[state.nextWatcherId] = continuation
            return state.nextWatcherId
        }
        continuation.onTermination { [weak self] in
            _ = self?.state.withLock { $0.associateWatchers.removeValue(forKey: id) }
        }
        return stream
    }

    /// The update rate the router asks of the source (milliseconds; nil when none), then every change.
    public func updateRates(of source: IoSource) -> ObservationStream<Double?> {
        watchers(of: source)?.updateRate.stream() ?? .finished
    }

    public func isAssociated(_ source: IoSource) -> Bool {
        state.withLock { $0.sources[source.objectId]?.isAssociated ?? false }
    }

    /// The broadcasts of a source's state, made when the first watcher asks: most sources never have one.
    private func watchers(of source: IoSource) -> SourceWatchers? {
        state.withLock { state in
            guard let index = state.sources.index(forKey: source.objectId) else { return nil }
            if let watchers = state.sources.values[index].watchers { return watchers }
            let watchers = SourceWatchers(state.sources.values[index])
            state.sources.values[index].watchers = watchers
            return watchers
        }
    }

    /// Values dropped because the source was not associated (the manager's `droppedValues` counts every reason).
    public func droppedValues(of source: IoSource) -> Int {
        state.withLock { $0.sources[source.objectId]?.dropped ?? 0 }
    }
}

extension IoSourceController where C == ContinuousClock {
    public convenience init() {
        self.init(clock: ContinuousClock())
    }
}

/// What the controller keeps of its sources. Not generic over the clock, unlike the controller: code generic over
/// it runs unspecialized where the agent calls it from another module, and every publication spent more on
/// looking up generic type metadata and copying the entries than on anything else.
private struct SourceTable {
    var manager: CommunicationManager?
    var logger = Logger(label: "coaty.io-source")
    var sources: [String: SourceEntry] = [:]
    /// The streams of `associates()`.
    var associateWatchers: [Int: ObservationStream<String>.Continuation] = [:]
    var nextWatcherId = 0
}

private struct SourceEntry {
    var source: IoSource
    /// `source.useRawIoValues`, which is a lookup in the source's JSON.
    let isRaw: Bool
    var pipeline = IoSourcePipeline<ElapsedInstant>()
    var timer: Task<Void, Never>?
    var timerGeneration = 0
    var isAssociated = false
    /// Associates that left the source associated.
    var associates = 0
    var updateRate: Double?
    /// nil until someone watches the source.
    var watchers: SourceWatchers?
    var dropped = 0
    let counters: SourceCounters

    init(source: IoSource) {
        self.source = source
        isRaw = source.useRawIoValues
        counters = SourceCounters(sourceId: source.objectId)
    }
}

/// The association, Associates and update rate of a source for those who watch them.
private final class SourceWatchers: Sendable {
    let association: CurrentValueBroadcast<Bool>
    let associates: CurrentValueBroadcast<Int>
    let updateRate: CurrentValueBroadcast<Double?>

    init(_ entry: SourceEntry) {
        association = CurrentValueBroadcast(entry.isAssociated)
        associates = CurrentValueBroadcast(entry.associates)
        updateRate = CurrentValueBroadcast(entry.updateRate)
    }

    func send(_ entry: SourceEntry) {
        association.send(entry.isAssociated)
        associates.send(entry.associates)
        updateRate.send(entry.updateRate)
    }
}

/// Values accepted for publishing and values that went out on the route (after the strategy); the manager counts
/// those dropped.
private struct SourceCounters: Sendable {
    let published: Counter
    let routed: Counter

    init(sourceId: String) {
        published = Counter(label: "coaty_edge_values_published_total", dimensions: [("source", sourceId)])
        routed = Counter(label: "coaty_edge_values_routed_total", dimensions: [("source", sourceId)])
    }
}
