import EdgeEmulation
import EdgeHardware
import CoatyTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

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

    @Test func wordsTravelLowByteFirstAndBigEndianWordsHighByteFirst() async throws {
        let device = try tmp102()
        #expect(try await device.readBigEndianWord(register: 0x02) == 0x4B00)  // T_LOW at power-on: 75 °C
        #expect(try await device.readWord(register: 0x02) == 0x004B)
        try await device.writeWord(register: 0x02, 0x3012)
        #expect(try await device.readBigEndianWord(register: 0x02) == 0x1230)
        try await device.writeBigEndianWord(register: 0x03, 0x4560)
        #expect(try await device.readBigEndianWord(register: 0x03) == 0x4560)
    }

    @Test func blocks() async throws {
        let device = try tmp102()
        try await device.writeBlock(register: 0x02, [0x1A, 0x20])
        #expect(try await device.readBlock(register: 0x02, count: 2) == [0x1A, 0x20])
        #expect(try await device.readBlock(register: 0x03, count: 2) == [0x50, 0x00])  // T_HIGH 80 °C
    }

    @Test func bytes() async throws {
        // The BME280 has 8-bit registers: ctrl_hum keeps its low three bits.
        let (hardware, bus, path) = try Emulation.newBus()
        _ = try hardware.addChip(.bme280, bus: bus, address: 0x76)
        let device = I2CDevice(bus: try I2CBus(path: path), address: 0x76)
        #expect(try await device.readByte(register: 0xD0) == 0x60)
        try await device.writeByte(register: 0xF2, 0xFD)
        #expect(try await device.readByte(register: 0xF2) == 0x05)
    }

    @Test func plainAndCombinedTransfers() async throws {
        let device = try tmp102()
        try await device.write([0x03, 0x22, 0x10])
        #expect(try await device.read(count: 2) == [0x22, 0x10])
        #expect(try await device.writeThenRead([0x02], count: 2) == [0x4B, 0x00])
    }

    @Test func addressOutsideSevenBitsIsRejectedByTheKernel() async throws {
        let (_, _, path) = try Emulation.newBus()
        let device = I2CDevice(bus: try I2CBus(path: path), address: 0x80)
        await #expect(throws: SensorError.io(errno: 22, "read of register 0x00 at 0x80 on \(path): Invalid argument")) {
            try await device.readByte(register: 0x00)
        }
    }

    @Test func busCallsAreCounted() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.lm75, bus: bus, address: 0x48)
        let device = I2CDevice(bus: try I2CBus(path: path), address: 0x48)
        _ = try await device.readWord(register: 0)
        _ = try await device.writeThenRead([0], count: 2)
        #expect(chip.busCallCount == 2)
    }
}

/// Each bus makes its transfers on a thread of its own, so that a transfer that hangs (a chip holding the clock line
/// low, until the adapter's timeout) holds that thread only: no cooperative thread, no other bus. (In the suite
/// whose name `.ci/run` runs under umockdev.)
extension I2CBusTests {
    @Test func aBusHasAThreadOfItsOwnUntilItGoes() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        _ = try hardware.addChip(.tmp102, bus: bus, address: 0x48)
        let name = "i2c-\(bus)"
        var opened: I2CBus? = try I2CBus(path: path)
        if let opened { #expect(try await TMP102(bus: opened).read() == [Measurement(.temperature, 21.5)]) }
        #expect(threadNames().filter { $0 == name }.count == 1)
        #expect(openDescriptors(of: path) == 1)
        opened = nil
        try await waitUntil("the thread of \(path) to end") { !threadNames().contains(name) }
        // The thread closed the device before it ended.
        #expect(openDescriptors(of: path) == 0)
    }

    @Test func aBusThatDoesNotOpenStartsNoThread() {
        #expect(throws: SensorError.self) { try I2CBus(number: 249) }
        #expect(!threadNames().contains("i2c-249"))
    }

    /// Two buses hang, each with more reads waiting on it than the concurrency pool has threads; a read on a third
    /// bus and the pool's other tasks go on meanwhile. With the transfers on the cooperative threads, the hung reads
    /// would hold every one of them, and nothing else could run until the hung transfers ended (here: until a thread
    /// of the test heals the chips after 20 s, so that such a regression fails the test instead of hanging it).
    @Test func hungBusesStallNoOtherTask() async throws {
        let width = max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1)
        let hung = try (0..<2).map { _ -> (chip: EmulatedChip, bus: I2CBus) in
            let (hardware, bus, path) = try Emulation.newBus()
            let chip = try hardware.addChip(.tmp102, bus: bus, address: 0x48)
            chip.inject(.holdsBus)
            return (chip, try I2CBus(path: path))
        }
        let healer = Healer(hung.map(\.chip), after: .seconds(20))
        let (hardware, bus, path) = try Emulation.newBus()
        let healthyChip = try hardware.addChip(.lm75a, bus: bus, address: 0x49)
        healthyChip.setTemperature(31.5)
        let healthy = LM75(bus: try I2CBus(path: path), address: 0x49, variant: .lm75a)

