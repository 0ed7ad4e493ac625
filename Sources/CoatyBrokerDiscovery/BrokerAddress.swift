import CoatyMQTT

/// A configured broker: a URL, or `mdns` / `mdns:<service name>` to find it by mDNS as Coaty JS agents do.
package enum BrokerAddress: Sendable, Equatable {
    case url(MQTTBrokerURL)
    /// The DNS-SD instance name of a `_coaty-mqtt._tcp` service.
    case mdns(serviceName: String)

    public init(parsing text: String) throws(MQTTBrokerURLError) {
        guard text.lowercased() == "mdns" || text.lowercased().hasPrefix("mdns:") else {
            self = .url(try MQTTBrokerURL(parsing: text))
            return
        }
        if text.count == "mdns".count {
            self = .mdns(serviceName: MDNSBrokerDiscovery.defaultServiceName)
            return
        }
        let name = text.dropFirst("mdns:".count)
        // DNS-SD instance names are up to 63 bytes of UTF-8, without control characters.
        guard !name.isEmpty, name.utf8.count <= 63,
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw MQTTBrokerURLError(
                url: text, reason: "expected mdns or mdns:<service name> (1 to 63 bytes, no control characters)")
        }
        self = .mdns(serviceName: String(name))
    }
}
