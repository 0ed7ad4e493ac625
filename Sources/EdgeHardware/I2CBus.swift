import CI2C
import DetachedThread
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An open I2C adapter, `/dev/i2c-<n>`, with a thread of its own that makes its transfers. The chips on one bus
/// share one `I2CBus`.
///
/// A transfer blocks the thread that makes it until the adapter's driver completes it or gives up, after the
/// adapter's timeout (1 s unless the driver sets another: the kernel's default, which the Raspberry Pi's
/// `i2c-bcm2835` keeps). So that a hung bus stalls no task, every transfer runs on the bus's thread (named after the
/// device node, `i2c-1`), one at a time in the order they were asked for (the chip address an SMBus call goes to is
/// state of the open file), and the calling task awaits the result without holding a thread. A process has one such
/// thread per open bus; a hung transfer holds only its own bus's thread, and the transfers queued behind it hold none.
/// A task cancelled while its transfer waits for its turn takes the transfer out of the queue (its read fails with
/// ECANCELED); a transfer that has started ends as the adapter ends it.
///
/// The thread starts when the bus opens and ends when the bus goes (its last reference): it makes the transfers
/// asked for until then, closes the device and ends. Waits for conversions are `Task.sleep`s in the drivers.
public final class I2CBus: Sendable {
    public let path: String
    private let queue = TransferQueue()

    public init(path: String) throws(SensorError) {
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENODEV || code == ENXIO {
                throw .noDevice("cannot open I2C bus \(path): \(describe(code)) (is the I2C interface enabled?)")
            }
            throw .io(errno: code, "cannot open I2C bus \(path): \(describe(code))")
        }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let started = startDetachedThread(named: name) { [queue] in
            var line = BusLine(descriptor: descriptor)
            while let transfer = queue.next() { transfer.run(&line) }
            close(descriptor)
        }
        guard started == 0 else {
            close(descriptor)
            throw .io(errno: started, "cannot start the thread of I2C bus \(path): \(describe(started))")
        }
        self.path = path
    }

    public convenience init(number: Int) throws(SensorError) {
        try self.init(path: "/dev/i2c-\(number)")
    }

    /// Ends the thread once it has made the transfers asked for; it closes the device.
    deinit {
        queue.close()
    }

    /// Runs an SMBus call for `address` on the bus's thread; `call` returns a negative errno on failure, as libi2c
    /// does, and what else it read.
    func smbus<Value: Sendable>(
        _ address: UInt8, _ operation: @autoclosure () -> String,
        _ call: @escaping @Sendable (_ descriptor: Int32) -> (result: Int32, value: Value)
    ) async throws(SensorError) -> (result: Int32, value: Value) {
        let outcome = await onBusThread { line -> Result<(result: Int32, value: Value), BusFailure> in
            if let failure = line.select(address) { return .failure(failure) }
            let (result, value) = call(line.descriptor)
            return result < 0 ? .failure(BusFailure(code: -result)) : .success((result, value))
        }
        return try outcome.mapError { failure($0.code, address, operation()) }.get()
    }

    /// An SMBus call that returns what it read as its result.
    func smbus(
        _ address: UInt8, _ operation: @autoclosure () -> String,
        _ call: @escaping @Sendable (_ descriptor: Int32) -> Int32
    ) async throws(SensorError) -> Int32 {
        try await smbus(address, operation()) { descriptor in (call(descriptor), ()) }.result
    }

    /// Runs one I2C_RDWR transfer on the bus's thread: a write of `bytes` if any, then a read of `readCount` bytes if
    /// any, joined by a repeated start. Returns the bytes read.
    func transfer(_ address: UInt8, _ operation: @autoclosure () -> String, writing bytes: [UInt8], readCount: Int)
        async throws(SensorError) -> [UInt8]
    {
        let outcome = await onBusThread { line -> Result<[UInt8], BusFailure> in
            var buffer = bytes + [UInt8](repeating: 0, count: readCount)
            let code = buffer.withUnsafeMutableBufferPointer { buffer -> Int32 in
                guard let start = buffer.baseAddress else { return EINVAL }
                var messages: [i2c_msg] = []
                if !bytes.isEmpty {
                    messages.append(i2c_msg(addr: UInt16(address), flags: 0, len: UInt16(bytes.count), buf: start))
                }
                if readCount > 0 {
                    messages.append(
                        i2c_msg(
                            addr: UInt16(address), flags: UInt16(I2C_M_RD), len: UInt16(readCount),
                            buf: start + bytes.count))
                }
                return messages.withUnsafeMutableBufferPointer { messages in
                    var request = i2c_rdwr_ioctl_data(msgs: messages.baseAddress, nmsgs: UInt32(messages.count))
                    return coaty_i2c_transfer(line.descriptor, &request) < 0 ? errno : 0
                }
            }
            return code == 0 ? .success(Array(buffer[bytes.count...])) : .failure(BusFailure(code: code))
        }
        return try outcome.mapError { failure($0.code, address, operation()) }.get()
    }

    /// Runs `body` on the bus's thread after the transfers asked for before it, and returns its result; the calling
    /// task waits without holding a thread. Cancelled before its turn, it returns ECANCELED and `body` does not run.
    private func onBusThread<Value: Sendable>(
        _ body: @escaping @Sendable (inout BusLine) -> Result<Value, BusFailure>
    ) async -> Result<Value, BusFailure> {
        let cancelled = Result<Value, BusFailure>.failure(BusFailure(code: ECANCELED))
        guard !Task.isCancelled else { return cancelled }
        let id = queue.newId()
        // A cancellation between the check above and the queueing finds nothing to take out: that transfer is made.
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.add(
                    Transfer(
                        id: id, run: { line in continuation.resume(returning: body(&line)) },
                        abandon: { continuation.resume(returning: cancelled) }))
            }
        } onCancel: {
            queue.remove(id)?.abandon()
        }
    }

    private func failure(_ code: Int32, _ address: UInt8, _ operation: String) -> SensorError {
        let place = "0x\(hex(address)) on \(path)"
        // A chip that does not acknowledge its address: ENXIO from most adapters, EREMOTEIO from the
        // Raspberry Pi's and DesignWare controllers.
        if code == ENXIO || code == EREMOTEIO {
            return .noDevice("no answer from \(place) to \(operation): \(describe(code))")
        }
        return .io(errno: code, "\(operation) at \(place): \(describe(code))")
    }
}

