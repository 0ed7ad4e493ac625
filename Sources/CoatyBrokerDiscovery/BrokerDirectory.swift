/// The brokers an mDNS browse has found, and the one an agent uses: it stays with its broker while that is announced,
/// and takes another only when its own went away. Pure logic, fed by `AvahiBrokerBrowser` (or a test).
package struct BrokerDirectory: Sendable, Equatable {
    /// One announcement of a service: the same service is announced once per network interface and address family.
    public struct Announcement: Sendable, Hashable, Comparable {
        /// The DNS-SD service instance name, e.g. "Coaty MQTT Broker".
        public var name: String
        public var interface: Int32
        /// The resolved address (IPv6 link-local ones with "%interface"), and the host name it was announced with.
        public var address: String
        public var hostName: String
        public var port: Int
        public var isIPv6: Bool

        public init(name: String, interface: Int32, address: String, hostName: String, port: Int, isIPv6: Bool) {
            self.name = name
            self.interface = interface
            self.address = address
            self.hostName = hostName
            self.port = port
            self.isIPv6 = isIPv6
        }

        /// IPv4 first (no interface scope needed), then by name, address and port, so that the choice is stable.
        public static func < (left: Announcement, right: Announcement) -> Bool {
            (left.isIPv6 ? 1 : 0, left.name, left.address, left.port, left.interface)
                < (right.isIPv6 ? 1 : 0, right.name, right.address, right.port, right.interface)
        }
    }

    /// The key avahi removes a service by: it does not repeat the address then.
    public struct ServiceKey: Sendable, Hashable {
        public var name: String
        public var interface: Int32
        public var isIPv6: Bool

        public init(name: String, interface: Int32, isIPv6: Bool) {
            self.name = name
            self.interface = interface
            self.isIPv6 = isIPv6
        }
    }

    /// Only services of this instance name count.
    public let serviceName: String
    public private(set) var announcements: [ServiceKey: Announcement] = [:]
    /// The broker in use: kept while any announcement of it remains.
    public private(set) var chosen: Announcement?

    public init(serviceName: String) {
        self.serviceName = serviceName
    }

    /// A resolved service; one of another name is ignored. Returns whether the chosen broker changed.
    @discardableResult
    public mutating func found(_ announcement: Announcement) -> Bool {
        guard announcement.name == serviceName else { return false }
        announcements[
            ServiceKey(name: announcement.name, interface: announcement.interface, isIPv6: announcement.isIPv6)] =
            announcement
        return choose()
    }

    /// A service went away. Returns whether the chosen broker changed.
    @discardableResult
    public mutating func removed(_ key: ServiceKey) -> Bool {
        guard announcements.removeValue(forKey: key) != nil else { return false }
        return choose()
    }

    /// The chosen broker (its host name and port) stays while any announcement of it remains, as a broker is announced
    /// on several interfaces and address families; its best announcement is used. When none remains, the first of
    /// the others in `Announcement` order takes its place.
    private mutating func choose() -> Bool {
        let previous = chosen
        if let current = chosen,
            let same = announcements.values.filter({ $0.hostName == current.hostName && $0.port == current.port }).min()
        {
            chosen = same
        } else {
            chosen = announcements.values.min()
        }
        return chosen?.address != previous?.address || chosen?.port != previous?.port
    }
}
