import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatySharedObjects
import CoatyTesting
import Testing
import Ventilation

/// The ventilation agent follows a shared object hosted by another agent and set by a third, over a real mosquitto.
@Suite struct VentilationTests {
    @Test func followsTheSharedSettingAndClosesWithoutAHost() async throws {
        let broker = try await TestBroker.started()
        let communication = CommunicationOptions(
            port: broker.port,
            reconnect: MQTTReconnectPolicy(minimumDelay: .milliseconds(50), maximumDelay: .milliseconds(500)))
        func agent(
            _ name: String, _ controllers: [(name: String, controller: any Controller)] = []
        ) async throws -> Container {
            try await Container.resolve(
                configuration: Configuration(identity: Identity(name: name), communication: communication),
                controllers: controllers)
        }
        let settings = try await agent("settings")
        let ventilation = VentilationController()
        let greenhouse = try await agent("greenhouse", [("Ventilation", ventilation)])
        let dashboard = try await agent("dashboard")
        for container in [settings, greenhouse, dashboard] { container.start() }
        let announcements = Recorder(try dashboard.communicationManager.observeChannel(VentilationController.channelId))
        let opens: @Sendable ([ReceivedEvent<ChannelEvent>]) -> [Bool?] = { events in
            events.map { event in
                guard case .object(let state) = event.event.content else { return nil }
                return state["open"]?.boolValue
            }
        }
        try await poll { dashboard.communicationManager.communicationState.isOnline }

        try await settings.sharedObjects.host(
            SharedObjectDefinition(name: VentilationController.sharedObjectName, data: ["ventsOpen": false]))
        let setting = try await dashboard.sharedObjects.connect(
            VentilationController.sharedObjectName, ifMissing: .wait)
        try await poll(within: .seconds(20)) { setting.status == .connected }
        _ = try await setting.set("ventsOpen", to: true)
        try await announcements.wait(within: .seconds(20), "vents open") { opens($0).last == true }
        try await poll { ventilation.isOpen }

        // The host goes away: the vents close although the last setting said open.
        await settings.shutdown()
        try await announcements.wait(within: .seconds(30), "vents closed") { opens($0).last == false }
        #expect(!ventilation.isOpen)
        let reasons = announcements.elements.compactMap { event -> String? in
            guard case .object(let state) = event.event.content else { return nil }
            return state["reason"]?.stringValue
        }
        #expect(reasons.last == "host unavailable")

        setting.disconnect()
        await dashboard.shutdown()
        await greenhouse.shutdown()
        try await broker.stop()
    }
}
