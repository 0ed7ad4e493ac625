#if canImport(Glibc)
    import Glibc
#endif

/// The umockdev preload library, which routes this process's device access to the emulation.
public enum UMockdevPreload {
    static let library = "libumockdev-preload.so.0"
    static let reexecutedMarker = "COATY_EDGE_UMOCKDEV_REEXECUTED"

    /// Whether the process runs with libumockdev-preload in LD_PRELOAD.
    public static var isActive: Bool {
        guard let preload = getenv("LD_PRELOAD") else { return false }
        return String(cString: preload).contains("libumockdev-preload")
    }

    /// Makes sure the process runs with the preload, for an executable that emulates its hardware: call it first
    /// thing in `main`, before any thread starts. With the preload active it returns at once; without, it
    /// replaces the process by the same executable with the same arguments and environment plus the preload in
    /// LD_PRELOAD, so it does not return. It throws if that fails, or if the preload is still missing after the
    /// re-execution (the umockdev package is not installed).
    public static func reexecuteIfMissing() throws(EmulationError) {
        if isActive { return }
        if getenv(reexecutedMarker) != nil {
            throw .failed("\(library) did not load after re-executing with it in LD_PRELOAD; is umockdev installed?")
        }
        let preload = getenv("LD_PRELOAD").map { "\(library):\(String(cString: $0))" } ?? library
        setenv("LD_PRELOAD", preload, 1)
        setenv(reexecutedMarker, "1", 1)
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        let reason = String(cString: strerror(errno))
        throw .failed("cannot re-execute the program with \(library): \(reason)")
    }
}
