#if canImport(Glibc)
    import Glibc
#endif

/// Wall-clock times in milliseconds since 1970, and their display.
public enum ClockTime {
    public static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    /// `HH:MM:SS.mmm` in local time.
    public static func local(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return "\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec)).\(pad(Int32(milliseconds % 1000), 3))"
    }

    /// An age: `850ms`, `4.2s`, `3m12s`, `2h05m`.
    public static func age(_ milliseconds: Int64) -> String {
        switch milliseconds {
        case ..<1000: return "\(max(0, milliseconds))ms"
        case ..<60_000: return "\(milliseconds / 1000).\(milliseconds % 1000 / 100)s"
        case ..<3_600_000: return "\(milliseconds / 60_000)m\(pad(Int32(milliseconds % 60_000 / 1000)))s"
        default: return "\(milliseconds / 3_600_000)h\(pad(Int32(milliseconds % 3_600_000 / 60_000)))m"
        }
    }

    static func pad(_ value: Int32, _ width: Int = 2) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
