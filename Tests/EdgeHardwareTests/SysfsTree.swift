import Foundation

/// A sysfs-like tree in a fresh temporary directory, removed when the value goes away.
final class SysfsTree {
    let root: String

    init() throws {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("coaty-edge-sysfs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        root = url.path
    }

    deinit {
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Writes `contents` at `relativePath`, creating the directories on the way.
    func write(_ relativePath: String, _ contents: String) throws {
        let url = URL(fileURLWithPath: root).appendingPathComponent(relativePath)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: url)
    }

    func makeDirectory(_ relativePath: String) throws {
        try FileManager.default.createDirectory(
            atPath: root + "/" + relativePath, withIntermediateDirectories: true)
    }

    func remove(_ relativePath: String) throws {
        try FileManager.default.removeItem(atPath: root + "/" + relativePath)
    }
}
