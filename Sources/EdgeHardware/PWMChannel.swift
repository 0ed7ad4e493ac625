#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Synchronization

/// A PWM output as the hardware sees it: a period, a duty cycle within it and whether it runs.
public protocol PWMChannel: Sendable {
    var label: String { get }
    /// Sets up the channel and starts it at `duty` (0...1 of the period).
    func start(frequency: Double, inverted: Bool, duty: Double) throws(PWMError)
    /// Changes the duty (0...1 of the period) of a started channel.
    func set(duty: Double) throws(PWMError)
}

public struct PWMError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The chip or its channel does not exist.
        case noChannel
        /// The kernel refused a write or a read failed.
        case io
    }

    public var code: Code
    public var detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "PWM \(code == .noChannel ? "channel unavailable" : "I/O error"): \(detail)" }
}

/// A channel of a PWM chip through the kernel's sysfs interface, `<sysfsRoot>/class/pwm/pwmchipN/pwmM`.
///
/// The kernel rejects a period shorter than the duty cycle in force and a polarity change while the channel runs, so
/// `start` writes in this order: `export` (unless the channel is exported already), `enable` 0 (only when the
/// polarity must change on a running channel), `duty_cycle` 0 (only when the old duty cycle would not fit in the new
/// period), `period`, `polarity` (only when it differs), `duty_cycle`, `enable` 1. After that only `duty_cycle` is
/// written. The channel stays exported and enabled when the agent ends, at the duty it was last set to (the safe
/// duty on a stop): unexporting would let the pin float to whatever the board pulls it to.
public final class SysfsPWMChannel: PWMChannel {
    public let label: String
    public let chipDirectory: String
    public let channel: Int
    /// How long `start` waits for the kernel (and udev, for the permissions) to make the exported channel's directory.
    public static let exportTimeout: Duration = .seconds(2)
    private let period = Mutex<UInt64>(0)

    public init(sysfsRoot: String, chip: String, channel: Int) {
        chipDirectory = "\(sysfsRoot)/class/pwm/\(chip)"
        self.channel = channel
        label = "PWM output \(channel) of \(chip)"
    }

    private var channelDirectory: String { "\(chipDirectory)/pwm\(channel)" }

    public func start(frequency: Double, inverted: Bool, duty: Double) throws(PWMError) {
        guard frequency > 0, frequency.isFinite else {
            throw PWMError(.io, "\(label): frequency \(frequency) Hz is not positive")
        }
        let periodNanoseconds = UInt64((1_000_000_000 / frequency).rounded())
        guard let count = Int(try read(chipDirectory + "/npwm", missing: .noChannel)) else {
            throw PWMError(.io, "\(chipDirectory)/npwm is not a number")
        }
        guard (0..<count).contains(channel) else {
            throw PWMError(.noChannel, "\(chipDirectory) has \(count) channels, 0...\(count - 1), not \(channel)")
        }
        if !isDirectory(channelDirectory) {
            try store("\(channel)", to: chipDirectory + "/export")
            let deadline = ContinuousClock.now + Self.exportTimeout
            // The kernel makes the directory during the write; udev then changes its files' owner.
            while !(isDirectory(channelDirectory) && access(channelDirectory + "/period", W_OK) == 0) {
                guard ContinuousClock.now < deadline else {
                    throw PWMError(.noChannel, "\(channelDirectory) did not appear (or stayed unwritable) after export")
                }
                usleep(10_000)
            }
        }
        let wantedPolarity = inverted ? "inversed" : "normal"
        let polarity =
            access(channelDirectory + "/polarity", F_OK) == 0 ? try read(channelDirectory + "/polarity") : "normal"
        if polarity != wantedPolarity, try read(channelDirectory + "/enable") == "1" {
            try store("0", to: channelDirectory + "/enable")
        }
        if let current = UInt64(try read(channelDirectory + "/duty_cycle")), current > periodNanoseconds {
            try store("0", to: channelDirectory + "/duty_cycle")
        }
        try store("\(periodNanoseconds)", to: channelDirectory + "/period")
        if polarity != wantedPolarity {
            try store(wantedPolarity, to: channelDirectory + "/polarity")
        }
        self.period.withLock { $0 = periodNanoseconds }
        try set(duty: duty)
        try store("1", to: channelDirectory + "/enable")
    }

    public func set(duty: Double) throws(PWMError) {
        let periodNanoseconds = period.withLock { $0 }
        let fraction = min(max(duty, 0), 1)
        try store("\(UInt64((Double(periodNanoseconds) * fraction).rounded()))", to: channelDirectory + "/duty_cycle")
    }

    private func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    private func read(_ path: String, missing: PWMError.Code = .io) throws(PWMError) -> String {
        do {
            return SysfsFile.trimmed(try SysfsFile.contents(of: path))
        } catch {
            if case .noDevice = error { throw PWMError(missing, "\(path) does not exist") }
            throw PWMError(.io, "cannot read \(path): \(error)")
        }
    }

    /// One write(2) of the whole text, as sysfs wants it; truncating, as a shell's `echo 0 > duty_cycle` does (sysfs
    /// ignores it; a file that stands in for the attribute then holds exactly the text).
    private func store(_ text: String, to path: String) throws(PWMError) {
        let descriptor = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            throw PWMError(code == ENOENT ? .noChannel : .io, "cannot open \(path): \(String(cString: strerror(code)))")
        }
        defer { close(descriptor) }
        let bytes = Array((text + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            let code = written < 0 ? errno : EIO
            throw PWMError(.io, "cannot write \(text) to \(path): \(String(cString: strerror(code)))")
        }
    }
}
