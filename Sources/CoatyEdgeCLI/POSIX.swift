#if canImport(Glibc)
    import Glibc
#endif

/// Writes all of `bytes` to a file descriptor, retrying interrupted and partial writes; false when it fails.
func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { send(descriptor: descriptor, $0) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return false }
        offset += written
    }
    return true
}

/// `send` with MSG_NOSIGNAL for sockets (a peer that went away must not raise SIGPIPE), `write` for anything else.
private func send(descriptor: Int32, _ buffer: UnsafeRawBufferPointer) -> Int {
    let sent = Glibc.send(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
    if sent < 0 && errno == ENOTSOCK { return Glibc.write(descriptor, buffer.baseAddress, buffer.count) }
    return sent
}

/// The text of an errno.
func errorText(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}
