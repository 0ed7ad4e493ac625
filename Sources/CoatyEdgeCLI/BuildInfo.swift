import CBuildInfo

/// What `coaty-edge --version` reports: the release, the commit and how the binary was built.
public enum BuildInfo {
    /// The release; deploy/package.sh names the Debian package after it. Raise it with every release.
    public static let version = "0.9.0"

    /// True when the Swift runtime is part of the binary (`--static-swift-stdlib`): it then runs without a Swift toolchain.
    public static var isSwiftRuntimeStatic: Bool { !coaty_edge_swift_runtime_is_shared() }

    public static var configuration: String {
        #if DEBUG
            "debug"
        #else
            "release"
        #endif
    }

    public static var architecture: String {
        #if arch(x86_64)
            "x86_64"
        #elseif arch(arm64)
            "aarch64"
        #elseif arch(arm)
            "armv7"
        #else
            "other"
        #endif
    }

    /// Three lines; the first is `coaty-edge VERSION`, which scripts (deploy/package.sh) read. `commit`: the git commit
    /// of the build (the executable's `buildCommit`), or "unknown" (built outside a git checkout); "-dirty" marks
    /// uncommitted changes.
    public static func description(commit: String) -> String {
        let runtime =
            isSwiftRuntimeStatic
            ? "static (Swift runtime linked in: no Swift toolchain needed)"
            : "dynamic (needs the Swift toolchain's shared libraries)"
        return """
            coaty-edge \(version)
            commit \(commit)
            build \(configuration), \(architecture), \(runtime)
            """
    }
}
