import EdgeEmulation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Tests against emulated hardware need the umockdev preload. Without it they are skipped with a message, unless
/// COATY_EDGE_REQUIRE_UMOCKDEV=1 (set in CI) makes them run, and fail, instead.
enum Emulation {
    static var shouldRun: Bool {
        UMockdevPreload.isActive || getenv("COATY_EDGE_REQUIRE_UMOCKDEV").map { String(cString: $0) == "1" } == true
    }

    private static let nextBus = Atomic<Int>(10)

    /// A fresh emulated bus for one test, so that tests running side by side do not share chips.
    static func newBus() throws -> (hardware: EmulatedHardware, bus: Int, path: String) {
        let hardware = try EmulatedHardware()
        let bus = nextBus.add(1, ordering: .relaxed).newValue
        return (hardware, bus, try hardware.addI2CBus(bus))
    }
}

extension Trait where Self == ConditionTrait {
    static var emulatedHardware: Self {
        .enabled(
            if: Emulation.shouldRun,
            "needs the umockdev preload: build, then run `umockdev-wrapper swift test --skip-build`")
    }
}
