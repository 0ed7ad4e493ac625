import CAvahi
import CoatyMQTT
import Glibc
import Synchronization

/// Finds Coaty brokers by mDNS/DNS-SD, as Coaty JS (`MulticastDnsDiscovery.findMqttBrokerService`) and CoatySwift do:
/// services of type `_coaty-mqtt._tcp` named "Coaty MQTT Broker" (or another name), browsed through avahi-daemon with
/// Avahi's client library. It keeps browsing, so `locator` always names a broker that is announced now: the one in use
/// while it stays, another when it went away.
///
/// Avahi's callbacks run on its own thread (a threaded poll); the directory they fill is behind a mutex. When
/// avahi-daemon is not running (or restarts) the client waits for it and browses again.
package final class MDNSBrokerDiscovery: @unchecked Sendable {
    /// The DNS-SD service type of Coaty's MQTT brokers ("coaty-mqtt" over TCP in Coaty JS's bonjour terms).
    public static let serviceType = "_coaty-mqtt._tcp"
    /// The instance name Coaty JS publishes its broker under and looks for by default.
    public static let defaultServiceName = "Coaty MQTT Broker"

    public let serviceName: String
    /// Connect by host name instead of address (for TLS, whose certificate names the host; needs nss-mdns).
    public let connectsByHostName: Bool

    private struct State {
        var directory: BrokerDirectory
        /// Why no broker may be known: avahi-daemon's state.
        var daemonStatus = "waiting for avahi-daemon"
    }
    private let state: Mutex<State>
    private let onChange: @Sendable (String) -> Void

    // Touched only on Avahi's thread, in init before the thread starts, and in `stop` after it ended.
    private let poll: OpaquePointer
    private var client: OpaquePointer?
    private var browser: OpaquePointer?
    private let stopped = Atomic<Bool>(false)

    /// Starts browsing. `onChange` gets a line for the log when the chosen broker changes or avahi-daemon comes or goes.
    public init(
        serviceName: String = MDNSBrokerDiscovery.defaultServiceName, connectsByHostName: Bool = false,
        onChange: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(BrokerDiscoveryError) {
        self.serviceName = serviceName
        self.connectsByHostName = connectsByHostName
        self.onChange = onChange
        state = Mutex(State(directory: BrokerDirectory(serviceName: serviceName)))
        var loadError = [CChar](repeating: 0, count: 512)
        guard coaty_avahi_load(&loadError, loadError.count) == 0 else {
            throw BrokerDiscoveryError(string(from: loadError))
        }
        guard let poll = coaty_avahi_threaded_poll_new() else {
            throw BrokerDiscoveryError("cannot create Avahi's event loop")
        }
        self.poll = poll
        var error: Int32 = 0
        // NO_FAIL: without a running avahi-daemon the client waits for one instead of failing.
        client = coaty_avahi_client_new(
            coaty_avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, avahiClientCallback,
            Unmanaged.passUnretained(self).toOpaque(), &error)
        guard client != nil else {
            stopped.store(true, ordering: .releasing)  // nothing for deinit to stop
            coaty_avahi_threaded_poll_free(poll)
            throw BrokerDiscoveryError(
                "cannot create the Avahi client: \(String(cString: coaty_avahi_strerror(error)))")
        }
        guard coaty_avahi_threaded_poll_start(poll) == 0 else {
            stopped.store(true, ordering: .releasing)
            coaty_avahi_client_free(client)
            coaty_avahi_threaded_poll_free(poll)
            throw BrokerDiscoveryError("cannot start Avahi's event loop")
        }
    }

    /// What the MQTT transport asks before every connection attempt.
    public var locator: MQTTBrokerLocator {
        let description = "mDNS service \"\(serviceName)\" (\(Self.serviceType))"
        return MQTTBrokerLocator(description, owner: self) { [weak self] in
            guard let self else { return .none(reason: "the mDNS browse has stopped") }
            return self.lookup()
        }
    }

    /// The broker in use now, as "address:port" (for logs and tests), if any.
    public var chosenBroker: BrokerDirectory.Announcement? { state.withLock { $0.directory.chosen } }

    private func lookup() -> MQTTBrokerLocator.Lookup {
        state.withLock { state in
            guard let chosen = state.directory.chosen else {
                let status = state.daemonStatus == "running" ? "" : "; \(state.daemonStatus)"
                return .none(
                    reason: "no mDNS service \"\(serviceName)\" of type \(Self.serviceType) announced\(status)")
            }
            return .found(host: connectsByHostName ? chosen.hostName : chosen.address, port: chosen.port)
        }
    }

    /// Ends the browse and Avahi's thread. Call it before releasing the discovery.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        coaty_avahi_threaded_poll_stop(poll)
        // Freeing the client frees its browser and resolvers.
        if let client { coaty_avahi_client_free(client) }
        client = nil
        browser = nil
        coaty_avahi_threaded_poll_free(poll)
    }

    deinit {
        stop()
    }

    // MARK: Avahi's callbacks (on its thread)

    fileprivate func clientStateChanged(_ client: OpaquePointer?, _ clientState: AvahiClientState) {
        switch clientState {
        case AVAHI_CLIENT_S_RUNNING:
            self.client = client
            guard browser == nil else { return }
            browser = coaty_avahi_service_browser_new(
                client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), Self.serviceType, nil,
                AvahiLookupFlags(rawValue: 0),
                avahiBrowseCallback, Unmanaged.passUnretained(self).toOpaque())
            let status =
                browser == nil
                ? "cannot browse: \(String(cString: coaty_avahi_strerror(coaty_avahi_client_errno(client))))"
                : "running"
            state.withLock { $0.daemonStatus = status }
            onChange("mDNS: avahi-daemon \(status == "running" ? "is running, browsing \(Self.serviceType)" : status)")
        case AVAHI_CLIENT_CONNECTING, AVAHI_CLIENT_FAILURE:
            // The daemon went away: its browser and every announcement are gone with it.
            browser = nil
            let reason =
                clientState == AVAHI_CLIENT_FAILURE
                ? "avahi-daemon failed: \(String(cString: coaty_avahi_strerror(coaty_avahi_client_errno(client))))"
                : "waiting for avahi-daemon"
            let hadBroker = state.withLock { state in
                state.daemonStatus = reason
                let had = state.directory.chosen != nil
                state.directory = BrokerDirectory(serviceName: serviceName)
                return had
            }
            onChange("mDNS: \(reason)\(hadBroker ? "; no broker known until it is back" : "")")
        default:
            break
        }
    }

    fileprivate func serviceEvent(
        _ event: AvahiBrowserEvent, interface: AvahiIfIndex, protocol: AvahiProtocol, name: String, type: String,
        domain: String
    ) {
        switch event {
        case AVAHI_BROWSER_NEW:
            guard name == serviceName, let client else { return }
            // Resolved once; the resolver is freed in its callback.
            _ = coaty_avahi_service_resolver_new(
                client, interface, `protocol`, name, type, domain, `protocol`, AvahiLookupFlags(rawValue: 0),
                avahiResolveCallback, Unmanaged.passUnretained(self).toOpaque())
        case AVAHI_BROWSER_REMOVE:
            let key = BrokerDirectory.ServiceKey(
                name: name, interface: interface, isIPv6: `protocol` == AvahiProtocol(AVAHI_PROTO_INET6))
            let (changed, chosen) = state.withLock { state -> (Bool, BrokerDirectory.Announcement?) in
                let changed = state.directory.removed(key)
                return (changed, state.directory.chosen)
            }
            if changed { reportChoice(chosen, after: "\"\(name)\" went away") }
        case AVAHI_BROWSER_FAILURE:
            let reason = String(cString: coaty_avahi_strerror(coaty_avahi_client_errno(client)))
            state.withLock { $0.daemonStatus = "browsing failed: \(reason)" }
            onChange("mDNS: browsing \(Self.serviceType) failed: \(reason)")
        default:
            break
        }
    }

    fileprivate func serviceResolved(_ announcement: BrokerDirectory.Announcement) {
        let (changed, chosen) = state.withLock { state -> (Bool, BrokerDirectory.Announcement?) in
            let changed = state.directory.found(announcement)
            return (changed, state.directory.chosen)
        }
        if changed { reportChoice(chosen, after: "\"\(announcement.name)\" announced") }
    }

    private func reportChoice(_ chosen: BrokerDirectory.Announcement?, after cause: String) {
        if let chosen {
            onChange("mDNS: \(cause); the broker is now \(chosen.hostName) at \(chosen.address):\(chosen.port)")
        } else {
            onChange("mDNS: \(cause); no broker announced now")
        }
    }
}

