import CoatyTestSupport
import Foundation

/// Polls `condition` until it holds; the limit only guards against hanging.
func waitUntil(_ what: String, within limit: Duration = .seconds(20), _ condition: () async throws -> Bool) async throws
{
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw SocketError("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// The JSON lines a child has printed so far, once at least `count` of them satisfy `predicate`.
@discardableResult
func waitForJSONLines(
    _ child: CoatyTestSupport.ChildProcess, count: Int = 1, within limit: Duration = .seconds(20),
    where predicate: ([String: Any]) -> Bool
) async throws -> [[String: Any]] {
    let deadline = ContinuousClock.now + limit
    while true {
        let lines = jsonLines(child.output.text)
        if lines.filter(predicate).count >= count { return lines }
        guard ContinuousClock.now < deadline else {
            throw SocketError(
                "timed out waiting for \(count) matching lines; \(child.command) printed:\n\(child.output.text)\(child.errors.text)"
            )
        }
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// A value from `jsonLines` as JSON text with sorted keys, to compare with an expected text (Foundation's numbers
/// and dictionaries do not compare with Swift literals the same way on every platform).
func canonicalJSON(_ value: Any?) -> String? {
    guard let value,
        let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
    else { return nil }
    return String(decoding: data, as: UTF8.self)
}
