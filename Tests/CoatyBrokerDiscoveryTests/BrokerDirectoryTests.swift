import CoatyBrokerDiscovery
import CoatyMQTT
import Testing

/// The choice of broker among mDNS announcements (the browse itself runs against a real avahi-daemon in
/// Tests/Discovery/run).
@Suite("mDNS broker directory")
struct BrokerDirectoryTests {
    private let name = MDNSBrokerDiscovery.defaultServiceName

    private func announcement(
        _ address: String, port: Int = 1883, interface: Int32 = 2, name: String? = nil, isIPv6: Bool = false
    ) -> BrokerDirectory.Announcement {
        BrokerDirectory.Announcement(
            name: name ?? self.name, interface: interface, address: address, hostName: "pi-\(port).local", port: port,
            isIPv6: isIPv6)
    }

    private func key(_ announcement: BrokerDirectory.Announcement) -> BrokerDirectory.ServiceKey {
        BrokerDirectory.ServiceKey(
            name: announcement.name, interface: announcement.interface, isIPv6: announcement.isIPv6)
    }

    @Test("only services of the wanted instance name count")
    func filtersByName() {
        var directory = BrokerDirectory(serviceName: name)
        let otherNameCounted = directory.found(announcement("10.0.0.9", name: "Other Broker"))
        #expect(!otherNameCounted)
        #expect(directory.chosen == nil)
        let chosenFirst = directory.found(announcement("10.0.0.1"))
        #expect(chosenFirst)
        #expect(directory.chosen?.address == "10.0.0.1")
    }

    @Test("the broker in use stays while announced, and the next one takes over when it goes away")
    func followsTheBroker() {
        var directory = BrokerDirectory(serviceName: name)
        let first = announcement("10.0.0.5", port: 1883, interface: 2)
        let second = announcement("10.0.0.1", port: 1884, interface: 3)
        directory.found(first)
        // Another broker appears: the one in use stays, although the newcomer sorts first.
        let newcomerTookOver = directory.found(second)
        #expect(!newcomerTookOver)
        #expect(directory.chosen?.address == "10.0.0.5")
        // The one in use goes away: the other takes over.
        let tookOver = directory.removed(key(first))
        #expect(tookOver)
        #expect(directory.chosen?.address == "10.0.0.1")
        #expect(directory.chosen?.port == 1884)
        let lastGone = directory.removed(key(second))
        #expect(lastGone)
        #expect(directory.chosen == nil)
        let goneAgain = directory.removed(key(second))
        #expect(!goneAgain, "removing what is gone changes nothing")
    }

    @Test("one broker announced on several interfaces is kept while any announcement of it remains; IPv4 first")
    func severalAnnouncementsOfOneBroker() {
        var directory = BrokerDirectory(serviceName: name)
        let overIPv6 = announcement("fe80::1%eth0", interface: 2, isIPv6: true)
        let overIPv4 = announcement("10.0.0.5", interface: 2)
        let onWifi = announcement("10.0.0.5", interface: 3)
        directory.found(overIPv6)
        #expect(directory.chosen?.address == "fe80::1%eth0")
        let preferredIPv4 = directory.found(overIPv4)
        #expect(preferredIPv4, "an IPv4 address is preferred (no interface scope)")
        directory.found(onWifi)
        let switchedAway = directory.removed(key(overIPv4))
        #expect(!switchedAway, "still announced on the other interface")
        #expect(directory.chosen?.address == "10.0.0.5")
        #expect(directory.chosen?.interface == 3)
    }

    @Test("brokerUrl mdns and mdns:<name> are mDNS lookups; anything else is a URL as before")
    func parsesAddresses() throws {
        #expect(try BrokerAddress(parsing: "mdns") == .mdns(serviceName: "Coaty MQTT Broker"))
        #expect(try BrokerAddress(parsing: "mdns:Greenhouse Broker") == .mdns(serviceName: "Greenhouse Broker"))
        #expect(
            try BrokerAddress(parsing: "mqtt://pi.local:1884")
                == .url(MQTTBrokerURL(host: "pi.local", port: 1884, usesTLS: false)))
        for bad in ["mdns:", "mdns:" + String(repeating: "x", count: 64), "mdns:a\u{7}b"] {
            #expect(throws: MQTTBrokerURLError.self, "\(bad)") { try BrokerAddress(parsing: bad) }
        }
        #expect(throws: MQTTBrokerURLError.self) { try BrokerAddress(parsing: "mdnsx") }
    }
}
