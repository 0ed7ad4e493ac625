import CMosquitto
import Glibc

/// Calls `body` with the filters as an array of C strings, as libmosquitto's `_multiple` calls take them.
func withCStrings(_ strings: [String], _ body: (Int32, UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Int32) -> Int32 {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    guard !copies.contains(nil) else { return MOSQ_ERR_NOMEM.rawValue }
    return copies.withUnsafeBufferPointer { pointers in
        guard let base = pointers.baseAddress else { return MOSQ_ERR_INVAL.rawValue }
        return body(Int32(pointers.count), base)
    }
}

/// libmosquitto's wake-up pipe, which this transport closes: its poll loop has an eventfd of its own.
///
/// libmosquitto 2.0 writes one byte into an internal socket pair for every packet it queues (`packet__queue`), so
/// that its own select loop (`mosquitto_loop`) wakes up; only that loop reads it. The transport runs its own loop
/// over the external-loop calls, so nobody reads the pair: once its buffer is full (a few hundred bytes of a
/// unix socket's budget), every publication costs a write that fails with EAGAIN, a wasted system call per value.
/// There is no option to turn it off, but libmosquitto skips the write, and all other use of the pair, when its
/// descriptors are `INVALID_SOCKET`, as they are when `socketpair` fails in `mosquitto_reinitialise` (which it only
/// logs). `struct mosquitto` of the client library begins with `sock, sockpairR, sockpairW`
/// (lib/mosquitto_internal.h, unchanged from 1.4 to 2.0); the pair is only touched after checking that the
/// library is 2.0, that the first field is the client's socket and that the other two are a connected, empty unix
/// socket pair. If any check fails, the pair stays as libmosquitto made it.
enum LibraryWakePipe {
    /// The pair's descriptors (read end, write end) if `handle` has one; nil once closed.
    static func descriptors(of handle: OpaquePointer) -> (reader: Int32, writer: Int32)? {
        var major: Int32 = 0, minor: Int32 = 0, revision: Int32 = 0
        mosquitto_lib_version(&major, &minor, &revision)
        guard major == 2, minor == 0 else { return nil }
        let fields = UnsafeRawPointer(handle)
        let socket = fields.load(as: Int32.self)
        let reader = fields.load(fromByteOffset: 4, as: Int32.self)
        let writer = fields.load(fromByteOffset: 8, as: Int32.self)
        guard socket == mosquitto_socket(handle), reader >= 0, writer >= 0, reader != writer, reader != socket,
            writer != socket, isUnixStreamSocket(reader), isUnixStreamSocket(writer), areConnected(writer, reader)
        else { return nil }
        return (reader, writer)
    }

    /// Closes the pair and marks it invalid in libmosquitto; false if `handle` has none (or it is not recognised).
    /// Call it before the client connects, on the thread that owns the handle.
    @discardableResult
    static func close(in handle: OpaquePointer) -> Bool {
        guard let (reader, writer) = descriptors(of: handle) else { return false }
        let fields = UnsafeMutableRawPointer(handle)
        fields.storeBytes(of: -1, toByteOffset: 4, as: Int32.self)
        fields.storeBytes(of: -1, toByteOffset: 8, as: Int32.self)
        Glibc.close(reader)
        Glibc.close(writer)
        return true
    }

    private static func isUnixStreamSocket(_ descriptor: Int32) -> Bool {
        func option(_ name: Int32) -> Int32? {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(descriptor, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
        }
        // libmosquitto makes both ends non-blocking.
        let flags = fcntl(descriptor, F_GETFL)
        return flags >= 0 && flags & O_NONBLOCK != 0 && option(SO_DOMAIN) == AF_UNIX
            && option(SO_TYPE) == Int32(SOCK_STREAM.rawValue)
    }

    /// Whether a byte written to `writer` arrives at `reader` (which must be empty before): the two ends of one pair.
    private static func areConnected(_ writer: Int32, _ reader: Int32) -> Bool {
        var byte: UInt8 = 0
        guard recv(reader, &byte, 1, Int32(MSG_DONTWAIT) | Int32(MSG_PEEK)) < 0, errno == EAGAIN || errno == EWOULDBLOCK
        else { return false }
        var marker: UInt8 = 0x5A
        guard send(writer, &marker, 1, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) == 1 else { return false }
        return recv(reader, &byte, 1, Int32(MSG_DONTWAIT)) == 1 && byte == marker
    }
}
