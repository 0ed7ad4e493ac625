import Foundation
import Glibc

/// A directory of its own under the system's temporary directory, removed with its contents on deinit (or by
/// `remove()`): the one temporary-directory helper of the brokers, certificates and tests.
package final class ScratchDirectory: Sendable {
    package let url: URL
    package var path: String { url.path }

    /// `label` starts the directory's name, before a UUID.
    package init(_ label: String = "coaty-test") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        // Brokers started as root switch to the user mosquitto, and the no-root runs use nobody: both must get in.
        chmod(url.path, 0o755)
    }

    package func file(_ relative: String) -> URL { url.appendingPathComponent(relative) }

    /// Writes `text` to `relative` (making the directories on the way) with `mode`, and returns the file.
    @discardableResult
    package func write(_ text: String, to relative: String, mode: mode_t = 0o644) throws -> URL {
        let target = file(relative)
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        // In place (open, truncate, write, close), as most editors do: rule watchers are tested with it. Close on
        // exec: a process another test spawns meanwhile would otherwise inherit the descriptor open for writing,
        // and a script written here could not be run while that process lives ("Text file busy").
        let descriptor = open(target.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw CocoaError.error(.fileWriteUnknown, url: target) }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
        // Only when the mode differs, so that a watcher sees no change of attributes after an ordinary write.
        var status = stat()
        if stat(target.path, &status) != 0 || status.st_mode & 0o7777 != mode { chmod(target.path, mode) }
        return target
    }

    package func read(_ relative: String) throws -> String {
        try String(contentsOf: file(relative), encoding: .utf8)
    }

    /// Removes the directory now; `defer { directory.remove() }` also keeps it until the end of the scope.
    package func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    deinit {
        remove()
    }
}