/// What only the bus's thread touches: the open device, and the address that I2C_SLAVE last selected on it.
private struct BusLine {
    let descriptor: Int32
    var selectedAddress: UInt8?

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Selects the chip the next SMBus calls go to; nil, or the failure.
    mutating func select(_ address: UInt8) -> BusFailure? {
        guard selectedAddress != address else { return nil }
        guard coaty_i2c_set_slave_address(descriptor, Int32(address)) == 0 else {
            selectedAddress = nil
            return BusFailure(code: errno)
        }
        selectedAddress = address
        return nil
    }
}

/// An errno of a bus call.
private struct BusFailure: Error {
    var code: Int32
}

/// A transfer waiting for the bus's thread: `run` makes it and resumes its caller, `abandon` resumes its caller
/// without making it. Exactly one of them is called.
private struct Transfer: Sendable {
    var id: UInt64
    var run: @Sendable (inout BusLine) -> Void
    var abandon: @Sendable () -> Void
}

/// The transfers asked of one bus, in order, for its thread. The thread sleeps on a semaphore (a futex wait) while
/// there are none.
private final class TransferQueue: Sendable {
    private struct State {
        var transfers: [Transfer] = []
        var nextId: UInt64 = 0
        var isClosed = false
    }

    private let state = Mutex(State())
    /// Signalled once per transfer added and once for the close; a transfer taken out by `remove` leaves a signal
    /// behind, which `next` passes over.
    private let signals = DispatchSemaphore(value: 0)

    func newId() -> UInt64 {
        state.withLock { state in
            state.nextId &+= 1
            return state.nextId
        }
    }

    func add(_ transfer: Transfer) {
        let added = state.withLock { state in
            guard !state.isClosed else { return false }
            state.transfers.append(transfer)
            return true
        }
        if added { signals.signal() } else { transfer.abandon() }
    }

    /// Takes out the transfer `id` if it is still waiting.
    func remove(_ id: UInt64) -> Transfer? {
        state.withLock { state in
            guard let index = state.transfers.firstIndex(where: { $0.id == id }) else { return nil }
            return state.transfers.remove(at: index)
        }
    }

    /// The next transfer, waiting for one; nil once the queue is closed and empty.
    func next() -> Transfer? {
        while true {
            signals.wait()
            let next: Transfer?? = state.withLock { state in
                if !state.transfers.isEmpty { return state.transfers.removeFirst() }
                return state.isClosed ? .some(nil) : nil
            }
            if let next { return next }
        }
    }

    func close() {
        state.withLock { $0.isClosed = true }
        signals.signal()
    }
}

/// A chip on an I2C bus: SMBus register access (libi2c) and plain or combined I2C transfers (I2C_RDWR). Each call is
/// one transfer on the bus's thread (see `I2CBus`), which the calling task awaits.
public struct I2CDevice: Sendable {
    public let bus: I2CBus
    public let address: UInt8

