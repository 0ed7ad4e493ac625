import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A PWM chip's sysfs directory in a scratch tree, with a stand-in for the kernel: a write to `export` makes the
/// channel's directory (period, duty_cycle, polarity, enable). Every completed write to the chip's and its channels'
/// files is recorded in order through inotify: the driver's real writes, as it made them, each with the text the file
/// held when the event was read (a quick second write to the same file may show there already).
final class PWMSysfsTree: @unchecked Sendable {
    struct Write: Equatable, CustomStringConvertible {
        var file: String
        var text: String
        var description: String { "\(file)=\(text)" }
    }

    let tree: SysfsTree
    let chipDirectory: String
    private let inotify: Int32
    private let watches = Mutex<[Int32: String]>([:])
    private let recorded = Mutex<[Write]>([])
    private let stop = Atomic<Bool>(false)
    private let stopped = Mutex<Bool>(false)
    private var thread = pthread_t()

    /// A chip with `channels` channels and none exported, or `exported` exported already with these files' contents.
    init(channels: Int, exported: [Int: [String: String]] = [:]) throws {
        tree = try SysfsTree()
        chipDirectory = tree.root + "/class/pwm/pwmchip0"
        try tree.write("class/pwm/pwmchip0/npwm", "\(channels)\n")
        try tree.write("class/pwm/pwmchip0/export", "")
        try tree.write("class/pwm/pwmchip0/unexport", "")
        inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotify >= 0 else { throw POSIXError(.EMFILE) }
        try watch(chipDirectory, as: "")
        for (channel, files) in exported {
            for (file, text) in files { try tree.write("class/pwm/pwmchip0/pwm\(channel)/\(file)", text + "\n") }
            try watch(chipDirectory + "/pwm\(channel)", as: "pwm\(channel)/")
        }
        let box = Unmanaged.passRetained(self).toOpaque()
        pthread_create(
            &thread, nil,
            { argument in
                let tree = Unmanaged<PWMSysfsTree>.fromOpaque(argument!).takeRetainedValue()
                tree.respond()
                return nil
            }, box)
    }

    /// Stops the stand-in kernel; call before the tree goes away.
    func finish() {
        guard
            !stopped.withLock({
                let was = $0; $0 = true; return was
            })
        else { return }
        stop.store(true, ordering: .relaxed)
        pthread_join(thread, nil)
        close(inotify)
    }

    /// The writes so far, in order.
    var writes: [Write] { recorded.withLock { $0 } }

    func contents(_ file: String) -> String? {
        (try? String(contentsOfFile: chipDirectory + "/" + file, encoding: .utf8))?.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    private func watch(_ directory: String, as prefix: String) throws {
        let descriptor = inotify_add_watch(inotify, directory, UInt32(IN_CLOSE_WRITE))
        guard descriptor >= 0 else { throw POSIXError(.ENOENT) }
        watches.withLock { $0[descriptor] = prefix }
    }

    private func respond() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stop.load(ordering: .relaxed) {
            var descriptor = pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 20) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            guard count > 0 else { continue }
            var offset = 0
            while offset + 16 <= count {
                let wd = buffer[offset..<offset + 4].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
                let length = Int(
                    buffer[offset + 12..<offset + 16].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
                let name = String(
                    decoding: buffer[offset + 16..<offset + 16 + length].prefix { $0 != 0 }, as: UTF8.self)
                offset += 16 + length
                guard let prefix = watches.withLock({ $0[wd] }), !name.isEmpty else { continue }
                let file = prefix + name
                let text = contents(file) ?? ""
                recorded.withLock { $0.append(Write(file: file, text: text)) }
                if file == "export", let channel = Int(text) { exportChannel(channel) }
            }
        }
    }

    /// What the kernel does on export: the channel's directory, stopped, appears at once (made aside and renamed, so that
    /// its watch is in place before the driver can write to it).
    private func exportChannel(_ channel: Int) {
        let staging = chipDirectory + "/.staging\(channel)"
        try? FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        for (file, text) in [("period", "0"), ("duty_cycle", "0"), ("polarity", "normal"), ("enable", "0")] {
            _ = FileManager.default.createFile(atPath: staging + "/" + file, contents: Data((text + "\n").utf8))
        }
        try? watch(staging, as: "pwm\(channel)/")
        rename(staging, chipDirectory + "/pwm\(channel)")
    }
}
