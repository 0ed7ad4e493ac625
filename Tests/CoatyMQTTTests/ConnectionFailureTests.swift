import Glibc
import Testing

@testable import CoatyMQTT

/// The reasons an operator reads, from the broker's CONNACK codes, OpenSSL's log lines and errno.
@Suite struct ConnectionFailureTests {
    @Test func namesTheBrokersRefusal() {
        #expect(
            ConnectionFailure.refusal(connack: 4)
                == "the broker refused the connection: bad user name or password (CONNACK 4)")
        #expect(
            ConnectionFailure.refusal(connack: 5) == "the broker refused the connection: not authorised (CONNACK 5)")
        #expect(
            ConnectionFailure.refusal(connack: 2)
                == "the broker refused the connection: identifier rejected (CONNACK 2)")
    }

    @Test func namesTheSystemsError() {
        #expect(ConnectionFailure.system(ECONNREFUSED) == "connection refused")
        #expect(ConnectionFailure.system(EHOSTUNREACH) == "no route to host")
    }

    @Test func readsTLSReasonsFromLibmosquittosLog() {
        func reason(_ line: String, verifyResult: Int = 0) -> String? {
            ConnectionFailure.tls(logLine: line, host: "pi.local", verifyResult: { verifyResult })
        }
        let verifyFailed = "OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed"
        #expect(
            reason(verifyFailed, verifyResult: 20)
                == "TLS: certificate verify failed (unknown CA: unable to get local issuer certificate)")
        #expect(reason(verifyFailed, verifyResult: 10) == "TLS: certificate verify failed (certificate has expired)")
        #expect(
            reason(verifyFailed, verifyResult: 62)
                == "TLS: the broker's certificate does not name pi.local (hostname mismatch)")
        #expect(reason(verifyFailed) == "TLS: certificate verify failed")
        #expect(
            reason("Error: host name verification failed.")
                == "TLS: the broker's certificate does not name pi.local (hostname mismatch)")
        #expect(
            reason("OpenSSL Error[0]: error:0A000418:SSL routines::tlsv1 alert unknown ca")
                == "TLS: the broker does not accept the client certificate (tlsv1 alert unknown ca)")
        #expect(
            reason("OpenSSL Error[0]: error:0A00010B:SSL routines::wrong version number") == "TLS: wrong version number"
        )
        // Other errors of libmosquitto are not about TLS.
        #expect(reason("Error: Invalid argument.") == nil)
    }
}
