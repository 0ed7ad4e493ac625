#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Times as Coaty sends them: milliseconds since the Unix epoch, and for `Log.logDate` a local ISO 8601 string
/// with offset and milliseconds (`2021-05-03T14:02:11.123+02:00`).
public enum CoatyTimestamp {
    public static func nowMilliseconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) * 1000 + Double(now.tv_nsec / 1_000_000)
    }

    public static func localISOString(milliseconds: Double) -> String {
        var seconds = time_t(Int((milliseconds / 1000).rounded(.down)))
        let millis = Int(milliseconds - Double(seconds) * 1000)
        var local = tm()
        localtime_r(&seconds, &local)
        let offsetMinutes = Int(local.tm_gmtoff) / 60
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let sign = offsetMinutes < 0 ? "-" : "+"
        return "\(pad(Int(local.tm_year) + 1900, 4))-\(pad(Int(local.tm_mon) + 1, 2))-\(pad(Int(local.tm_mday), 2))"
            + "T\(pad(Int(local.tm_hour), 2)):\(pad(Int(local.tm_min), 2)):\(pad(Int(local.tm_sec), 2))"
            + ".\(pad(millis, 3))\(sign)\(pad(abs(offsetMinutes) / 60, 2)):\(pad(abs(offsetMinutes) % 60, 2))"
    }
}
