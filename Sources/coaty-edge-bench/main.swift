// The agent against a bare libmosquitto client on the same broker: `swift run -c release coaty-edge-bench`.
import Glibc
import Logging

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .warning
    return handler
}

if CommandLine.arguments.dropFirst().first == "fleet" {
    do {
        try await FleetSimulation(options: FleetSimulation.Options(arguments: CommandLine.arguments.dropFirst(2))).run()
        exit(0)
    } catch let error as UsageError {
        writeStandardError(
            (error.message.map { "coaty-edge-bench fleet: \($0)\n\n" } ?? "") + FleetSimulation.Options.usage + "\n")
        exit(error.message == nil ? 0 : 2)
    } catch {
        writeStandardError("coaty-edge-bench fleet: \(error)\n")
        exit(1)
    }
}

if CommandLine.arguments.dropFirst().first == "decode" {
    do {
        try DecodeFigures(arguments: CommandLine.arguments.dropFirst(2)).run()
        exit(0)
    } catch let error as UsageError {
        writeStandardError(
            (error.message.map { "coaty-edge-bench decode: \($0)\n\n" } ?? "") + DecodeFigures.usage + "\n")
        exit(error.message == nil ? 0 : 2)
    } catch {
        writeStandardError("coaty-edge-bench decode: \(error)\n")
        exit(1)
    }
}

let options: BenchmarkOptions
do {
    options = try BenchmarkOptions(arguments: CommandLine.arguments.dropFirst())
} catch {
    if let message = error.message {
        writeStandardError("coaty-edge-bench: \(message)\n\n\(BenchmarkOptions.usage)\n")
        exit(2)
    }
    print(BenchmarkOptions.usage)
    exit(0)
}

do {
    let report = try await runBenchmarks(options)
    endProgress()
    print(options.json ? report.json.serialized() : report.text)
} catch {
    endProgress()
    writeStandardError("coaty-edge-bench: \(error)\n")
    exit(1)
}
