import CoatyTestSupport
import Foundation
import Glibc
import Testing

/// `ScratchDirectory.write` (the rule files, configurations and scripts of many tests): in place, every byte, the mode
/// asked for, and no descriptor left open.
@Suite struct ScratchDirectoryTests {
    @Test func writesInPlaceWithTheModeAndClosesTheFile() throws {
        let scratch = try ScratchDirectory("coaty-scratch")
        let first = try scratch.write("short\n", to: "sub/dir/file.json")
        var before = stat()
        #expect(stat(first.path, &before) == 0)

        // Larger than a pipe's or a socket's buffer, with multi-byte characters: a short write would show.
        let text = String(repeating: "température 21,5 °C ✓\n", count: 100_000)
        let second = try scratch.write(text, to: "sub/dir/file.json", mode: 0o600)
        var after = stat()
        #expect(stat(second.path, &after) == 0)
        #expect(after.st_ino == before.st_ino, "replaced rather than written in place")
        #expect(after.st_mode & 0o7777 == 0o600)
        #expect(try scratch.read("sub/dir/file.json") == text)

        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")
        }
        #expect(!open.contains(second.resolvingSymlinksInPath().path), "a descriptor of the written file is still open")
    }
}
