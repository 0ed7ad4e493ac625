import Foundation
import Synchronization

/// A command the tests run: an executable found on `PATH` (with the sbin directories added, where mosquitto lives).
/// It runs in a process group of its own, which a time limit kills whole.
public struct Command: Sendable, CustomStringConvertible {
    public var arguments: [String]
    public var environment: [String: String] = [:]
    public var directory: URL?

    public init(_ arguments: String..., environment: [String: String] = [:], directory: URL? = nil) {
        self.init(arguments, environment: environment, directory: directory)
    }

    public init(_ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) {
        self.arguments = arguments
        self.environment = environment
        self.directory = directory
    }

    public var description: String { arguments.joined(separator: " ") }

    /// Runs the command to its end. It is killed if it is not done within `timeout`, which then throws.
    public func run(timeout: Duration = .seconds(60)) async throws -> CommandResult {
        let child = try await ChildProcess(self)
        return try await child.finished(within: timeout)
    }
}

public struct CommandResult: Sendable {
    public var status: Int32
    public var output: String
    public var errors: String

    public var succeeded: Bool { status == 0 }
    public var outputLines: [String] {
        output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }
}

public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}

/// A running child process whose standard output and error are collected line by line, so that a test can wait for a
/// line (a broker saying it runs, a client saying it subscribed). Every wait has a time limit: a hang fails the test.
public final class ChildProcess: Sendable {
    public let command: Command
    public let output = OutputLog()
    public let errors = OutputLog()
    private let process: Process
    /// Holds nothing; it ends when the process has exited.
    private let exited = OutputLog()

    public init(_ command: Command) async throws {
        self.command = command
        let process = Process()
        // Foundation starts the child as the leader of a process group of its own, so that a time limit can kill
        // whatever it started along with it. A child inherits the signal mask of the thread that spawns it, and
        // Foundation may spawn from a thread of its own that blocks SIGHUP, SIGINT and SIGTERM (a broker started so
        // never reloads, seen with SIGHUP pending for minutes): perl, which every Debian has, clears the mask and runs
        // env, which takes the command's `-u NAME` options and finds it on PATH.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/perl")
        process.arguments =
            [
                "-MPOSIX", "-e",
                #"sigprocmask(SIG_SETMASK, POSIX::SigSet->new) or die "sigprocmask: $!\n"; exec { "/usr/bin/env" } "env", @ARGV or die "env: $!\n""#,
                "--",
            ] + command.arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin"
        // The test process runs under the umockdev preload, with this process's testbed once an emulation started;
        // a child gets neither unless the command asks (a broker under the preload once missed every SIGHUP).
        for variable in Self.emulationVariables { environment[variable] = nil }
        environment.merge(command.environment) { $1 }
        process.environment = environment
        if let directory = command.directory { process.currentDirectoryURL = directory }
        let outputPipe = Pipe()
        let errorPipe = Pipe()
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        process.standardInput = FileHandle.nullDevice
        let exited = self.exited
        process.terminationHandler = { _ in exited.end() }
        self.process = process
        try await Self.launchWithNoSignalsBlocked(process)
        Self.collect(outputPipe.fileHandleForReading, into: output)
        Self.collect(errorPipe.fileHandleForReading, into: errors)
    }

    public var processIdentifier: Int32 { process.processIdentifier }

    /// What makes a process run against this process's emulated devices.
    private static let emulationVariables = ["LD_PRELOAD", "UMOCKDEV_DIR", "COATY_EDGE_UMOCKDEV_REEXECUTED"]

    /// A child inherits the signal mask of the thread that spawns it, and the threads that run Swift's tasks block
    /// SIGHUP, SIGINT, SIGTERM and the user signals: a broker started from one never sees a reload or a stop. So
    /// children are spawned from a thread of their own that blocks nothing.
    private static func launchWithNoSignalsBlocked(_ process: Process) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let thread = Thread {
                var nothing = sigset_t()
                sigemptyset(&nothing)
                pthread_sigmask(SIG_SETMASK, &nothing, nil)
                do {
                    try process.run()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.start()
        }
    }

