import CoatyTestSupport
import Glibc
import ProcessSpawning
import Testing

/// A child started by `spawnWithDefaultSignals` (the test brokers) inherits no descriptor but its standard ones: a
/// pipe's write end that another test holds open meanwhile would otherwise stay open as long as the broker lives, and
/// that test's reader would wait for the end of the pipe for good (seen once in a full run).
@Suite struct ProcessSpawningTests {
    @Test func aChildInheritsOnlyItsStandardDescriptors() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)  // without close-on-exec, as Foundation's Pipe makes them
        defer { for descriptor in descriptors { close(descriptor) } }
        let scratch = try ScratchDirectory("coaty-spawn")

        let child = try spawnWithDefaultSignals(
            "/bin/sh", arguments: ["-c", "exec 1>&2; ls /proc/$$/fd"], errorFile: scratch.file("error").path)
        var status: Int32 = 0
        #expect(waitpid(child, &status, 0) == child)
        let listed = try scratch.read("error").split(separator: "\n").compactMap { Int32($0) }
        #expect(Set(listed) == [0, 1, 2], "the child had \(listed)")
        #expect(!listed.contains(descriptors[1]))
    }
}
