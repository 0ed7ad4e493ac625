import Foundation

/// The whole text of a file of /proc, read to its end: such a file's size reads as 0, and
/// `String(contentsOfFile:)` returned a truncated /proc/PID/maps.
public func procFile(_ path: String) throws -> String {
    guard let handle = FileHandle(forReadingAtPath: path) else { throw CocoaError(.fileReadNoSuchFile) }
    defer { try? handle.close() }
    return String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
}
