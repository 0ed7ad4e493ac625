import CMosquitto
import Glibc

/// Why a connection attempt failed, as an operator can act on it: the broker's CONNACK refusal, the TLS library's
/// reason, or the system's error for the socket. These are the reasons of `MQTTConnectionEvent.connectionLost`.
enum ConnectionFailure {
    /// "the broker refused the connection: not authorised (CONNACK 5)".
    static func refusal(connack code: Int32) -> String {
        var text = String(cString: mosquitto_connack_string(code))
        if text.hasPrefix("Connection Refused: ") { text.removeFirst("Connection Refused: ".count) }
        if text.hasSuffix(".") { text.removeLast() }
        return "the broker refused the connection: \(text) (CONNACK \(code))"
    }

    /// "connection refused", "no route to host": the text of a system error number.
    static func system(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }

    /// The reason in an error line of libmosquitto's log, if it is about TLS, else nil. libmosquitto logs OpenSSL's
    /// error queue ("OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed") and its own host name
    /// check ("Error: host name verification failed."); `verifyResult` gives the certificate check's details while
    /// the handshake is still there (0 if it cannot).
    static func tls(logLine line: String, host: String, verifyResult: () -> Int) -> String? {
        if line.contains("host name verification failed") {
            return hostnameMismatch(host)
        }
        guard line.hasPrefix("OpenSSL Error"), let start = line.firstRange(of: "error:") else { return nil }
        // error:<code>:<library>:<function>:<reason>
        let fields = line[start.upperBound...].split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
        let reason = fields.count == 4 ? String(fields[3]) : String(line[start.lowerBound...])
        if reason.contains("certificate verify failed") {
            return verification(verifyResult(), host: host)
        }
        if reason.contains("alert unknown ca") || reason.contains("alert bad certificate") {
            return "TLS: the broker does not accept the client certificate (\(reason))"
        }
        if reason.contains("alert certificate required") {
            return "TLS: the broker requires a client certificate (\(reason))"
        }
        return "TLS: \(reason)"
    }

    /// The TLS session failed after the handshake, before the CONNACK, without a reason from OpenSSL: with TLS 1.3 the
    /// broker checks the client certificate after the client finished its part of the handshake, and closes.
    static func tlsSessionEnded(withClientCertificate: Bool) -> String {
        let question =
            withClientCertificate ? "does it trust the client certificate?" : "does it require a client certificate?"
        return "TLS: the broker ended the session before it accepted the connection (\(question))"
    }

    /// The socket hung up during the TLS handshake, before any TLS failure was reported: with the system's error for
    /// it where the socket still held one ("connection refused"), else that the connection ended.
    static func handshakeEnded(socketError: Int32) -> String {
        let cause = socketError != 0 ? system(socketError) : "the connection ended"
        return "TLS: \(cause) during the handshake"
    }

    /// OpenSSL's X509_V_ERR codes that mean the broker's certificate does not lead to a trusted CA.
    private static let unknownAuthority: Set<Int> = [2, 18, 19, 20, 21]
    private static let hostnameMismatchCode = 62

    private static func verification(_ result: Int, host: String) -> String {
        if result == hostnameMismatchCode { return hostnameMismatch(host) }
        guard result != 0, let text = verifyErrorText(result) else { return "TLS: certificate verify failed" }
        if unknownAuthority.contains(result) { return "TLS: certificate verify failed (unknown CA: \(text))" }
        return "TLS: certificate verify failed (\(text))"
    }

    private static func hostnameMismatch(_ host: String) -> String {
        "TLS: the broker's certificate does not name \(host) (hostname mismatch)"
    }

    /// The result of the broker certificate's check in the handshake of `handle`, while it is still there (in a log
    /// callback); 0 if there is none. libssl is in the process with libmosquitto; it is looked up rather than linked,
    /// so that building needs no OpenSSL headers.
    static func verifyResult(of handle: OpaquePointer) -> Int {
        guard let ssl = mosquitto_ssl_get(handle), let getVerifyResult = OpenSSL.getVerifyResult else { return 0 }
        return getVerifyResult(ssl)
    }

    private static func verifyErrorText(_ code: Int) -> String? {
        OpenSSL.verifyErrorString.flatMap { $0(code) }.map { String(cString: $0) }
    }

    private enum OpenSSL {
        typealias GetVerifyResult = @convention(c) (UnsafeMutableRawPointer) -> Int
        typealias VerifyErrorString = @convention(c) (Int) -> UnsafePointer<CChar>?

        static let getVerifyResult: GetVerifyResult? = symbol("SSL_get_verify_result")
        static let verifyErrorString: VerifyErrorString? = symbol("X509_verify_cert_error_string")

        private static func symbol<Function>(_ name: String) -> Function? {
            guard let process = dlopen(nil, RTLD_NOW), let address = dlsym(process, name) else { return nil }
            return unsafeBitCast(address, to: Function.self)
        }
    }
}
