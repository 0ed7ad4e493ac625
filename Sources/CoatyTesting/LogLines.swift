import Logging
import Synchronization

/// Collects the messages logged through its loggers, for tests that check what an operator would read.
public final class LogLines: Sendable {
    private let storage = Mutex<[String]>([])

    public init() {}

    /// Every message so far, as "level: message".
    public var lines: [String] { storage.withLock { $0 } }

    public func contains(_ text: String) -> Bool { lines.contains { $0.contains(text) } }

    public func logger(label: String = "test", level: Logger.Level = .info) -> Logger {
        var logger = Logger(label: label) { [self] _ in Handler(lines: self) }
        logger.logLevel = level
        return logger
    }

    private struct Handler: LogHandler {
        let lines: LogLines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            lines.storage.withLock { $0.append("\(event.level): \(event.message)") }
        }
    }
}