    /// Reads a pipe to its end on a thread of its own: the reads block, and the test's tasks must not. Plain read(2),
    /// which returns what is there; FileHandle's reads wait for a full buffer, which a line never fills.
    private static func collect(_ handle: FileHandle, into log: OutputLog) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(handle.fileDescriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                log.append(buffer[0..<count])
            }
            try? handle.close()
            log.end()
        }
        thread.start()
    }

    /// Waits for a line of standard output (or of standard error) that contains `text`, and returns it.
    @discardableResult
    public func line(containing text: String, onErrors: Bool = false, within limit: Duration = .seconds(20))
        async throws
        -> String
    {
        let log = onErrors ? errors : output
        return try await withTimeLimit(limit, "\(command) to write a line containing \"\(text)\"") {
            try await log.line(containing: text)
        }
    }

    /// Waits for the process to end by itself; kills it when `limit` passes first.
    public func finished(within limit: Duration = .seconds(60)) async throws -> CommandResult {
        do {
            try await withTimeLimit(limit, "\(command) to finish") {
                try await self.exited.ended()
                try await self.output.ended()
                try await self.errors.ended()
            }
        } catch {
            kill(-process.processIdentifier, SIGKILL)
            throw error
        }
        let status =
            process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return CommandResult(status: status, output: output.text, errors: errors.text)
    }

    /// Sends `signal` and waits for the process to end.
    @discardableResult
    public func stop(with signal: Int32 = SIGTERM, within limit: Duration = .seconds(20)) async throws -> CommandResult
    {
        if process.isRunning { kill(process.processIdentifier, signal) }
        return try await finished(within: limit)
    }

    deinit {
        if process.isRunning { kill(-process.processIdentifier, SIGKILL) }
    }
}

/// What a child wrote to one of its pipes, and the waits for particular lines of it.
public final class OutputLog: Sendable {
    private enum Expectation {
        case line(containing: String)
        case end
    }

    private struct Waiter {
        var expectation: Expectation
        var continuation: CheckedContinuation<String, any Error>
    }

    private struct State {
        var bytes: [UInt8] = []
        var lines: [String] = []
        var lineStart = 0
        var isEnded = false
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0

        /// The answer to an expectation if it can be given now.
        func outcome(of expectation: Expectation) -> Result<String, any Error>? {
            switch expectation {
            case .line(let text):
                if let line = lines.first(where: { $0.contains(text) }) { return .success(line) }
                return isEnded
                    ? .failure(ChildProcessError(description: "the output ended without a line containing \"\(text)\""))
                    : nil
            case .end:
                return isEnded ? .success("") : nil
            }
        }

        /// Takes out the waiters whose expectation can be answered now.
        mutating func answerable() -> [(CheckedContinuation<String, any Error>, Result<String, any Error>)] {
            var answered: [(CheckedContinuation<String, any Error>, Result<String, any Error>)] = []
            for (key, waiter) in waiters {
                if let outcome = outcome(of: waiter.expectation) {
                    answered.append((waiter.continuation, outcome))
                    waiters[key] = nil
                }
            }
            return answered
        }
    }

    private let state = Mutex(State())

    public var text: String { state.withLock { String(decoding: $0.bytes, as: UTF8.self) } }

    func append(_ data: ArraySlice<UInt8>) {
        let answered = state.withLock { state in
            state.bytes.append(contentsOf: data)
            while let newline = state.bytes[state.lineStart...].firstIndex(of: UInt8(ascii: "\n")) {
                state.lines.append(String(decoding: state.bytes[state.lineStart..<newline], as: UTF8.self))
                state.lineStart = newline + 1
            }
            return state.answerable()
        }
        for (continuation, outcome) in answered { continuation.resume(with: outcome) }
    }

    func end() {
        let answered = state.withLock { state in
            if state.lineStart < state.bytes.count {
                state.lines.append(String(decoding: state.bytes[state.lineStart...], as: UTF8.self))
                state.lineStart = state.bytes.count
            }
            state.isEnded = true
            return state.answerable()
        }
        for (continuation, outcome) in answered { continuation.resume(with: outcome) }
    }

    public func line(containing text: String) async throws -> String {
        try await wait(for: .line(containing: text))
    }

    public func ended() async throws {
        _ = try await wait(for: .end)
    }

    private func wait(for expectation: Expectation) async throws -> String {
        let key = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let immediate: Result<String, any Error>? = state.withLock { state in
                    if let outcome = state.outcome(of: expectation) { return outcome }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[key] = Waiter(expectation: expectation, continuation: continuation)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: key) }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }
}

/// Runs `operation`, or throws when it is not done within `limit` (the operation is cancelled then).
public func withTimeLimit<T: Sendable>(
    _ limit: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw ChildProcessError(description: "waited \(limit) for \(what)")
        }
        return value
    }
}
