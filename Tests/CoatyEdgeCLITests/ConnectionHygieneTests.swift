import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeCLI

/// What an operator sees when a connection fails (the broker's, the TLS library's or the system's reason, in the
/// agent's log and from the client commands), and the refusals of root and of password files others may read.
@Suite(.timeLimit(.minutes(2))) struct ConnectionHygieneTests {
    /// A client command names why it could not connect, with exit status 69.
    @Test func clientsNameWhyTheConnectionFailed() async throws {
        let scratch = try ScratchDirectory("coaty-cli")
        let wrongPassword = try scratch.write("hunter2\n", to: "wrong.password", mode: 0o600).path
        let certificates = try TestCertificates()
        let otherAuthority = try TestCertificates(authorityName: "another test CA")
        let misnamed = try TestCertificates(serverAltName: "DNS:elsewhere.invalid")
        let tlsBroker = try await TestBroker.started(
            TestBroker.Options(tls: certificates, requiresClientCertificate: false))
        let misnamedBroker = try await TestBroker.started(
            TestBroker.Options(tls: misnamed, requiresClientCertificate: false))
        let loginBroker = try await TestBroker.started(TestBroker.Options(users: ["alice": "s3cret"]))
        let closedPort = try freeLoopbackPort()

        let cases: [(arguments: [String], broker: String, reason: String)] = [
            (
                ["--broker", "mqtts://127.0.0.1:\(tlsBroker.port)", "--ca-file", otherAuthority.caFile],
                "127.0.0.1:\(tlsBroker.port)",
                "TLS: certificate verify failed (unknown CA: self-signed certificate in certificate chain)"
            ),
            (
                ["--broker", "mqtts://127.0.0.1:\(misnamedBroker.port)", "--ca-file", misnamed.caFile],
                "127.0.0.1:\(misnamedBroker.port)",
                "TLS: the broker's certificate does not name 127.0.0.1 (hostname mismatch)"
            ),
            (
                [
                    "--broker", "mqtt://127.0.0.1:\(loginBroker.port)", "--username", "alice", "--password-file",
                    wrongPassword,
                ],
                "127.0.0.1:\(loginBroker.port)", "the broker refused the connection: not authorised (CONNACK 5)"
            ),
            (
                [
                    "--broker", "mqtt://127.0.0.1:\(loginBroker.port)", "--username", "mallory", "--password-file",
                    wrongPassword,
                ],
                "127.0.0.1:\(loginBroker.port)", "the broker refused the connection: not authorised (CONNACK 5)"
            ),
            (["--broker", "mqtt://127.0.0.1:\(closedPort)"], "127.0.0.1:\(closedPort)", "connection refused"),
        ]
        for (arguments, broker, reason) in cases {
            let result = try await Executable.run(["agents", "--connect-timeout", "2"] + arguments)
            #expect(result.status == 69, "\(arguments)")
            // The last line; the client's own log (level warning) has said it as it happened.
            #expect(
                result.errors.hasSuffix("\ncoaty-edge: cannot connect to the broker at \(broker): \(reason)\n"),
                "\(arguments)")
        }
    }

    /// At the default log level the agent says why it cannot connect, once for a reason that repeats, and names the
    /// reason again when it gives up after `maxAttempts`.
    @Test func theAgentLogsWhyItCannotConnectAndGivesUpWithTheReason() async throws {
        let broker = try await TestBroker.started(TestBroker.Options(users: ["alice": "s3cret"]))
        let scratch = try ScratchDirectory("coaty-cli")
        let password = try scratch.write("wrong\n", to: "broker.password", mode: 0o600).path
        let config = try scratch.write(
            """
            {
              "common": {"agentIdentity": {"name": "Locked out"}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker.port)", "username": "alice", "passwordFile": "\(password)",
                                "reconnect": {"minDelay": 0.1, "maxDelay": 0.2, "maxAttempts": 3}}
            }
            """, to: "agent.json"
        ).path
        let agent = try await Executable.start(["run", "--config", config])
        let refusal = "the broker refused the connection: not authorised (CONNACK 5)"
        let gaveUp = try await agent.line(containing: "gave up connecting", onErrors: true)
        #expect(
            gaveUp.hasSuffix(
                " error coaty.communication: gave up connecting to the broker at 127.0.0.1:\(broker.port) after 3 attempts: \(refusal)"
            ), "\(gaveUp)")
        let stopped = try await agent.stop(with: SIGTERM)
        #expect(stopped.status == 0, "\(stopped.errors)")
        let warnings = stopped.errors.split(separator: "\n").filter { $0.contains(" warning ") }
        // Four failed attempts (the first connect and three more), one warning: the reason did not change.
        #expect(warnings.count == 1, "\(stopped.errors)")
        #expect(
            warnings.first?.hasSuffix("cannot connect to the broker at 127.0.0.1:\(broker.port): \(refusal)") == true,
            "\(stopped.errors)")
    }

    @Test func theAgentLogsAnUnknownCertificateAuthority() async throws {
        let certificates = try TestCertificates()
        let otherAuthority = try TestCertificates(authorityName: "another test CA")
        let broker = try await TestBroker.started(
            TestBroker.Options(tls: certificates, requiresClientCertificate: false))
        let scratch = try ScratchDirectory("coaty-cli")
        let config = try scratch.write(
            """
            {
              "common": {"agentIdentity": {"name": "Distrustful"}},
              "communication": {"brokerUrl": "mqtts://127.0.0.1:\(broker.port)", "tls": {"caFile": "\(otherAuthority.caFile)"}}
            }
            """, to: "agent.json"
        ).path
        let agent = try await Executable.start(["run", "--config", config])
        let warning = try await agent.line(containing: "cannot connect to the broker", onErrors: true)
        #expect(
            warning.hasSuffix(
                " warning coaty.communication: cannot connect to the broker at 127.0.0.1:\(broker.port): TLS: certificate verify failed (unknown CA: self-signed certificate in certificate chain)"
            ), "\(warning)")
        #expect(try await agent.stop(with: SIGTERM).status == 0)
    }

    /// The tests run as root in containers and CI: there the binary itself shows the refusal; anywhere, the check.
    @Test func runRefusesRootUnlessAllowed() async throws {
        #expect(throws: Never.self) { try AgentRunner.refuseRoot(unless: false, effectiveUser: 1000) }
        #expect(throws: Never.self) { try AgentRunner.refuseRoot(unless: true, effectiveUser: 0) }
        #expect { try AgentRunner.refuseRoot(unless: false, effectiveUser: 0) } throws: { error in
            (error as? CommandFailure)?.status == .configuration
        }
        guard geteuid() == 0 else { return }

        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let config = try scratch.write(
            """
            {"common": {"agentIdentity": {"name": "Root"}}, "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker.port)"}}
            """, to: "agent.json"
        ).path
        let refused = try await Executable.run(["run", "--config", config], allowRoot: false)
        #expect(refused.status == 78)
        #expect(
            refused.errors == """
                coaty-edge: refusing to run the agent as root: run it as an unprivileged user in the groups of its devices \
                (the systemd unit uses "coaty-edge"), or pass --allow-root

                """)
        #expect(!broker.logText.contains("New client connected"))

        let allowed = try await Executable.start(["run", "--config", config, "--allow-root"], allowRoot: false)
        _ = try await allowed.line(containing: "online as Root", onErrors: true)
        #expect(try await allowed.stop(with: SIGTERM).status == 0)
    }

    /// As ssh refuses a key others may read: `run`, `config check` and the clients refuse a password file with mode
    /// 0644 (naming it and what to do) and take it with --allow-open-password-file, or when its mode is 0600.
    @Test func aPasswordFileOthersMayReadIsRefusedUnlessAllowed() async throws {
        let broker = try await TestBroker.started(TestBroker.Options(users: ["alice": "s3cret"]))
        let scratch = try ScratchDirectory("coaty-cli")
        let password = try scratch.write("s3cret\n", to: "broker.password").path
        #expect(chmod(password, 0o644) == 0)
        let config = try scratch.write(
            """
            {
              "common": {"agentIdentity": {"name": "Alice"}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker.port)", "username": "alice", "passwordFile": "\(password)"}
            }
            """, to: "agent.json"
        ).path
        let reason =
            "\(password) is readable by others (0644); chmod 600 it (or allow it with --allow-open-password-file)"

        let refusedRun = try await Executable.run(["run", "--config", config])
        #expect(refusedRun.status == 78)
        #expect(
            refusedRun.errors
                == "coaty-edge: invalid configuration: \(config): $.communication.passwordFile: \(reason)\n")
        let refusedCheck = try await Executable.run(["config", "check", config])
        #expect(refusedCheck.status == 78)
        #expect(refusedCheck.errors == "\(config): $.communication.passwordFile: \(reason)\n")
        #expect(try await Executable.run(["config", "check", config, "--allow-open-password-file"]).status == 0)
        let client = [
            "agents", "--broker", "mqtt://127.0.0.1:\(broker.port)", "--username", "alice", "--password-file", password,
        ]
        let refusedClient = try await Executable.run(client)
        #expect(refusedClient.status == 78)
        #expect(refusedClient.errors == "coaty-edge: \(reason)\n")
        let refusedClientConfig = try await Executable.run(["agents", "--config", config])
        #expect(refusedClientConfig.status == 78)
        #expect(!broker.logText.contains("u'alice'"))

        let allowedClient = try await Executable.run(client + ["--allow-open-password-file", "--census", "0.5"])
        #expect(allowedClient.status == 0, "\(allowedClient.errors)")
        let allowedAgent = try await Executable.start(["run", "--config", config, "--allow-open-password-file"])
        _ = try await allowedAgent.line(containing: "online as Alice", onErrors: true)
        #expect(try await allowedAgent.stop(with: SIGTERM).status == 0)

        #expect(chmod(password, 0o600) == 0)
        let ownerOnly = try await Executable.start(["run", "--config", config])
        _ = try await ownerOnly.line(containing: "online as Alice", onErrors: true)
        #expect(try await ownerOnly.stop(with: SIGTERM).status == 0)
    }
}
