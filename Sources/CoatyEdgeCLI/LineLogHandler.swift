import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// How log lines look: for journald, a `<N>` syslog priority prefix and no timestamp (the journal adds time,
/// host and unit); otherwise a timestamp and the level.
public enum LogFormat: Sendable, Hashable {
    case journal
    case plain

    /// `.journal` when standard error is connected to the journal: systemd sets `JOURNAL_STREAM` to the
    /// `device:inode` of that stream, which must match standard error (it may have been redirected since).
    public static func detect() -> LogFormat {
        var info = stat()
        guard let stream = getenv("JOURNAL_STREAM"), fstat(STDERR_FILENO, &info) == 0 else { return .plain }
        return detect(journalStream: String(cString: stream), device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    public static func detect(journalStream: String?, device: UInt64, inode: UInt64) -> LogFormat {
        guard let parts = journalStream?.split(separator: ":"), parts.count == 2,
            let streamDevice = UInt64(parts[0]), let streamInode = UInt64(parts[1])
        else { return .plain }
        return streamDevice == device && streamInode == inode ? .journal : .plain
    }
}

/// A swift-log handler that writes one line per event to standard error: `<6>label: message key=value` for the
/// journal, `2025-06-01T12:00:00.123Z info label: message key=value` otherwise. A message of several lines is
/// folded into one, so that the journal keeps it as one entry.
public struct LineLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let format: LogFormat
    private let write: @Sendable (String) -> Void

    public init(
        label: String, level: Logger.Level, format: LogFormat,
        write: @escaping @Sendable (String) -> Void = StandardError.write
    ) {
        self.label = label
        logLevel = level
        self.format = format
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let metadata = self.metadata.merging(event.metadata ?? [:]) { $1 }
        write(
            Self.line(
                level: event.level, label: label, message: event.message.description, metadata: metadata,
                format: format,
                time: Self.now()))
    }

    /// One log line, newline included.
    static func line(
        level: Logger.Level, label: String, message: String, metadata: Logger.Metadata, format: LogFormat,
        time: (seconds: Int, milliseconds: Int)
    ) -> String {
        var text = message.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " | ")
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            text += " \(key)=\(value)"
        }
        switch format {
        case .journal:
            return "<\(syslogPriority(level))>\(label): \(text)\n"
        case .plain:
            return "\(timestamp(time)) \(level) \(label): \(text)\n"
        }
    }

    /// The syslog priority journald reads from the `<N>` prefix.
    static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// UTC, ISO 8601 with milliseconds.
    static func timestamp(_ time: (seconds: Int, milliseconds: Int)) -> String {
        var seconds = time_t(time.seconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int = 2) -> String { ClockTime.pad(value, width) }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))T"
            + "\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec)).\(pad(Int32(time.milliseconds), 3))Z"
    }

    static func now() -> (seconds: Int, milliseconds: Int) {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return (time.tv_sec, time.tv_nsec / 1_000_000)
    }
}

/// Standard error, written one whole line per call so that lines of concurrent tasks do not interleave.
public enum StandardError {
    private static let lock = Mutex(())

    @Sendable public static func write(_ text: String) {
        lock.withLock { _ in _ = writeAll(STDERR_FILENO, Array(text.utf8)) }
    }
}

/// Standard output, one whole text per call (a line of `observe --json` is never split by another).
public enum StandardOutput {
    private static let lock = Mutex(())

    @Sendable public static func write(_ text: String) {
        lock.withLock { _ in _ = writeAll(STDOUT_FILENO, Array(text.utf8)) }
    }

    /// Whether standard output is a terminal, and its size (columns, rows) if it is.
    public static func terminalSize() -> (columns: Int, rows: Int)? {
        guard isatty(STDOUT_FILENO) == 1 else { return nil }
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else {
            return (100, 30)
        }
        return (Int(size.ws_col), Int(size.ws_row))
    }
}
