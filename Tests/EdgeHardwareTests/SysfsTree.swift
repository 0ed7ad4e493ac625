import CoatyTesting
import Foundation

/// A sysfs-like tree in a fresh temporary directory, removed when the value goes away.
final class SysfsTree {
    private let directory: ScratchDirectory
    var root: String { directory.path }

    init() throws {
        directory = try ScratchDirectory("coaty-edge-sysfs")
    }

    /// Writes `contents` at `relativePath`, creating the directories on the way.
    func write(_ relativePath: String, _ contents: String) throws {
        try directory.write(contents, to: relativePath)
    }

    func makeDirectory(_ relativePath: String) throws {
        try FileManager.default.createDirectory(
            atPath: root + "/" + relativePath, withIntermediateDirectories: true)
    }

    func remove(_ relativePath: String) throws {
        try FileManager.default.removeItem(atPath: root + "/" + relativePath)
    }
}
