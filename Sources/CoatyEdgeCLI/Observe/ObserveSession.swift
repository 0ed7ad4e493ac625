import CoatyCommunication
import CoatyEdgeAgent
import CoatyIORouting
import CoatyJSON
import CoatyModel

/// `coaty-edge observe`: feeds what arrives from the broker into an `ObserveModel`, one input at a time, watches
/// the routes and IO contexts the model asks for, and writes the events (JSON lines or text lines) or a live table.
public enum ObserveSession {
    public enum Output: Sendable, Hashable {
        /// One JSON object per event and line.
        case json
        /// One line of text per event.
        case lines
        /// A table redrawn in place, for a terminal.
        case table(title: String)
        /// One line of counts per interval (`ObserveModel.Summary`), for fleets too large to follow event by event.
        case summary(every: Duration)
    }

    enum Input: Sendable {
        case presence(PresenceChange)
        case associate(ReceivedEvent<AssociateEvent>)
        case value(route: String, payload: [UInt8])
        case deviceStatus(CoatyObject, from: String)
        case context(CoatyObject)
        case router(RouterReport.Answer)
        case routerAnswersDone
        case redraw
    }

    /// How many events other than values the table keeps.
    static let recentEventCount = 50

    /// What `follow` hands on: events the model reported, or a periodic tick (for a redraw).
    public enum Step: Sendable {
        case events([ObserveEvent])
        case tick
    }

    /// Runs until the task is cancelled (Ctrl-C), on a session that is online.
    public static func run(
        _ session: ClientSession, filter: ObserveModel.Filter, output: Output,
        startupTimeout: Duration = .seconds(3), write: @escaping @Sendable (String) -> Void = StandardOutput.write
    ) async {
        var recent: [String] = []
        var tick: Duration?
        switch output {
        case .table:
            write(LiveTable.enter)
            tick = .milliseconds(500)
        case .summary(let every):
            tick = every
        case .json, .lines:
            break
        }
        // The first tick comes at the start; a summary line covers the interval since the one before.
        var lastSummary: Int64?
        await follow(session, filter: filter, startupTimeout: startupTimeout, tick: tick) { model, step, now in
            switch step {
            case .tick:
                if case .summary = output {
                    if let last = lastSummary {
                        let summary = model.summary()
                        write(
                            summary.line(
                                time: String(ClockTime.local(now).prefix(8)), seconds: Double(now - last) / 1000) + "\n"
                        )
                    } else {
                        _ = model.summary()
                    }
                    lastSummary = now
                }
                if case .table(let title) = output {
                    let heading = "\(title)  \(model.agentCount) agents  \(ClockTime.local(now).prefix(8))"
                    let size = StandardOutput.terminalSize() ?? (100, 30)
                    write(
                        LiveTable(title: heading, rows: model.rows(at: now), recentEvents: recent).render(
                            width: size.columns, height: size.rows))
                }
            case .events(let events):
                for event in events {
                    switch output {
                    case .json:
                        write(event.json.serialized() + "\n")
                    case .lines:
                        write(event.line + "\n")
                    case .summary:
                        continue
                    case .table:
                        if case .value = event { continue }
                        recent.append(event.line)
                        if recent.count > recentEventCount { recent.removeFirst(recent.count - recentEventCount) }
                    }
                }
            }
        }
        if case .table = output { write(LiveTable.leave) }
    }

