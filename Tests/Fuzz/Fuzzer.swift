import CoatyTestSupport
import Dispatch

/// libFuzzer entry: every input goes through the agent's inbound path; a crash or a hang is a bug.
nonisolated(unsafe) private let harness: InboundFuzzHarness = {
    let harness = InboundFuzzHarness()
    // libFuzzer calls in on the main thread, outside Swift concurrency, so it may block here.
    let online = DispatchSemaphore(value: 0)
    Task {
        await harness.waitUntilOnline()
        online.signal()
    }
    online.wait()
    return harness
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInbound(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    harness.feed(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