    public init(bus: I2CBus, address: UInt8) {
        self.bus = bus
        self.address = address
    }

    /// "0x76 on /dev/i2c-1"
    public var location: String { "0x\(hex(address)) on \(bus.path)" }

    public func readByte(register: UInt8) async throws(SensorError) -> UInt8 {
        let value = try await bus.smbus(address, "read of register 0x\(hex(register))") {
            i2c_smbus_read_byte_data($0, register)
        }
        return UInt8(truncatingIfNeeded: value)
    }

    public func writeByte(register: UInt8, _ value: UInt8) async throws(SensorError) {
        _ = try await bus.smbus(address, "write of register 0x\(hex(register))") {
            i2c_smbus_write_byte_data($0, register, value)
        }
    }

    /// An SMBus word: low byte first on the wire.
    public func readWord(register: UInt8) async throws(SensorError) -> UInt16 {
        let value = try await bus.smbus(address, "read of register 0x\(hex(register))") {
            i2c_smbus_read_word_data($0, register)
        }
        return UInt16(truncatingIfNeeded: value)
    }

    /// An SMBus word: low byte first on the wire.
    public func writeWord(register: UInt8, _ value: UInt16) async throws(SensorError) {
        _ = try await bus.smbus(address, "write of register 0x\(hex(register))") {
            i2c_smbus_write_word_data($0, register, value)
        }
    }

    /// A 16-bit register that the chip sends high byte first, as most temperature sensors do.
    public func readBigEndianWord(register: UInt8) async throws(SensorError) -> UInt16 {
        try await readWord(register: register).byteSwapped
    }

    /// A 16-bit register that the chip takes high byte first.
    public func writeBigEndianWord(register: UInt8, _ value: UInt16) async throws(SensorError) {
        try await writeWord(register: register, value.byteSwapped)
    }

    /// An I2C block read of 1...32 consecutive registers.
    public func readBlock(register: UInt8, count: Int) async throws(SensorError) -> [UInt8] {
        precondition((1...Int(I2C_SMBUS_BLOCK_MAX)).contains(count), "an SMBus block holds 1...32 bytes")
        let (read, bytes) = try await bus.smbus(address, "read of \(count) registers from 0x\(hex(register))") {
            descriptor in
            var bytes = [UInt8](repeating: 0, count: count)
            let read = bytes.withUnsafeMutableBufferPointer {
                i2c_smbus_read_i2c_block_data(descriptor, register, UInt8(count), $0.baseAddress)
            }
            return (read, bytes)
        }
        guard read == count else {
            throw .io(errno: EIO, "short read of \(read) of \(count) registers from 0x\(hex(register)) at \(location)")
        }
        return bytes
    }

    /// An I2C block write of 1...32 bytes to consecutive registers.
    public func writeBlock(register: UInt8, _ bytes: [UInt8]) async throws(SensorError) {
        precondition((1...Int(I2C_SMBUS_BLOCK_MAX)).contains(bytes.count), "an SMBus block holds 1...32 bytes")
        _ = try await bus.smbus(address, "write of \(bytes.count) registers from 0x\(hex(register))") { descriptor in
            bytes.withUnsafeBufferPointer {
                i2c_smbus_write_i2c_block_data(descriptor, register, UInt8($0.count), $0.baseAddress)
            }
        }
    }

    /// A plain I2C write: start, address, the bytes, stop. For chips that take commands rather than registers.
    public func write(_ bytes: [UInt8]) async throws(SensorError) {
        precondition(!bytes.isEmpty, "an I2C write sends at least one byte")
        _ = try await bus.transfer(address, "write of \(bytes.count) bytes", writing: bytes, readCount: 0)
    }

    /// A plain I2C read of `count` bytes.
    public func read(count: Int) async throws(SensorError) -> [UInt8] {
        precondition(count > 0, "an I2C read takes at least one byte")
        return try await bus.transfer(address, "read of \(count) bytes", writing: [], readCount: count)
    }

    /// A write and a read joined by a repeated start, for chips that need the pair without a stop between.
    public func writeThenRead(_ bytes: [UInt8], count: Int) async throws(SensorError) -> [UInt8] {
        precondition(!bytes.isEmpty && count > 0, "a combined transfer writes and reads at least one byte each")
        return try await bus.transfer(
            address, "write of \(bytes.count) bytes and read of \(count) bytes", writing: bytes, readCount: count)
    }
}

func hex(_ value: some BinaryInteger, digits: Int = 2) -> String {
    let text = String(value, radix: 16)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}

func describe(_ code: Int32) -> String {
    String(cString: strerror(code))
}
