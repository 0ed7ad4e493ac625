import CoatyEdgeCLI
import CoatyJSON
import CoatySharedObjects

/// What the dashboard knows, and the pages that follow it: the observe model (agents, routes, contexts, last
/// values), each source's value history, the shared objects, and one stream of server-sent events per open page.
///
/// A page gets a snapshot first (the model replayed as events, the histories and the shared objects), then every
/// event as `observe --json` writes it. A page that cannot keep up (its buffer of `pageBuffer` messages is full) is
/// dropped; its browser reconnects and starts again from a snapshot, so memory stays bounded.
public actor DashboardHub {
    public let settings: DashboardSettings
    /// The model as of the last change other than a value: handing it over on every value would make the session copy
    /// its tables on its next change (copy on write), so the last values are kept here instead.
    private var model: ObserveModel?
    private var lastValues: [String: JSONObject] = [:]
    private var histories: [String: ValueHistory] = [:]
    private var sharedObjects: [String: SharedObjectState] = [:]
    private var brokerOnline = false
    private var pages: [Int: AsyncStream<String>.Continuation] = [:]
    private var nextPage = 0
    private var isClosed = false

    static let pageBuffer = 4096
    /// The browser reconnects this many ms after a stream ends.
    static let reconnectDelay = 1000

    public init(settings: DashboardSettings) {
        self.settings = settings
    }

    public var pageCount: Int { pages.count }

    // MARK: - Inputs

    /// A step of `ObserveSession.follow`, with the model when anything but values changed.
    public func apply(_ model: ObserveModel?, step: ObserveSession.Step, at time: Int64) {
        if let model { self.model = model }
        switch step {
        case .tick:
            // A comment line: keeps proxies from closing an idle stream, and finds pages that have gone.
            broadcast(": \(time)\n\n")
        case .events(let events):
            for event in events {
                switch event {
                case .value(let seen):
                    if let number = Self.number(seen.value) { record(number, of: seen.sourceId, at: seen.time) }
                    lastValues[seen.sourceId] = event.json
                case .agentLeft(let agent):
                    for source in agent.sources {
                        histories[source.id] = nil
                        lastValues[source.id] = nil
                    }
                    for (objectId, object) in sharedObjects where object.hostId == agent.agentId {
                        sharedObjects[objectId] = nil
                        broadcast(Self.message(["event": "sharedObjectGone", "objectId": .string(objectId)]))
                    }
                default:
                    break
                }
                broadcast(Self.message(event.json))
            }
        }
    }

    package func apply(sharedObject state: SharedObjectState) {
        let previous = sharedObjects.updateValue(state, forKey: state.objectId)
        guard previous?.version != state.version || previous?.data != state.data else { return }
        broadcast(Self.message(Self.json(state)))
    }

    public func removeSharedObjects(_ objectIds: [String]) {
        for objectId in objectIds where sharedObjects.removeValue(forKey: objectId) != nil {
            broadcast(Self.message(["event": "sharedObjectGone", "objectId": .string(objectId)]))
        }
    }

    public func setBrokerOnline(_ online: Bool) {
        guard online != brokerOnline else { return }
        brokerOnline = online
        broadcast(Self.message(["event": "broker", "online": .bool(online)]))
    }

    // MARK: - Pages

    /// A new page's stream: the snapshot, then every event, until the page goes or falls behind.
    public func subscribe(now: Int64) -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: String.self, bufferingPolicy: .bufferingOldest(Self.pageBuffer))
        guard !isClosed else {
            continuation.finish()
            return stream
        }
        let id = nextPage
        nextPage += 1
        continuation.yield("retry: \(Self.reconnectDelay)\n\n")
        continuation.yield("event: snapshot\ndata: \(snapshot(at: now).serialized())\n\n")
        pages[id] = continuation
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        return stream
    }

    /// Ends every page's stream (the server waits for open responses when it stops) and refuses new ones.
    public func close() {
        isClosed = true
        for page in pages.values { page.finish() }
        pages = [:]
    }

    private func unsubscribe(_ id: Int) {
        pages[id] = nil
    }

    /// Everything a page needs to start: the model's replay, the histories, the shared objects.
    public func snapshot(at time: Int64) -> JSONValue {
        // The model's replay without its values, which may be older than the last ones seen here.
        var events = (model?.replay(at: time) ?? []).filter { $0.kind != "value" }.map(\.json)
        events += lastValues.sorted { $0.key < $1.key }.map(\.value)
        var histories: JSONObject = [:]
        for (sourceId, history) in self.histories.sorted(by: { $0.key < $1.key }) {
            histories[sourceId] = .array(
                history.buckets.map { bucket in
                    .array([
                        .number(Double(bucket.time)), .number(bucket.mean), .number(bucket.minimum),
                        .number(bucket.maximum), .number(Double(bucket.count)),
                    ])
                })
        }
        return [
            "time": .number(Double(time)),
            "broker": ["online": .bool(brokerOnline)],
            "history": [
                "window": .number(Double(settings.historyWindow)),
                "bucketWidth": .number(
                    Double(ValueHistory(window: settings.historyWindow, capacity: settings.historyBuckets).bucketWidth)),
                "sources": .object(histories),
            ],
            "events": .array(events.map(JSONValue.object)),
            "sharedObjects": .array(
                sharedObjects.values.sorted { ($0.name, $0.objectId) < ($1.name, $1.objectId) }.map {
                    .object(Self.json($0))
                }),
        ]
    }

    private func broadcast(_ message: String) {
        for (id, page) in pages {
            if case .dropped = page.yield(message) {
                // Behind by a whole buffer: end its stream; the browser reconnects and gets a fresh snapshot.
                page.finish()
                pages[id] = nil
            }
        }
    }

    private func record(_ value: Double, of sourceId: String, at time: Int64) {
        if histories[sourceId] == nil {
            guard histories.count < settings.maximumHistories else { return }
            histories[sourceId] = ValueHistory(window: settings.historyWindow, capacity: settings.historyBuckets)
        }
        histories[sourceId]?.record(value, at: time)
    }

    // MARK: - Formats

    /// A number to chart: a JSON number, or a boolean as 1 or 0 (a GPIO input).
    static func number(_ value: ObservedValue) -> Double? {
        guard case .json(let json) = value else { return nil }
        switch json {
        case .number(let number): return number
        case .bool(let flag): return flag ? 1 : 0
        default: return nil
        }
    }

    static func message(_ json: JSONObject) -> String {
        "data: \(json.serialized())\n\n"
    }

    static func json(_ state: SharedObjectState) -> JSONObject {
        var json: JSONObject = [
            "event": "sharedObject", "objectId": .string(state.objectId), "name": .string(state.name),
            "hostId": .string(state.hostId),
            "version": .number(Double(state.version)), "data": .object(state.data), "readOnly": .bool(state.isReadOnly),
        ]
        json.set("expiryMinutes", ifPresent: state.expiryMinutes.map(JSONValue.number))
        return json
    }
}
