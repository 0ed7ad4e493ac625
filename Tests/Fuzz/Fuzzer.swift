import CoatyTestSupport
import Dispatch
import Glibc

/// libFuzzer entry: every input goes through the inbound path, the rules and router evaluation or the actor/output
/// path, as its first line selects (see `FuzzHarness`); a crash or a hang is a bug.
private let harness: FuzzHarness = {
    FuzzHarness.silenceLogging()
    // libFuzzer calls in on the main thread, outside Swift concurrency, so it may block here.
    let ready = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var made: FuzzHarness?
    Task {
        do {
            made = try await FuzzHarness.make()
        } catch {
            fatalError("cannot start the fuzz harness: \(error)")
        }
        ready.signal()
    }
    ready.wait()
    guard let made else { fatalError("the fuzz harness did not start") }
    return made
}()

/// Called by libFuzzer once before the first input. A run ends with exit(); the rules harness's temporary file
/// goes with it.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer) -> CInt {
    _ = harness
    atexit { harness.rules.removeFiles() }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    harness.feed(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