    /// Feeds what arrives from the broker into an `ObserveModel` until the task is cancelled, and hands each
    /// step's events (and a tick every `tick`, if given, the first at the start) to `handle` with the model as it is
    /// then (which it may update: a summary starts its next interval) and the time.
    /// `observe` and the web dashboard both watch the broker this way. An Associate event does not say which rule
    /// made the pair: with `asksForRules`, an association without one makes it ask the routers again (once at a time,
    /// a context switch's burst of associations costs one call), and the answer adds the rules.
    public static func follow(
        _ session: ClientSession, filter: ObserveModel.Filter, startupTimeout: Duration = .seconds(3),
        tick: Duration? = nil,
        asksForRules: Bool = false, _ handle: (inout ObserveModel, Step, Int64) async -> Void
    ) async {
        let manager = session.manager
        let (inputs, feed) = AsyncStream.makeStream(of: Input.self)
        var model = ObserveModel(filter: filter, ownAgentId: manager.identity.objectId)
        await withDiscardingTaskGroup { group in
            let presenceChanges = session.presence.changes()
            group.addTask { await session.presence.run() }
            group.addTask { for await change in presenceChanges { feed.yield(.presence(change)) } }
            if let statuses = try? manager.observeAdvertise(objectType: EdgeAgent.deviceStatusObjectType) {
                group.addTask {
                    for await advertise in statuses {
                        feed.yield(.deviceStatus(advertise.event.object, from: advertise.sourceId))
                    }
                }
            }
            let contexts = manager.observeAdvertise(coreType: .ioContext)
            group.addTask { for await advertise in contexts { feed.yield(.context(advertise.event.object)) } }
            // What was there before `observe` started: device status, contexts, coaty-edge routers' associations.
            group.addTask {
                let discover = DiscoverEvent.objectTypes([EdgeAgent.deviceStatusObjectType])
                for await resolve in manager.publishDiscover(discover, timeout: startupTimeout) {
                    if let object = resolve.event.object { feed.yield(.deviceStatus(object, from: resolve.sourceId)) }
                }
            }
            group.addTask {
                for await resolve in manager.publishDiscover(.coreTypes([.ioContext]), timeout: startupTimeout) {
                    if let object = resolve.event.object { feed.yield(.context(object)) }
                }
            }
            // Associations made before a context's Associate events are observed would be missed: the routers are
            // asked for theirs after each new subscription (the broker handles this connection's SUBSCRIBE first).
            @Sendable func routerAnswers() async {
                guard
                    let answers = try? manager.publishCall(
                        CallEvent(operation: IoRouter.associationsOperation), timeout: startupTimeout)
                else { return }
                for await returned in answers {
                    guard case .result(let result) = returned.event.outcome else { continue }
                    var answer = RouterReport.Answer(routerAgentId: returned.sourceId, result: result)
                    // An answer holds what fits into one message (about 190 associations): the rest of a large
                    // router's are read page after page; if that fails, what arrived is shown.
                    if answer.nextOffset != nil,
                        let whole = try? await RouterReport.complete(
                            answer, manager: manager, query: IoAssociationQuery(), timeout: startupTimeout)
                    {
                        answer = whole
                    }
                    feed.yield(.router(answer))
                }
            }
            if let context = filter.context, let associates = try? manager.observeAssociate(ioContextName: context) {
                group.addTask { for await associate in associates { feed.yield(.associate(associate)) } }
            }
            group.addTask { await routerAnswers() }
            if let tick {
                group.addTask {
                    while !Task.isCancelled {
                        feed.yield(.redraw)
                        try? await Task.sleep(for: tick)
                    }
                }
            }

            var isAskingRouters = false
            for await input in inputs {
                let now = ClockTime.now()
                var changes = ObserveModel.Changes()
                switch input {
                case .presence(let change):
                    changes = model.apply(change, at: now)
                case .associate(let received):
                    changes = model.apply(received.event, routerId: received.sourceId, at: now)
                case .value(let route, let payload):
                    changes.events = model.applyValue(payload, on: route, at: now).map { [$0] } ?? []
                case .deviceStatus(let object, let agentId):
                    changes.events = model.apply(deviceStatus: object, from: agentId, at: now).map { [$0] } ?? []
                case .context(let object):
                    changes = model.apply(context: object.json, at: now)
                case .router(let answer):
                    changes = model.applyRouterAssociations(answer.result, routerId: answer.routerAgentId, at: now)
                case .routerAnswersDone:
                    isAskingRouters = false
                case .redraw:
                    await handle(&model, .tick, now)
                }
                let lacksRule = changes.events.contains { event in
                    if case .associated(let change) = event { return change.rule == nil }
                    return false
                }
                if asksForRules && lacksRule && !isAskingRouters {
                    isAskingRouters = true
                    group.addTask {
                        // The rest of the burst first.
                        try? await Task.sleep(for: .milliseconds(200))
                        await routerAnswers()
                        feed.yield(.routerAnswersDone)
                    }
                }
                for route in changes.newRoutes {
                    guard let values = try? manager.observeIoRoute(route) else { continue }
                    group.addTask { for await payload in values { feed.yield(.value(route: route, payload: payload)) } }
                }
                for context in changes.newContexts where context != filter.context {
                    guard let associates = try? manager.observeAssociate(ioContextName: context) else { continue }
                    group.addTask { for await associate in associates { feed.yield(.associate(associate)) } }
                    group.addTask { await routerAnswers() }
                }
                if !changes.events.isEmpty { await handle(&model, .events(changes.events), now) }
            }
            group.cancelAll()
        }
    }
}
