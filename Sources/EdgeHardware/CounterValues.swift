import CoatyJSON

#if canImport(Glibc)
    import Glibc
#endif

/// The rate of a growing total over a sliding window: from the sample at the window's start (or the oldest one, while
/// the window is not full yet) to the newest. `Instant` is the caller's clock's.
public struct PulseRate<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    public let window: Duration
    /// The unit of the rate: per second (1 s), per minute (60 s), ...
    public let per: Duration
    private var samples: [(at: Instant, total: UInt64)] = []

    public init(window: Duration, per: Duration) {
        self.window = window
        self.per = per
    }

    /// Records the total at `now`; returns the rate, or nil until two samples span some time.
    public mutating func sample(_ total: UInt64, at now: Instant) -> Double? {
        samples.append((now, total))
        // Keep one sample at or before the window's start, so that the rate covers the whole window.
        let start = now.advanced(by: .zero - window)
        while samples.count > 2, samples[1].at <= start { samples.removeFirst() }
        guard let first = samples.first, first.at < now else { return nil }
        let elapsed = first.at.duration(to: now)
        return Double(total &- first.total) * (per / elapsed)
    }
}

/// The scaled quantity of a count: litres from pulses at `pulsesPerUnit` pulses per litre.
public func scaledQuantity(_ total: UInt64, pulsesPerUnit: Double) -> Double {
    Double(total) / pulsesPerUnit
}

/// Where a counter keeps its total across restarts, so that a meter reading never goes back: a small JSON file,
/// `{"total": 12345}`, replaced atomically (written to a temporary file beside it, flushed to the disk, renamed over
/// it, and the directory flushed), so that a crash or a power cut leaves the old or the new total, never a torn file.
package struct CounterStateFile: Sendable, Hashable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// The stored total; zero when the file does not exist yet. A file that exists but does not hold a total is an
    /// error: starting from zero would make the meter reading go back.
    public func load() throws(Failure) -> UInt64 {
        let text: String
        do {
            text = try SysfsFile.contents(of: path)
        } catch {
            if case .noDevice = error { return 0 }
            throw Failure(description: "\(path): cannot read: \(error)")
        }
        guard let value = try? JSONValue(parsing: Array(text.utf8)), case .object(let object) = value,
            let number = object["total"]?.numberValue, number >= 0, number < 9.0e15, number == number.rounded()
        else {
            throw Failure(
                description:
                    "\(path): $.total: not a count; expected {\"total\": <whole number>} (fix or remove the file)")
        }
        return UInt64(number)
    }

    public func store(_ total: UInt64) throws(Failure) {
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("cannot create \(temporary)") }
        let bytes = Array("{\"total\": \(total)}\n".utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, synced else {
            unlink(temporary)
            throw failure("cannot write \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw failure("cannot replace \(path)")
        }
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let directoryDescriptor = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            _ = fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }

    private func failure(_ what: String) -> Failure {
        Failure(description: "\(what): \(describe(errno))")
    }
}
