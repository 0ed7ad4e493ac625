import Foundation

/// A certificate authority with a server certificate for 127.0.0.1 and a client certificate, made with the
/// `openssl` command-line tool in a temporary directory that lives as long as this object.
public final class TestCertificates: Sendable {
    public let caFile: String
    public let serverCertFile: String
    public let serverKeyFile: String
    public let clientCertFile: String
    public let clientKeyFile: String
    private let directory: ScratchDirectory

    /// `serverAltName` is the server certificate's subject alternative name, e.g. `IP:127.0.0.1` or `DNS:elsewhere`.
    /// A second authority needs a name of its own: OpenSSL finds an issuer by name, and one of the same name fails
    /// the signature check instead of being unknown.
    public init(serverAltName: String = "IP:127.0.0.1", authorityName: String = "coaty-edge test CA") throws {
        let directory = try ScratchDirectory("coaty-pki")
        self.directory = directory
        func path(_ name: String) -> String { directory.url.appending(path: name).path }
        let ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let caFile = path("ca.crt")
        self.caFile = caFile
        try runTool(
            "openssl",
            ["req", "-x509"] + ecKey + [
                "-keyout", path("ca.key"), "-out", caFile, "-days", "2", "-subj", "/CN=\(authorityName)",
            ])
        let extensions = path("server.ext")
        try "subjectAltName=\(serverAltName)\n".write(toFile: extensions, atomically: true, encoding: .utf8)
        func issue(_ name: String, extraArguments: [String]) throws -> (String, String) {
            try runTool(
                "openssl",
                ["req"] + ecKey + [
                    "-keyout", path("\(name).key"), "-out", path("\(name).csr"), "-subj", "/CN=coaty-edge test \(name)",
                ])
            try runTool(
                "openssl",
                [
                    "x509", "-req", "-in", path("\(name).csr"), "-CA", caFile, "-CAkey", path("ca.key"),
                    "-CAcreateserial", "-out", path("\(name).crt"), "-days", "2",
                ] + extraArguments)
            return (path("\(name).crt"), path("\(name).key"))
        }
        (serverCertFile, serverKeyFile) = try issue("server", extraArguments: ["-extfile", extensions])
        (clientCertFile, clientKeyFile) = try issue("client", extraArguments: [])
    }
}
