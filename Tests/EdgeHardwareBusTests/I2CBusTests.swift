import EdgeEmulation
import EdgeHardware
import CoatyTestSupport
import Testing

@Suite struct I2CBusOpeningTests {
    @Test func missingBusNamesThePath() {
        #expect(
            throws: SensorError.noDevice(
                "cannot open I2C bus /dev/i2c-250: No such file or directory (is the I2C interface enabled?)")
        ) {
            try I2CBus(number: 250)
        }
    }
}

/// The bus calls on their own, against an emulated TMP102, whose 16-bit limit registers are readable and
/// writable and which the kernel-style SMBus emulation sees as plain I2C messages.
@Suite(.emulatedHardware, .serialized, .timeLimit(.minutes(1))) struct I2CBusTests {
    private func tmp102() throws -> I2CDevice {
        let (hardware, bus, path) = try Emulation.newBus()
        _ = try hardware.addChip(.tmp102, bus: bus, address: 0x48)
        return I2CDevice(bus: try I2CBus(path: path), address: 0x48)
    }

    @Test func wordsTravelLowByteFirstAndBigEndianWordsHighByteFirst() throws {
        let device = try tmp102()
        #expect(try device.readBigEndianWord(register: 0x02) == 0x4B00)  // T_LOW at power-on: 75 °C
        #expect(try device.readWord(register: 0x02) == 0x004B)
        try device.writeWord(register: 0x02, 0x3012)
        #expect(try device.readBigEndianWord(register: 0x02) == 0x1230)
        try device.writeBigEndianWord(register: 0x03, 0x4560)
        #expect(try device.readBigEndianWord(register: 0x03) == 0x4560)
    }

    @Test func blocks() throws {
        let device = try tmp102()
        try device.writeBlock(register: 0x02, [0x1A, 0x20])
        #expect(try device.readBlock(register: 0x02, count: 2) == [0x1A, 0x20])
        #expect(try device.readBlock(register: 0x03, count: 2) == [0x50, 0x00])  // T_HIGH 80 °C
    }

    @Test func bytes() throws {
        // The BME280 has 8-bit registers: ctrl_hum keeps its low three bits.
        let (hardware, bus, path) = try Emulation.newBus()
        _ = try hardware.addChip(.bme280, bus: bus, address: 0x76)
        let device = I2CDevice(bus: try I2CBus(path: path), address: 0x76)
        #expect(try device.readByte(register: 0xD0) == 0x60)
        try device.writeByte(register: 0xF2, 0xFD)
        #expect(try device.readByte(register: 0xF2) == 0x05)
    }

    @Test func plainAndCombinedTransfers() throws {
        let device = try tmp102()
        try device.write([0x03, 0x22, 0x10])
        #expect(try device.read(count: 2) == [0x22, 0x10])
        #expect(try device.writeThenRead([0x02], count: 2) == [0x4B, 0x00])
    }

    @Test func addressOutsideSevenBitsIsRejectedByTheKernel() throws {
        let (_, _, path) = try Emulation.newBus()
        let device = I2CDevice(bus: try I2CBus(path: path), address: 0x80)
        #expect(throws: SensorError.io(errno: 22, "read of register 0x00 at 0x80 on \(path): Invalid argument")) {
            try device.readByte(register: 0x00)
        }
    }

    @Test func busCallsAreCounted() throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.lm75, bus: bus, address: 0x48)
        let device = I2CDevice(bus: try I2CBus(path: path), address: 0x48)
        _ = try device.readWord(register: 0)
        _ = try device.writeThenRead([0], count: 2)
        #expect(chip.busCallCount == 2)
    }
}
