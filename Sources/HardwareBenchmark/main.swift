// The CPU cost of the hardware layer, on emulated devices, in one of two modes:
//
//     HardwareBenchmark                                       sensor reads apart from the bus (SensorReads.swift)
//     HardwareBenchmark counter [SECONDS_PER_RATE] [RATE...]  the pulse counter at rising rates
//                                                             (PulseCounterRates.swift)
//
// Build it with -c release. The emulation needs the umockdev preload: the program re-executes itself with it.
import EdgeEmulation

#if canImport(Glibc)
    import Glibc
#endif

do {
    try UMockdevPreload.reexecuteIfMissing()
} catch {
    print(error)
    exit(1)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case nil:
    try await sensorReads()
case "counter":
    await pulseCounterRates(Array(arguments.dropFirst()))
default:
    print("usage: HardwareBenchmark [counter [SECONDS_PER_RATE] [RATE...]]")
    exit(64)
}

/// The CPU time of the whole process so far (every thread, the emulation's included).
func cpuNanoseconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
}
