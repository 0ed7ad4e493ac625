import EdgeEmulation
import Synchronization
import Testing

import CoatyTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Fresh emulated buses, one per test, so that tests running side by side do not share chips.
enum Emulation {
    private static let nextBus = Atomic<Int>(10)

    static func newBus() throws -> (hardware: EmulatedHardware, bus: Int, path: String) {
        let hardware = try EmulatedHardware()
        let bus = nextBus.add(1, ordering: .relaxed).newValue
        return (hardware, bus, try hardware.addI2CBus(bus))
    }
}
