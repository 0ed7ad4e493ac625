import CoatyJSON

/// Why an operation on a shared object failed: with the key and value it was about, and a message for people.
public struct SharedObjectFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        /// No agent hosts an object of that name.
        case unknownObject
        /// The object was deleted (or expired).
        case deleted
        /// Its host is gone, or has not answered yet.
        case unavailable
        /// The host did not answer in time.
        case noAnswer
        /// The client's expected version is not the object's.
        case staleVersion
        case tooLarge
        /// The object is read-only for everyone but its host.
        case notAllowed
        /// A deletion of a key the object does not have.
        case unknownKey
        /// The request or name is not well formed.
        case malformed
    }

    public var reason: Reason
    public var key: String?
    public var value: JSONValue?
    public var message: String

    public init(_ reason: Reason, key: String? = nil, value: JSONValue? = nil, _ message: String) {
        self.reason = reason
        self.key = key
        self.value = value
        self.message = message
    }

    public var description: String { message }
}
