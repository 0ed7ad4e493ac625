/// A GPIO output line. `isActive` is the logical state: the line's active-low setting decides the level.
public protocol DigitalOutput: Sendable {
    var label: String { get }
    func set(active: Bool) throws(GPIOError)
}

/// A GPIO input line delivering debounced logical state changes.
public protocol DigitalInput: Sendable {
    var label: String { get }
    /// The logical state now.
    func read() throws(GPIOError) -> Bool
    /// Every debounced change of the logical state, in order.
    func changes() -> AsyncThrowingStream<Bool, any Error>
}

public enum GPIOError: Error, Sendable, Hashable, CustomStringConvertible {
    case noChip(String)
    case lineUnavailable(String)
    case io(errno: Int32, String)

    public var description: String {
        switch self {
        case .noChip(let detail): "no GPIO chip: \(detail)"
        case .lineUnavailable(let detail): "GPIO line unavailable: \(detail)"
        case .io(let errno, let detail): "GPIO I/O error \(errno): \(detail)"
        }
    }
}
