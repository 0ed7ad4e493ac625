import CoatyIORouting
import CoatyJSON
import CoatyModel

/// `coaty-edge context get|set`: the shared IoContexts of the routers, read with Discover and changed with Update.
public enum ContextCommands {
    /// Members that identify the context or that its router keeps; `set` does not change them.
    static let protectedKeys: Set<String> = [
        "coreType", "objectType", "objectId", "name", "parentObjectId", IoRouter.versionProperty,
        IoRouter.expectedVersionProperty,
    ]

    /// The IoContexts that answer within `timeout` (all of them, or those named `name`), by name.
    public static func discover(_ session: ClientSession, name: String?, timeout: Duration) async -> [IoContext] {
        var found: [String: IoContext] = [:]
        for await resolve in session.manager.publishDiscover(.coreTypes([.ioContext]), timeout: timeout) {
            guard let object = resolve.event.object, let context = try? IoContext(object) else { continue }
            guard name == nil || context.name == name else { continue }
            found[context.objectId] = context
        }
        return found.values.sorted { ($0.name, $0.objectId) < ($1.name, $1.objectId) }
    }

    /// VALUE as JSON when it is valid JSON (`21.5`, `true`, `"on"`, `{"a": 1}`), else as a string (`on`).
    public static func parseValue(_ text: String) -> JSONValue {
        (try? JSONValue(parsing: text)) ?? .string(text)
    }

    /// Why a key cannot be set, or nil.
    public static func refusal(forKey key: String) -> String? {
        guard !key.isEmpty else { return "the key is empty" }
        guard protectedKeys.contains(key) else { return nil }
        switch key {
        case IoRouter.versionProperty: return "\(key) is kept by the router: it counts the accepted changes"
        case IoRouter.expectedVersionProperty: return "\(key) asks the router for a check: use --expected-version"
        default: return "\(key) identifies the context and cannot be changed"
        }
    }

    public enum Outcome: Sendable, Hashable {
        case completed(IoContext)
        case refused(String)
        case noAnswer
    }

    /// Sends an Update of the whole context with `key` set to `value` and waits for the router's Complete. With
    /// `expectedVersion` the router refuses the change unless the context is still at that version; without it the
    /// change is accepted whatever happened since the context was read, as Coaty JS agents update a context.
    public static func set(
        _ session: ClientSession, context: IoContext, key: String, value: JSONValue, expectedVersion: Int? = nil,
        timeout: Duration
    ) async throws -> Outcome {
        var updated = context
        updated[key] = value
        if let expectedVersion { updated[IoRouter.expectedVersionProperty] = .number(Double(expectedVersion)) }
        for await complete in try session.manager.publishUpdate(UpdateEvent(object: updated.object), timeout: timeout) {
            if let reason = complete.event.privateData?["refused"]?.stringValue {
                return .refused(reason)
            }
            guard let result = try? IoContext(complete.event.object) else { continue }
            return .completed(result)
        }
        return .noAnswer
    }

    /// `coaty-edge context set` (and the dashboard's control): finds the context (the one named, or the only one
    /// that answers), sets `key` to `value` and says the new version, or fails with why not: no such context,
    /// several contexts and no name, the router's refusal, no answer.
    public static func setProperty(
        _ session: ClientSession, contextName name: String?, key: String, value: JSONValue, expectedVersion: Int? = nil,
        timeout: Duration
    ) async throws -> String {
        if let refusal = refusal(forKey: key) { throw CommandFailure(.usage, refusal) }
        let contexts = await discover(session, name: name, timeout: timeout)
        guard let target = contexts.first else {
            throw CommandFailure(
                .failure, "no IO context\(name.map { " named \($0)" } ?? "") answered within \(timeout)")
        }
        guard contexts.count == 1 else {
            let names = contexts.map { "\($0.name) (\($0.objectId))" }.joined(separator: ", ")
            throw CommandFailure(.usage, "several IO contexts answered: \(names); choose one with --context")
        }
        switch try await set(
            session, context: target, key: key, value: value, expectedVersion: expectedVersion, timeout: timeout)
        {
        case .completed(let updated):
            return "\(updated.name): \(key) = \(value.serialized()) (version \(version(of: updated)))"
        case .refused(let reason):
            throw CommandFailure(.failure, "\(target.name): the router refused the update: \(reason)")
        case .noAnswer:
            throw CommandFailure(.failure, "\(target.name): no router answered the update within \(timeout)")
        }
    }

    /// The context's version; a context no Update has changed yet has none, which its router counts as 0.
    public static func version(of context: IoContext) -> Int {
        context[IoRouter.versionProperty]?.intValue ?? 0
    }

    /// `NAME version N (objectId ..., router ...)` and one `key: value` line per application property.
    public static func text(_ context: IoContext) -> String {
        let version = "version \(version(of: context))"
        let router = context.parentObjectId.map { ", router \($0)" } ?? ""
        var lines = ["\(context.name)  \(version)  (objectId \(context.objectId)\(router))"]
        for member in context.object.json.members where !ContextFormat.coreMembers.contains(member.key) {
            lines.append("  \(member.key): \(member.value.serialized())")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
