import CEdgeEmulation
import Testing

/// libumockdev is loaded when an emulation starts, not linked: a machine without it runs real hardware, and an
/// emulation there fails with the reason.
@Suite struct UMockdevLibraryTests {
    private func check(_ library: String) -> String? {
        var error = [CChar](repeating: 0, count: 512)
        guard coaty_emu_check_library(library, &error, error.count) != 0 else { return nil }
        return String(decoding: error.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    }

    @Test func theInstalledLibraryHasEveryCallTheEmulationMakes() {
        #expect(check(COATY_EMU_UMOCKDEV_LIBRARY) == nil)
    }

    @Test func aMissingLibraryIsReportedWithAHint() throws {
        let message = try #require(check("libcoaty-edge-absent.so.0"))
        #expect(message.hasPrefix("cannot load libcoaty-edge-absent.so.0 (is umockdev installed?): "))
    }

    @Test func aLibraryWithoutTheCallsIsRefused() throws {
        #expect(try #require(check("libm.so.6")) == "libm.so.6 lacks umockdev_testbed_new")
    }
}
