import EdgeEmulation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Tests against emulated hardware need the umockdev preload. Without it they are skipped with a message, unless
/// COATY_EDGE_REQUIRE_UMOCKDEV=1 (set in CI) makes them run, and fail, instead.
public enum EmulatedHardwareRequirement {
    public static var shouldRun: Bool {
        UMockdevPreload.isActive || getenv("COATY_EDGE_REQUIRE_UMOCKDEV").map { String(cString: $0) == "1" } == true
    }
}

extension Trait where Self == ConditionTrait {
    public static var emulatedHardware: Self {
        .enabled(
            if: EmulatedHardwareRequirement.shouldRun,
            "needs the umockdev preload: build, then run `umockdev-wrapper swift test --skip-build`")
    }
}
