import CoatyEdgeCLI
import CoatyFiles
import CoatyJSON
import FoundationEssentials
import HTTPTypes
import Hummingbird

/// The dashboard's HTTP side (Hummingbird): the page, the charting library from Debian's files, the event stream
/// and the IO context control.
///
/// - `GET /`, `/dashboard.js`, `/dashboard.css`: the page, embedded in the program at build time;
/// - `GET /lib/dygraph.min.js`, `/lib/dygraph.min.css`: Debian's libjs-dygraphs, read from its installed files;
/// - `GET /events`: server-sent events (a snapshot, then every event);
/// - `GET /api/state`: the snapshot as one JSON object (for scripts);
/// - `POST /api/context` `{"context", "key", "value", "expectedVersion"?}`: the Update of `coaty-edge context set`.
///   It needs the header `X-Coaty-Dashboard: 1`, which a page of another site cannot send without asking.
public enum DashboardServer {
    /// Changes the IO context; answers the line `context set` prints, or throws its `CommandFailure`.
    public typealias ContextChange =
        @Sendable (_ context: String?, _ key: String, _ value: JSONValue, _ expectedVersion: Int?) async throws ->
        String

    static let maximumRequestBody = 64 * 1024

    public static func router(hub: DashboardHub, changeContext: @escaping ContextChange) -> Router<BasicRequestContext>
    {
        let router = Router()
        router.add(middleware: SecurityMiddleware(token: hub.settings.token))
        router.get("/") { _, _ in page(PackageResources.dashboard_html, type: "text/html; charset=utf-8") }
        router.get("/dashboard.js") { _, _ in
            page(PackageResources.dashboard_js, type: "text/javascript; charset=utf-8")
        }
        router.get("/dashboard.css") { _, _ in page(PackageResources.dashboard_css, type: "text/css; charset=utf-8") }
        let library = ChartLibrary(directory: hub.settings.chartLibraryDirectory)
        router.get("/lib/:file") { _, context in
            let name = context.parameters.get("file") ?? ""
            guard let (bytes, type) = library.file(name) else { return Response(status: .notFound) }
            return page(bytes, type: type, cache: "max-age=3600")
        }
        router.get("/events") { _, _ in
            let stream = await hub.subscribe(now: ClockTime.now())
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return Response(
                status: .ok, headers: headers,
                body: ResponseBody { writer in
                    for await message in stream {
                        try await writer.write(ByteBuffer(string: message))
                    }
                    try await writer.finish(nil)
                })
        }
        router.get("/api/state") { _, _ in
            json(.ok, await hub.snapshot(at: ClockTime.now()))
        }
        router.post("/api/context") { request, _ in
            var request = request
            guard request.headers[HTTPField.Name("X-Coaty-Dashboard")!] == "1" else {
                return json(.forbidden, ["ok": false, "error": "the request needs the header X-Coaty-Dashboard: 1"])
            }
            let body: ByteBuffer
            do {
                body = try await request.collectBody(upTo: maximumRequestBody)
            } catch {
                return json(
                    .contentTooLarge,
                    ["ok": false, "error": .string("the request is larger than \(maximumRequestBody) bytes")])
            }
            let change: (context: String?, key: String, value: JSONValue, expectedVersion: Int?)
            do {
                change = try contextChange(Array(buffer: body))
            } catch {
                return json(.badRequest, ["ok": false, "error": .string("\(error)")])
            }
            do {
                let line = try await changeContext(change.context, change.key, change.value, change.expectedVersion)
                return json(.ok, ["ok": true, "result": .string(line)])
            } catch let failure as CommandFailure {
                let status: HTTPResponse.Status = failure.status == .usage ? .badRequest : .conflict
                return json(status, ["ok": false, "error": .string(failure.description)])
            }
        }
        return router
    }

    /// `{"context"?: name, "key": text, "value": text (JSON, or else a string, as on the command line) or any
    /// JSON, "expectedVersion"?: N}`.
    static func contextChange(_ body: [UInt8]) throws(CommandFailure) -> (String?, String, JSONValue, Int?) {
        guard let request = try? JSONValue(parsing: body), request.objectValue != nil else {
            throw CommandFailure(.usage, "the request is not a JSON object")
        }
        guard let key = request["key"]?.stringValue else { throw CommandFailure(.usage, "the request has no key") }
        if let refusal = ContextCommands.refusal(forKey: key) { throw CommandFailure(.usage, refusal) }
        guard let given = request["value"] else { throw CommandFailure(.usage, "the request has no value") }
        let value = given.stringValue.map(ContextCommands.parseValue) ?? given
        var expectedVersion: Int?
        if let version = request["expectedVersion"], version != .null {
            guard let number = version.intValue, number >= 0 else {
                throw CommandFailure(.usage, "expectedVersion must be a whole number, at least 0")
            }
            expectedVersion = number
        }
        let context = request["context"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        return (context, key, value, expectedVersion)
    }

    static func page(_ bytes: [UInt8], type: String, cache: String = "no-cache") -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = cache
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func json(_ status: HTTPResponse.Status, _ value: JSONValue) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(
            status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: value.serialized())))
    }
}

/// Debian's libjs-dygraphs, read once from its installed files; missing files make the page show values as text only.
struct ChartLibrary: Sendable {
    static let files = [
        "dygraph.min.js": "text/javascript; charset=utf-8", "dygraph.min.css": "text/css; charset=utf-8",
    ]
    let contents: [String: [UInt8]]

    init(directory: String) {
        var contents: [String: [UInt8]] = [:]
        for name in Self.files.keys {
            contents[name] = try? BoundedFile.contents(of: directory + "/" + name, limit: 4 * 1024 * 1024)
        }
        self.contents = contents
    }

    func file(_ name: String) -> ([UInt8], String)? {
        guard let bytes = contents[name], let type = Self.files[name] else { return nil }
        return (bytes, type)
    }
}

/// Asks for the token when there is one (HTTP basic auth with the token as password, any user name, or
/// `Authorization: Bearer TOKEN`), and tells browsers not to frame the page or guess types.
struct SecurityMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        if let token, !TokenCheck.authorizes(request.headers[.authorization], token: token) {
            var headers = HTTPFields()
            headers[.wwwAuthenticate] = "Basic realm=\"coaty-edge dashboard\", charset=\"UTF-8\""
            return Response(status: .unauthorized, headers: headers)
        }
        var response = try await next(request, context)
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        response.headers[.contentSecurityPolicy] =
            "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:"
        return response
    }
}

/// The token, given as `Authorization: Bearer TOKEN` or as the password of HTTP basic auth (any user name).
enum TokenCheck {
    static func authorizes(_ header: String?, token: String) -> Bool {
        guard let header else { return false }
        if header.hasPrefix("Bearer ") { return constantTimeEqual(Array(header.utf8.dropFirst(7)), Array(token.utf8)) }
        guard header.hasPrefix("Basic "), let decoded = Data(base64Encoded: String(header.dropFirst(6))),
            let colon = decoded.firstIndex(of: UInt8(ascii: ":"))
        else { return false }
        return constantTimeEqual(Array(decoded[decoded.index(after: colon)...]), Array(token.utf8))
    }

    /// Compares without stopping at the first difference, so that the time taken does not tell how much matched.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }
}