package struct BrokerDiscoveryError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The text of a NUL-terminated C buffer.
private func string(from buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

// C callbacks: plain functions, as a C function pointer cannot capture; the discovery comes in through userdata.

private func discovery(_ userdata: UnsafeMutableRawPointer?) -> MDNSBrokerDiscovery? {
    userdata.map { Unmanaged<MDNSBrokerDiscovery>.fromOpaque($0).takeUnretainedValue() }
}

private func avahiClientCallback(
    _ client: OpaquePointer?, _ state: AvahiClientState, _ userdata: UnsafeMutableRawPointer?
) {
    discovery(userdata)?.clientStateChanged(client, state)
}

private func avahiBrowseCallback(
    _ browser: OpaquePointer?, _ interface: AvahiIfIndex, _ protocol: AvahiProtocol, _ event: AvahiBrowserEvent,
    _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?,
    _ flags: AvahiLookupResultFlags, _ userdata: UnsafeMutableRawPointer?
) {
    discovery(userdata)?.serviceEvent(
        event, interface: interface, protocol: `protocol`, name: name.map { String(cString: $0) } ?? "",
        type: type.map { String(cString: $0) } ?? "", domain: domain.map { String(cString: $0) } ?? "")
}

private func avahiResolveCallback(
    _ resolver: OpaquePointer?, _ interface: AvahiIfIndex, _ protocol: AvahiProtocol, _ event: AvahiResolverEvent,
    _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?,
    _ hostName: UnsafePointer<CChar>?, _ address: UnsafePointer<AvahiAddress>?, _ port: UInt16,
    _ txt: UnsafeMutablePointer<AvahiStringList>?, _ flags: AvahiLookupResultFlags, _ userdata: UnsafeMutableRawPointer?
) {
    defer { coaty_avahi_service_resolver_free(resolver) }
    guard event == AVAHI_RESOLVER_FOUND, let address, let name, port > 0 else { return }
    var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX) + Int(IF_NAMESIZE) + 1)
    coaty_avahi_address_snprint(&text, text.count, address)
    var addressText = string(from: text)
    // The announcement's protocol, as its removal names it (the address family is the same: it was asked for).
    let isIPv6 = `protocol` == AvahiProtocol(AVAHI_PROTO_INET6)
    // A link-local IPv6 address is usable only with its interface.
    if isIPv6, addressText.lowercased().hasPrefix("fe80:") {
        var interfaceName = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        if if_indextoname(UInt32(bitPattern: interface), &interfaceName) != nil {
            addressText += "%" + string(from: interfaceName)
        }
    }
    discovery(userdata)?.serviceResolved(
        BrokerDirectory.Announcement(
            name: String(cString: name), interface: interface, address: addressText,
            hostName: hostName.map { String(cString: $0) } ?? addressText, port: Int(port), isIPv6: isIPv6))
}
