/// The exit statuses of `coaty-edge`, one meaning each, so that scripts and systemd can tell them apart.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    case success = 0
    /// The request was refused or nobody answered it (a stale context update, no router, no such context).
    case failure = 1
    /// The command line is wrong (swift-argument-parser's validation failure, EX_USAGE).
    case usage = 64
    /// The broker could not be reached in time (EX_UNAVAILABLE).
    case unavailable = 69
    /// A configuration or rule file is invalid (EX_CONFIG). Restarting does not help, so the systemd unit
    /// sets `RestartPreventExitStatus=78`.
    case configuration = 78
}

/// An error that ends a command with a message and a particular exit status.
public struct CommandFailure: Error, CustomStringConvertible {
    public var status: ExitStatus
    public var description: String

    public init(_ status: ExitStatus, _ description: String) {
        self.status = status
        self.description = description
    }
}
