/// A broker address as configured: `mqtt://host[:port]` or `mqtts://host[:port]`, IPv6 hosts in brackets.
public struct MQTTBrokerURL: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var usesTLS: Bool

    public init(host: String, port: Int, usesTLS: Bool) {
        self.host = host
        self.port = port
        self.usesTLS = usesTLS
    }

    public init(parsing text: String) throws(MQTTBrokerURLError) {
        func fail(_ reason: String) -> MQTTBrokerURLError { MQTTBrokerURLError(url: text, reason: reason) }

        guard let schemeEnd = text.firstRange(of: "://") else { throw fail("expected mqtt://host or mqtts://host") }
        switch text[..<schemeEnd.lowerBound].lowercased() {
        case "mqtt": usesTLS = false
        case "mqtts": usesTLS = true
        case let scheme: throw fail("unsupported scheme \"\(scheme)\"; use mqtt or mqtts")
        }
        let authority = text[schemeEnd.upperBound...]
        if let extra = authority.firstIndex(where: { "/?#".contains($0) }) {
            throw fail("unexpected \"\(authority[extra...])\" after the host and port")
        }
        guard !authority.contains("@") else {
            throw fail("user credentials do not belong in the URL; configure username and password separately")
        }

        let portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw fail("missing \"]\" after the IPv6 address") }
            let address = authority[authority.index(after: authority.startIndex)..<close]
            // An optional zone ("fe80::1%eth0") follows the address proper.
            let parts = address.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0].contains(":"), parts[0].allSatisfy({ $0.isASCII && ($0.isHexDigit || ":.".contains($0)) }),
                parts.count == 1
                    || !parts[1].isEmpty && parts[1].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
            else {
                throw fail("\"\(address)\" is not an IPv6 address")
            }
            host = String(address)
            let rest = authority[authority.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else {
                throw fail("unexpected \"\(rest)\" after the IPv6 address")
            }
            portText = rest.isEmpty ? nil : rest.dropFirst()
        } else {
            guard authority.count(where: { $0 == ":" }) <= 1 else {
                throw fail("IPv6 addresses go in brackets, as in mqtt://[::1]:1883")
            }
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0]
            guard !name.isEmpty else { throw fail("missing host") }
            guard name.allSatisfy({ $0.isASCIIDigit || ($0.isASCII && $0.isLetter) || "-._".contains($0) }) else {
                throw fail("\"\(name)\" is not a host name or IPv4 address (IPv6 addresses go in brackets)")
            }
            host = String(name)
            portText = parts.count == 2 ? parts[1] : nil
        }

        if let portText {
            guard portText.allSatisfy(\.isASCIIDigit), let number = Int(portText), (1...65535).contains(number) else {
                throw fail("port \"\(portText)\" is not a number in 1...65535")
            }
            port = number
        } else {
            port = usesTLS ? 8883 : 1883
        }
    }

    public var description: String {
        "\(usesTLS ? "mqtts" : "mqtt")://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }
}

public struct MQTTBrokerURLError: Error, Sendable, Hashable, CustomStringConvertible {
    public var url: String
    public var reason: String

    public init(url: String, reason: String) {
        self.url = url
        self.reason = reason
    }

    public var description: String { "invalid broker URL \"\(url)\": \(reason)" }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isWholeNumber }
}
