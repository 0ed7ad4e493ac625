import CoatyJSON

/// What a GPIO input publishes for each logical state: `true` and `false` unless configured otherwise
/// (`"open"`/`"closed"`, `1`/`0`, ...).
public struct InputMapping: Sendable, Hashable {
    public var active: JSONValue
    public var inactive: JSONValue

    public init(active: JSONValue, inactive: JSONValue) {
        self.active = active
        self.inactive = inactive
    }

    public static let boolean = InputMapping(active: true, inactive: false)

    public func value(for isActive: Bool) -> JSONValue {
        isActive ? active : inactive
    }
}

/// The values a GPIO input publishes as an IoSource: its state when iteration starts, then every debounced
/// change, each mapped to its value. A repeated state is not published twice. The sequence throws when the
/// line fails; the line then has to be requested again.
public struct InputValues: AsyncSequence, Sendable {
    public typealias Element = JSONValue
    public typealias Failure = any Error

    public let input: any DigitalInput
    public let mapping: InputMapping

    public init(input: any DigitalInput, mapping: InputMapping) {
        self.input = input
        self.mapping = mapping
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(input: input, mapping: mapping)
    }

    public struct Iterator: AsyncIteratorProtocol {
        private let input: any DigitalInput
        private let mapping: InputMapping
        private var changes: AsyncThrowingStream<Bool, any Error>.AsyncIterator?
        private var last: Bool?

        init(input: any DigitalInput, mapping: InputMapping) {
            self.input = input
            self.mapping = mapping
        }

        public mutating func next() async throws -> JSONValue? {
            guard var changes else {
                // Subscribe before reading, so that a change between the two is not lost.
                let subscription = input.changes().makeAsyncIterator()
                let state = try input.read()
                changes = subscription
                last = state
                return mapping.value(for: state)
            }
            defer { self.changes = changes }
            while let state = try await changes.next() {
                if state != last {
                    last = state
                    return mapping.value(for: state)
                }
            }
            return nil
        }
    }
}
