import CI2C
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An open I2C adapter, `/dev/i2c-<n>`. The chips on one bus share one `I2CBus`: it runs one transfer at a time,
/// because the chip address an SMBus call goes to is state of the open file.
///
/// Calls block for the duration of the bus transfer (well under a millisecond at 100 kHz for a register read),
/// so drivers call them directly from async code; waits for conversions are `Task.sleep`s in the drivers.
public final class I2CBus: Sendable {
    public let path: String
    private let descriptor: Int32
    /// The address that I2C_SLAVE last selected; the lock around it serialises all transfers.
    private let selectedAddress = Mutex<UInt8?>(nil)

    public init(path: String) throws(SensorError) {
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENODEV || code == ENXIO {
                throw .noDevice("cannot open I2C bus \(path): \(describe(code)) (is the I2C interface enabled?)")
            }
            throw .io(errno: code, "cannot open I2C bus \(path): \(describe(code))")
        }
        self.path = path
        self.descriptor = descriptor
    }

    public convenience init(number: Int) throws(SensorError) {
        try self.init(path: "/dev/i2c-\(number)")
    }

    deinit {
        close(descriptor)
    }

    /// Runs an SMBus call for `address`; `call` returns a negative errno on failure, as libi2c does.
    func smbus(_ address: UInt8, _ operation: @autoclosure () -> String, _ call: (Int32) -> Int32)
        throws(SensorError) -> Int32
    {
        let result = selectedAddress.withLock { selected -> Int32 in
            if selected != address {
                guard coaty_i2c_set_slave_address(descriptor, Int32(address)) == 0 else {
                    selected = nil
                    return -errno
                }
                selected = address
            }
            return call(descriptor)
        }
        guard result >= 0 else { throw failure(-result, address, operation()) }
        return result
    }

    /// Runs one I2C_RDWR transfer: a write of `bytes` if any, then a read of `readCount` bytes if any, joined by a
    /// repeated start. Returns the bytes read.
    func transfer(_ address: UInt8, _ operation: @autoclosure () -> String, writing bytes: [UInt8], readCount: Int)
        throws(SensorError) -> [UInt8]
    {
        var buffer = bytes + [UInt8](repeating: 0, count: readCount)
        let code = selectedAddress.withLock { _ -> Int32 in
            buffer.withUnsafeMutableBufferPointer { buffer -> Int32 in
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
                    return coaty_i2c_transfer(descriptor, &request) < 0 ? errno : 0
                }
            }
        }
        if code != 0 { throw failure(code, address, operation()) }
        return Array(buffer[bytes.count...])
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

/// A chip on an I2C bus: SMBus register access (libi2c) and plain or combined I2C transfers (I2C_RDWR).
public struct I2CDevice: Sendable {
    public let bus: I2CBus
    public let address: UInt8

    public init(bus: I2CBus, address: UInt8) {
        self.bus = bus
        self.address = address
    }

    /// "0x76 on /dev/i2c-1"
    public var location: String { "0x\(hex(address)) on \(bus.path)" }

    public func readByte(register: UInt8) throws(SensorError) -> UInt8 {
        let value = try bus.smbus(address, "read of register 0x\(hex(register))") {
            i2c_smbus_read_byte_data($0, register)
        }
        return UInt8(truncatingIfNeeded: value)
    }

    public func writeByte(register: UInt8, _ value: UInt8) throws(SensorError) {
        _ = try bus.smbus(address, "write of register 0x\(hex(register))") {
            i2c_smbus_write_byte_data($0, register, value)
        }
    }

    /// An SMBus word: low byte first on the wire.
    public func readWord(register: UInt8) throws(SensorError) -> UInt16 {
        let value = try bus.smbus(address, "read of register 0x\(hex(register))") {
            i2c_smbus_read_word_data($0, register)
        }
        return UInt16(truncatingIfNeeded: value)
    }

    /// An SMBus word: low byte first on the wire.
    public func writeWord(register: UInt8, _ value: UInt16) throws(SensorError) {
        _ = try bus.smbus(address, "write of register 0x\(hex(register))") {
            i2c_smbus_write_word_data($0, register, value)
        }
    }

    /// A 16-bit register that the chip sends high byte first, as most temperature sensors do.
    public func readBigEndianWord(register: UInt8) throws(SensorError) -> UInt16 {
        try readWord(register: register).byteSwapped
    }

    /// A 16-bit register that the chip takes high byte first.
    public func writeBigEndianWord(register: UInt8, _ value: UInt16) throws(SensorError) {
        try writeWord(register: register, value.byteSwapped)
    }

    /// An I2C block read of 1...32 consecutive registers.
    public func readBlock(register: UInt8, count: Int) throws(SensorError) -> [UInt8] {
        precondition((1...Int(I2C_SMBUS_BLOCK_MAX)).contains(count), "an SMBus block holds 1...32 bytes")
        var bytes = [UInt8](repeating: 0, count: count)
        let read = try bus.smbus(address, "read of \(count) registers from 0x\(hex(register))") { descriptor in
            bytes.withUnsafeMutableBufferPointer {
                i2c_smbus_read_i2c_block_data(descriptor, register, UInt8(count), $0.baseAddress)
            }
        }
        guard read == count else {
            throw .io(errno: EIO, "short read of \(read) of \(count) registers from 0x\(hex(register)) at \(location)")
        }
        return bytes
    }

    /// An I2C block write of 1...32 bytes to consecutive registers.
    public func writeBlock(register: UInt8, _ bytes: [UInt8]) throws(SensorError) {
        precondition((1...Int(I2C_SMBUS_BLOCK_MAX)).contains(bytes.count), "an SMBus block holds 1...32 bytes")
        _ = try bus.smbus(address, "write of \(bytes.count) registers from 0x\(hex(register))") { descriptor in
            bytes.withUnsafeBufferPointer {
                i2c_smbus_write_i2c_block_data(descriptor, register, UInt8($0.count), $0.baseAddress)
            }
        }
    }

    /// A plain I2C write: start, address, the bytes, stop. For chips that take commands rather than registers.
    public func write(_ bytes: [UInt8]) throws(SensorError) {
        precondition(!bytes.isEmpty, "an I2C write sends at least one byte")
        _ = try bus.transfer(address, "write of \(bytes.count) bytes", writing: bytes, readCount: 0)
    }

    /// A plain I2C read of `count` bytes.
    public func read(count: Int) throws(SensorError) -> [UInt8] {
        precondition(count > 0, "an I2C read takes at least one byte")
        return try bus.transfer(address, "read of \(count) bytes", writing: [], readCount: count)
    }

    /// A write and a read joined by a repeated start, for chips that need the pair without a stop between.
    public func writeThenRead(_ bytes: [UInt8], count: Int) throws(SensorError) -> [UInt8] {
        precondition(!bytes.isEmpty && count > 0, "a combined transfer writes and reads at least one byte each")
        return try bus.transfer(
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
