import CoatyCommunication
import CoatyJSON
import CoatyModel
import CoatyRuntime
import CoreMetrics
import ElapsedTime
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
        let counts = MetricsSystem.hasBackend
        state.withLock { state in
            state.manager = context.communicationManager
            state.sources.reserveCapacity(sources.count)
            for source in sources { state.add(SourceEntry(source: source, counts: counts)) }
        }
    }

    /// One task for all sources: their IoStates come in one stream.
    public func whileStarted(_ context: ControllerContext) async {
        let manager = context.communicationManager
        let ids = state.withLock { $0.sources.map(\.sourceId) }
        if let states = try? manager.observeIoStates(of: ids) {
            for await (id, ioState) in states { apply(ioState, to: id) }
        }
        // Stopped: no source stays associated and nothing scheduled survives; a restart brings fresh IoStates.
        for id in ids { apply(IoState(hasAssociations: false), to: id, isStopping: true) }
    }

    private func apply(_ ioState: IoState, to id: String, isStopping: Bool = false) {
        let (discarded, associateWatchers) = state.withLock {
            state -> ((CommunicationManager, ValueDropReason)?, [ObservationStream<String>.Continuation]) in
            guard let index = state.indices[id] else { return (nil, []) }
            let watchers = ioState.hasAssociations ? Array(state.associateWatchers.values) : []
            let source = state.sources[index]
            let changed = source.isAssociated != ioState.hasAssociations || source.updateRate != ioState.updateRate
            state.sources[index].isAssociated = ioState.hasAssociations
            state.sources[index].updateRate = ioState.updateRate
            if ioState.hasAssociations { state.sources[index].associates += 1 }
            state.sources[index].watchers?.send(state.sources[index])
            guard changed || source.pipeline.mode == .closed && ioState.hasAssociations else { return (nil, watchers) }
            source.timer?.cancel()
            state.sources[index].timer = nil
            state.sources[index].timerGeneration += 1
            let discards = state.sources[index].pipeline.rebuild(
                .init(
                    isAssociated: ioState.hasAssociations, updateRate: ioState.updateRate,
                    strategy: source.strategy),
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
        try publish(value, from: handle(of: sourceId))
    }

    /// The handle of an own source, to publish its values with (`publish(_:from:)`) without looking it up by its
    /// objectId each time; `unknownIoPoint` when the agent has no such source (or the controller was not
    /// initialized yet).
    package func handle(of sourceId: String) throws(CoatyError) -> IoSourceHandle {
        let found = state.withLock { state in
            state.indices[sourceId].map {
                IoSourceHandle(index: $0, sourceId: sourceId, isRaw: state.sources[$0].isRaw)
            }
        }
        guard let found else { throw .unknownIoPoint(sourceId) }
        return found
    }

    /// Publishes a value of the source `handle` stands for, subject to its strategy; false when it was dropped
    /// because the source is not associated. A handle of another controller is `unknownIoPoint`.
    @discardableResult
    package func publish(_ value: IoValue, from handle: IoSourceHandle) throws(CoatyError) -> Bool {
        let sourceId = handle.sourceId
        let outcome = try state.withLock { state throws(CoatyError) -> Outcome? in
            guard state.sources.indices.contains(handle.index), state.sources[handle.index].sourceId == sourceId else {
                throw .unknownIoPoint(sourceId)
            }
            // The entry is handed on in place (`inout`): a read through `sources[index]` copies the whole entry and
            // retains every reference in it, which cost as much as the rest of a publication (perf at 1000 zones).
            return try push(value, from: sourceId, manager: state.manager, into: &state.sources[handle.index])
        }
        switch outcome {
        case nil:
            return false
        case .dropped(let manager):
            manager.countDroppedValues(of: sourceId, .noAssociation)
            return false
        case .scheduled(let manager, let counters, let supersedes):
            counters?.published.increment()
            if supersedes { manager.countDroppedValues(of: sourceId, .superseded) }
            return true
        case .publish(let manager, let value, let counters):
            counters?.published.increment()
            if manager.publishIoValue(value, ofSourceWithId: sourceId) { counters?.routed.increment() }
            return true
        }
    }

    /// `publish` under the lock, on the source's entry. The clock is read only for a strategy that keeps time: a
    /// source that publishes every value at once (no update rate) does not need it, and it was a clock read per value.
    private func push(
        _ value: IoValue, from sourceId: String, manager: CommunicationManager?, into entry: inout SourceEntry
    ) throws(CoatyError) -> Outcome? {
        switch value {
        case .raw: guard entry.isRaw else { throw .ioValueFormatMismatch(sourceId: sourceId) }
        case .json: guard !entry.isRaw else { throw .ioValueFormatMismatch(sourceId: sourceId) }
        }
        guard let manager else { return nil }
        let supersedes = entry.pipeline.hasPending
        switch entry.pipeline.push(value, at: now) {
        case .dropped:
            entry.dropped += 1
            return .dropped(manager)
        case .publishNow(let value):
            return .publish(manager, value, entry.counters)
        case .scheduled:
            if entry.timer == nil { entry.timer = makeTimer(for: sourceId, generation: entry.timerGeneration) }
            return .scheduled(manager, entry.counters, supersedes: supersedes)
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
        case scheduled(CommunicationManager, SourceCounters?, supersedes: Bool)
        case publish(CommunicationManager, IoValue, SourceCounters?)
    }

    /// Sleeps until the source's next deadline and publishes what is due, until nothing is scheduled.
    private func makeTimer(for sourceId: String, generation: Int) -> Task<Void, Never> {
        Task { [clock, origin] in
            while true {
                let deadline = state.withLock { state -> ElapsedInstant? in
                    guard let index = state.indices[sourceId], state.sources[index].timerGeneration == generation
                    else { return nil }
                    guard let deadline = state.sources[index].pipeline.nextDeadline else {
                        state.sources[index].timer = nil
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
                let due = state.withLock { state -> (IoValue, CommunicationManager, SourceCounters?)? in
                    guard let index = state.indices[sourceId], state.sources[index].timerGeneration == generation,
                        let manager = state.manager, let value = state.sources[index].pipeline.advance(to: now)
                    else { return nil }
                    return (value, manager, state.sources[index].counters)
                }
                if let (value, manager, counters) = due {
                    if manager.publishIoValue(value, ofSourceWithId: sourceId) { counters?.routed.increment() }
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
            for entry in state.sources where entry.associates > 0 { continuation.yield(entry.sourceId) }
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
        state.withLock { state in state.indices[source.objectId].map { state.sources[$0].isAssociated } ?? false }
    }

    /// The broadcasts of a source's state, made when the first watcher asks: most sources never have one.
    private func watchers(of source: IoSource) -> SourceWatchers? {
        state.withLock { state in
            guard let index = state.indices[source.objectId] else { return nil }
            if let watchers = state.sources[index].watchers { return watchers }
            let watchers = SourceWatchers(state.sources[index])
            state.sources[index].watchers = watchers
            return watchers
        }
    }

    /// Values dropped because the source was not associated (the manager's `droppedValues` counts every reason).
    public func droppedValues(of source: IoSource) -> Int {
        state.withLock { state in state.indices[source.objectId].map { state.sources[$0].dropped } ?? 0 }
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
    /// In the order of the node definitions; an entry keeps its place (the index of its handles) for good.
    var sources: [SourceEntry] = []
    /// The index of each source in `sources`, by objectId.
    var indices: [String: Int] = [:]
    /// The streams of `associates()`.
    var associateWatchers: [Int: ObservationStream<String>.Continuation] = [:]
    var nextWatcherId = 0

    /// Adds a source, or starts a known one afresh in its place.
    mutating func add(_ entry: SourceEntry) {
        if let index = indices[entry.sourceId] {
            sources[index] = entry
        } else {
            indices[entry.sourceId] = sources.count
            sources.append(entry)
        }
    }
}

/// An own source of an `IoSourceController`, found once by its objectId (`handle(of:)`), so that publishing its
/// values (`publish(_:from:)`, per value) looks nothing up by text: a hash of the objectId per value was one of the
/// larger costs of a published value at a thousand sources.
package struct IoSourceHandle: Sendable, Hashable {
    /// Where the source is in its controller's table.
    let index: Int
    package let sourceId: String
    /// Whether the source has `useRawIoValues`: its values are `.raw` bytes, not JSON.
    package let isRaw: Bool
}

private struct SourceEntry {
    /// `source.objectId` and `source.useRawIoValues`, each a lookup in the source's JSON.
    let sourceId: String
    let isRaw: Bool
    let strategy: IoSourceBackpressureStrategy
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
    /// nil without a metrics backend: nobody reads them, and the two counters cost about 320 bytes of heap per
    /// source, and a cache miss on each per value.
    let counters: SourceCounters?

    /// With `counts`, the source's metrics counters are made.
    init(source: IoSource, counts: Bool) {
        sourceId = source.objectId
        isRaw = source.useRawIoValues
        strategy = source.updateStrategy
        counters = counts ? SourceCounters(sourceId: sourceId) : nil
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
/// those dropped. A class: a publication hands on one reference, not one per counter.
private final class SourceCounters: Sendable {
    let published: Counter
    let routed: Counter

    init(sourceId: String) {
        published = Counter(label: "coaty_edge_values_published_total", dimensions: [("source", sourceId)])
        routed = Counter(label: "coaty_edge_values_routed_total", dimensions: [("source", sourceId)])
    }
}