        let reads = Task {
            await withTaskGroup(of: (bus: Int, error: SensorError?).self) { group in
                for (index, entry) in hung.enumerated() {
                    for _ in 0...width {
                        group.addTask {
                            do throws(SensorError) {
                                _ = try await TMP102(bus: entry.bus).read()
                                return (index, nil)
                            } catch {
                                return (index, error)
                            }
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        try await waitUntil("a transfer held on each hung bus", timeout: .seconds(30)) {
            hung.allSatisfy { $0.chip.busCallCount >= 1 }
        }
        #expect(try await healthy.read() == [Measurement(.temperature, 31.5)])
        let others = await withTaskGroup(of: Int.self) { group in
            for value in 0..<100 { group.addTask { value } }
            return await group.reduce(0, +)
        }
        #expect(others == 4950)
        #expect(!healer.hasHealed, "the other work waited until the hung buses were healed")
        // One thread per hung bus, however many reads wait on it.
        for entry in hung {
            let name = String(entry.bus.path.dropFirst("/dev/".count))
            #expect(threadNames().filter { $0 == name }.count == 1)
        }

        healer.heal()
        let results = await reads.value
        for index in hung.indices {
            let errors = results.filter { $0.bus == index }.compactMap(\.error)
            // The held transfer ends as the adapter's timeout ends it; the reads queued behind it then succeed.
            #expect(errors.count == 1)
            #expect(errors.allSatisfy { if case .io(ETIMEDOUT, _) = $0 { true } else { false } })
            #expect(results.filter { $0.bus == index }.count == width + 1)
        }
    }

    @Test func aReadWaitingBehindAHungTransferEndsWhenItsTaskIsCancelled() async throws {
        let (hardware, bus, path) = try Emulation.newBus()
        let chip = try hardware.addChip(.tmp102, bus: bus, address: 0x48)
        chip.inject(.holdsBus)
        let healer = Healer([chip], after: .seconds(20))
        let sensor = TMP102(bus: try I2CBus(path: path))
        let first = Task { try await sensor.read() }
        try await waitUntil("the first transfer held", timeout: .seconds(30)) { chip.busCallCount == 1 }
        let second = Task { try await sensor.read() }
        try await Task.sleep(for: .milliseconds(50))
        second.cancel()
        let error = await #expect(throws: SensorError.self) { try await second.value }
        #expect(error.map { if case .io(ECANCELED, _) = $0 { true } else { false } } == true)
        #expect(!healer.hasHealed)
        healer.heal()
        await #expect(throws: SensorError.self) { try await first.value }
        // The cancelled read never reached the chip.
        #expect(try await sensor.read() == [Measurement(.temperature, 21.5)])
        #expect(chip.busCallCount == 2)
    }
}

/// Heals hung chips from a thread of its own when told to, or after `limit`: while reads hold every cooperative
/// thread, no task could.
private final class Healer: Sendable {
    private let chips: [EmulatedChip]
    private let healed = Mutex(false)

    init(_ chips: [EmulatedChip], after limit: Duration) {
        self.chips = chips
        let deadline = ContinuousClock.now + limit
        Thread.detachNewThread { [self] in
            while ContinuousClock.now < deadline && !hasHealed { usleep(10_000) }
            heal()
        }
    }

    var hasHealed: Bool { healed.withLock { $0 } }

    func heal() {
        let first = healed.withLock { healed in
            defer { healed = true }
            return !healed
        }
        if first { for chip in chips { chip.inject(nil) } }
    }
}

/// The names of this process's threads (`/proc/self/task/*/comm`).
private func threadNames() -> [String] {
    entries(of: "/proc/self/task").compactMap { task in
        let file = open("/proc/self/task/\(task)/comm", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = bytes.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: bytes[..<count].prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }
}

/// How many of this process's descriptors are open on the device node `path` (emulated nodes live in the testbed's
/// directory, so their targets end with it).
private func openDescriptors(of path: String) -> Int {
    entries(of: "/proc/self/fd").filter { descriptor in
        var target = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/fd/\(descriptor)", &target, target.count - 1)
        guard length > 0 else { return false }
        return String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self).hasSuffix(path)
    }.count
}

private func entries(of directory: String) -> [String] {
    guard let stream = opendir(directory) else { return [] }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}
