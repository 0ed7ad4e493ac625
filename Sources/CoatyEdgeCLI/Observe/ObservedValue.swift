import CoatyJSON

/// A value seen on an IO route: JSON, or bytes for raw sources and payloads that are not JSON.
public enum ObservedValue: Sendable, Hashable {
    case json(JSONValue)
    case bytes([UInt8])

    /// Raw sources send bytes as they are; anything else should be JSON, and is shown as bytes if it is not.
    public init(payload: [UInt8], isRaw: Bool) {
        if !isRaw, let json = try? JSONValue(parsing: payload) {
            self = .json(json)
        } else {
            self = .bytes(payload)
        }
    }

    /// JSON as JSON text; bytes as their length and the first bytes in hex: `<5 bytes> 68656c6c6f`.
    public func display(maximumBytes: Int = 16) -> String {
        switch self {
        case .json(let value):
            return value.serialized()
        case .bytes(let bytes):
            let shown = bytes.prefix(maximumBytes).map(Self.hex).joined()
            return "<\(bytes.count) bytes>"
                + (shown.isEmpty ? "" : " " + shown + (bytes.count > maximumBytes ? "…" : ""))
        }
    }

    /// The members that describe the value in a JSON event: `"value"`, or `"bytes"` (hex) and `"length"`.
    var jsonMembers: [(String, JSONValue)] {
        switch self {
        case .json(let value): [("value", value)]
        case .bytes(let bytes):
            [("bytes", .string(bytes.map(Self.hex).joined())), ("length", .number(Double(bytes.count)))]
        }
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
    }
}

/// Values per second over a sliding window, from the arrival times of the values (milliseconds).
public struct RateWindow: Sendable, Hashable {
    public let window: Int64
    /// When watching began; until a whole window has passed, the rate is over the time watched.
    public let start: Int64
    private var arrivals: [Int64] = []
    private var first = 0

    public init(window: Int64 = 10_000, start: Int64) {
        self.window = window
        self.start = start
    }

    public mutating func record(_ time: Int64) {
        arrivals.append(time)
        drop(before: time - window)
    }

    /// Values per second at `time`, nil until a second has been watched (too little to say).
    public func rate(at time: Int64) -> Double? {
        let span = min(window, time - start)
        guard span >= 1000 else { return nil }
        let count = arrivals[first...].reversed().prefix { $0 > time - span }.count
        return Double(count) * 1000 / Double(span)
    }

    private mutating func drop(before cutoff: Int64) {
        while first < arrivals.count && arrivals[first] <= cutoff { first += 1 }
        // Compact now and then, so that the buffer holds about one window.
        if first > 64 && first * 2 > arrivals.count {
            arrivals.removeFirst(first)
            first = 0
        }
    }
}
