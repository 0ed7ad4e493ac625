// The pulse counter (GPIOPulseCounter) at rising pulse rates on an emulated GPIO line: the emulation drives each edge
// at its time on a thread of its own and, like the kernel, keeps at most 16 events waiting for the reader, dropping
// what does not fit. For each rate it reports the pulses counted and lost, and the CPU time per pulse of the
// counter's watching thread (its poll and read calls; in the emulation the "kernel" side of a read runs on umockdev's
// thread, which the process figure includes) and of the whole process (counter, emulated kernel, pulse generator: an
// upper bound). It ends with the highest rate at which no pulse was lost.
//
// Usage: Tests/Tools/measure-counter.sh [SECONDS_PER_RATE] [RATE...] (`HardwareBenchmark counter`)
import EdgeEmulation
import EdgeHardware

#if canImport(Glibc)
    import Glibc
#endif

func column(_ text: String, _ width: Int) -> String {
    String(repeating: " ", count: max(0, width - text.count)) + text
}

func format(_ value: Double, digits: Int = 1) -> String {
    if digits == 0 { return "\(Int(value.rounded()))" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    return "\((value * scale).rounded() / scale)"
}

/// Arguments: the seconds per rate (default 2), then the rates in Hz.
func pulseCounterRates(_ arguments: [String]) async {
    let seconds = arguments.first.flatMap(Double.init) ?? 2
    var rates = arguments.dropFirst().compactMap(Double.init)
    if rates.isEmpty { rates = [100, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000] }

    do {
        let hardware = try EmulatedHardware()
        print("pulse counter on an emulated line, \(format(seconds)) s per rate")
        print(
            column("rate Hz", 9) + column("pulses", 10) + column("counted", 10) + column("lost", 8)
                + column("counter ns/pulse", 18) + column("process ns/pulse", 18))
        var highestLossless: Double?
        for (index, rate) in rates.enumerated() {
            let chip = try hardware.addGPIOChip(index, lines: 4)
            let counter = try GPIOPulseCounter(chip: chip.path, line: 0)
            let counting = Task { try await counter.count() }
            try await Task.sleep(for: .milliseconds(200))
            let pulses = UInt64(max(1, (rate * seconds).rounded()))
            let cpuBefore = cpuNanoseconds()
            let train = try chip.startPulses(line: 0, rate: rate, count: pulses)
            let (delivered, dropped) = await Task.detached { train.finish() }.value
            // The reader takes what was delivered; then it stops.
            let deadline = ContinuousClock.now + .seconds(10)
            while counter.total < delivered, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            let cpuProcess = cpuNanoseconds() - cpuBefore
            counting.cancel()
            try await counting.value
            let watcher = counter.watcherCPUTime
            let watcherNanoseconds =
                Double(watcher.components.seconds) * 1e9 + Double(watcher.components.attoseconds) / 1e9
            let lost = pulses - min(pulses, counter.total)
            print(
                column(format(rate, digits: 0), 9) + column("\(pulses)", 10) + column("\(counter.total)", 10)
                    + column("\(lost)", 8) + column(format(watcherNanoseconds / Double(pulses)), 18)
                    + column(format(cpuProcess / Double(pulses)), 18))
            if lost == 0 && dropped == 0 { highestLossless = rate }
            if lost > pulses / 2 { break }
        }
        print("highest rate with no pulse lost: " + (highestLossless.map { "\(format($0, digits: 0)) Hz" } ?? "none"))
    } catch {
        print("the benchmark failed: \(error)")
        exit(1)
    }
}
