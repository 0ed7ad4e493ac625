import CGPIOD

/// A GPIO line driven as an output (relay, fan, LED) through libgpiod.
///
/// `active` is the logical state; with `activeLow` the kernel drives the line low for active. The line is
/// requested from the moment of creation, at the initial state, until the object goes away.
public final class GPIOOutput: DigitalOutput {
    public let label: String
    private let handle: GPIOLineHandle

    public init(chip chipPath: String, line offset: Int, activeLow: Bool = false, initiallyActive: Bool = false)
        throws(GPIOError)
    {
        let flags = activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
        handle = try GPIOLineHandle(chipPath: chipPath, offset: offset) { line in
            gpiod_line_request_output_flags(line, gpioConsumerLabel, flags, initiallyActive ? 1 : 0)
        }
        label = "GPIO output \(handle.location)"
    }

    public func set(active: Bool) throws(GPIOError) {
        try handle.setValue(active)
    }

    /// The logical state the line is driven to.
    public func isActive() throws(GPIOError) -> Bool {
        try handle.value()
    }
}
