import Glibc
import ProcessSpawning

/// A mosquitto of the benchmark's own on 127.0.0.1, on a free port, configured in a fresh temporary directory.
/// It logs errors and warnings only: logging every message would make the broker the bottleneck.
final class LocalBroker {
    let port: Int
    private let pid: pid_t
    private let directory: String
    private var isRunning = true

    private init(port: Int, pid: pid_t, directory: String) {
        self.port = port
        self.pid = pid
        self.directory = directory
    }

    /// Starts mosquitto and returns once it accepts connections.
    /// - Parameter tcpNoDelay: `set_tcp_nodelay true`, as in coaty-edge's broker configuration; without it, the
    ///   broker holds a packet written behind an unacknowledged one until the client's delayed ACK, 40 ms on
    ///   Linux (a Return behind its SUBACK, a value behind a value).
    static func start(tcpNoDelay: Bool) async throws(BenchmarkError) -> LocalBroker {
        let executable = try findExecutable("mosquitto")
        var template = Array("\(temporaryDirectory())/coaty-edge-bench-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw .system("cannot create a temporary directory", errno) }
        let directory = String(cString: created)
        let port = try freeLoopbackPort()
        let configuration =
            [
                "listener \(port) 127.0.0.1",
                "allow_anonymous true",
                "persistence false",
                "set_tcp_nodelay \(tcpNoDelay)",
                "log_dest stderr",
                "log_type error",
                "log_type warning",
                // Started as root, mosquitto would switch to the user "mosquitto".
                "user \(currentUserName())",
            ].joined(separator: "\n") + "\n"
        try writeFile("\(directory)/mosquitto.conf", configuration)
        let pid: pid_t
        do {
            pid = try spawnWithDefaultSignals(
                executable, arguments: ["-c", "\(directory)/mosquitto.conf"], errorFile: "\(directory)/stderr")
        } catch {
            throw .system("cannot start \(executable)", error.code)
        }
        let broker = LocalBroker(port: port, pid: pid, directory: directory)

        let deadline = monotonicNanoseconds() + 10_000_000_000
        while !acceptsConnections(port: port) {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                broker.isRunning = false
                let output = readFile("\(directory)/stderr")
                broker.stop()
                throw .broker("mosquitto exited at start: \(output)")
            }
            guard monotonicNanoseconds() < deadline else {
                broker.stop()
                throw .broker("mosquitto did not accept connections on port \(port) within 10 s")
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return broker
    }

    /// Ends the broker (SIGTERM, as on a shutdown) and removes its directory.
    func stop() {
        if isRunning {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            isRunning = false
        }
        for file in ["mosquitto.conf", "stderr"] { unlink("\(directory)/\(file)") }
        rmdir(directory)
    }

    deinit {
        stop()
    }
}

private func temporaryDirectory() -> String {
    getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
}

private func findExecutable(_ name: String) throws(BenchmarkError) -> String {
    let path = getenv("PATH").map { String(cString: $0) } ?? ""
    for directory in path.split(separator: ":") + ["/usr/sbin", "/usr/local/sbin"] {
        let candidate = "\(directory)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    throw .broker("\(name) is not installed (or pass --broker)")
}

/// A port nobody listens on now; the kernel does not hand the same ephemeral port out again right away.
private func freeLoopbackPort() throws(BenchmarkError) -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw .system("socket", errno) }
    defer { close(fd) }
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(fd, address, length) == 0 && getsockname(fd, address, &length) == 0
        }
    }
    guard bound else { throw .system("bind", errno) }
    return Int(UInt16(bigEndian: address.sin_port))
}

private func acceptsConnections(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = loopbackAddress(port: port)
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            connect(fd, address, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

private func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return address
}

private func writeFile(_ path: String, _ text: String) throws(BenchmarkError) {
    guard let file = fopen(path, "w") else { throw .system("cannot write \(path)", errno) }
    defer { fclose(file) }
    guard fputs(text, file) >= 0 else { throw .system("cannot write \(path)", errno) }
}

private func readFile(_ path: String) -> String {
    guard let file = fopen(path, "r") else { return "" }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        guard count > 0 else { break }
        bytes += buffer[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

private func currentUserName() -> String {
    guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "root" }
    return String(cString: name)
}
