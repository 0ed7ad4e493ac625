import CGPIOD
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The consumer label this agent's line requests carry; `gpioinfo` shows it.
public let gpioConsumerLabel = "coaty-edge"

/// One requested GPIO line with a chip handle of its own: libgpiod 1.6 keeps per-line state in the chip
/// object and is not safe to share between threads, so every line opens the chip itself. Closing the chip
/// releases the line.
final class GPIOLineHandle: @unchecked Sendable {
    let location: String
    private let chip: OpaquePointer
    private let line: OpaquePointer
    /// Serialises the libgpiod calls on the line; `chip` and `line` are used only inside it.
    private let lock = Mutex(())

    /// Opens the chip and requests the line with `request`, which returns 0 or -1 with errno as libgpiod does.
    init(chipPath: String, offset: Int, request: (OpaquePointer) -> Int32) throws(GPIOError) {
        location = "line \(offset) of \(chipPath)"
        guard let chip = gpiod_chip_open(chipPath) else {
            let code = errno
            let reason = code == ENODEV || code == ENOTTY ? "not a GPIO character device" : describe(code)
            throw .noChip("cannot open \(chipPath): \(reason)")
        }
        let lineCount = Int(gpiod_chip_num_lines(chip))
        guard (0..<lineCount).contains(offset), let line = gpiod_chip_get_line(chip, UInt32(offset)) else {
            gpiod_chip_close(chip)
            throw .lineUnavailable("\(chipPath) has no line \(offset); its lines are 0...\(lineCount - 1)")
        }
        guard request(line) == 0 else {
            let code = errno
            let holder = gpiod_line_update(line) == 0 ? gpiod_line_consumer(line).map { String(cString: $0) } : nil
            gpiod_chip_close(chip)
            if code == EBUSY {
                throw .lineUnavailable(
                    "line \(offset) of \(chipPath) is in use by \(holder.map { "\"\($0)\"" } ?? "another consumer")")
            }
            throw .io(errno: code, "cannot request line \(offset) of \(chipPath): \(describe(code))")
        }
        self.chip = chip
        self.line = line
    }

    deinit {
        gpiod_chip_close(chip)
    }

    /// The logical value (active-low already applied by the kernel).
    func value() throws(GPIOError) -> Bool {
        let value = lock.withLock { _ in gpiod_line_get_value(line) }
        guard value >= 0 else { throw .io(errno: errno, "cannot read \(location): \(describe(errno))") }
        return value == 1
    }

    func setValue(_ active: Bool) throws(GPIOError) {
        let result = lock.withLock { _ in gpiod_line_set_value(line, active ? 1 : 0) }
        guard result == 0 else { throw .io(errno: errno, "cannot set \(location): \(describe(errno))") }
    }

    /// The file descriptor that edge events arrive on; valid while the handle lives.
    func eventDescriptor() -> Int32 {
        lock.withLock { _ in gpiod_line_event_get_fd(line) }
    }

    /// Reads the pending edge events into `buffer`; returns how many there were.
    func readEvents(into buffer: inout [gpiod_line_event]) throws(GPIOError) -> Int {
        let count = lock.withLock { _ in
            buffer.withUnsafeMutableBufferPointer { events in
                gpiod_line_event_read_multiple(line, events.baseAddress, UInt32(events.count))
            }
        }
        guard count >= 0 else { throw .io(errno: errno, "cannot read edge events of \(location): \(describe(errno))") }
        return Int(count)
    }

    /// Reads the pending edge events: true for a rising edge (the line became active), false for a falling one.
    func readEdges(into buffer: inout [gpiod_line_event]) throws(GPIOError) -> [Bool] {
        let count = try readEvents(into: &buffer)
        return buffer[..<count].map { Int($0.event_type) == GPIOD_LINE_EVENT_RISING_EDGE }
    }
}
