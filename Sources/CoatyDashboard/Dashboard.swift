import CoatyEdgeCLI
import CoatyJSON
import CoatyModel
import CoatySharedObjects
import Hummingbird
import Logging

/// `coaty-edge-dashboard`: follows the broker as `observe` does and serves the page until the task is cancelled.
public enum Dashboard {
    static func onlyValues(_ step: ObserveSession.Step) -> Bool {
        guard case .events(let events) = step else { return false }
        return events.allSatisfy { $0.kind == "value" }
    }

    /// Serves on an online session; `serving` gets the address once the server listens (port 0: the one chosen).
    public static func run(
        _ session: ClientSession, settings: DashboardSettings, logger: Logger,
        serving: @escaping @Sendable (String) -> Void = {
            StandardOutput.write("coaty-edge-dashboard: serving \($0)\n")
        }
    ) async throws {
        let hub = DashboardHub(settings: settings)
        let manager = session.manager
        let timeout = settings.contextTimeout
        let router = DashboardServer.router(hub: hub) { context, key, value, expectedVersion in
            try await ContextCommands.setProperty(
                session, contextName: context, key: key, value: value, expectedVersion: expectedVersion,
                timeout: timeout)
        }
        let host = settings.host
        let application = Application(
            router: router, configuration: .init(address: .hostname(host, port: settings.port), serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? settings.port
                serving("http://\(host.contains(":") ? "[\(host)]" : host):\(port)/")
            },
            logger: logger)

        // The server and the watchers run until one of them ends (the server on an error, the watchers when the
        // task is cancelled); the watchers' own one-off tasks (the startup Discover) may end before.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await withDiscardingTaskGroup { group in
                    group.addTask {
                        await ObserveSession.follow(
                            session, filter: ObserveModel.Filter(), tick: .seconds(15), asksForRules: true
                        ) { model, step, now in
                            await hub.apply(Self.onlyValues(step) ? nil : model, step: step, at: now)
                        }
                    }
                    group.addTask {
                        for await state in manager.communicationStates() { await hub.setBrokerOnline(state.isOnline) }
                    }
                    // Shared objects: those there now, every new version, and their deletion.
                    if let advertised = try? manager.observeAdvertise(objectType: SharedObjectWire.objectType) {
                        group.addTask {
                            for await advertise in advertised {
                                if let state = SharedObjectState(advertise.event.object) {
                                    await hub.apply(sharedObject: state)
                                }
                            }
                        }
                    }
                    let deadvertised = manager.observeDeadvertise()
                    group.addTask {
                        for await deadvertise in deadvertised {
                            await hub.removeSharedObjects(deadvertise.event.objectIds)
                        }
                    }
                    group.addTask {
                        for await resolve in manager.publishDiscover(
                            .objectTypes([SharedObjectWire.objectType]), timeout: .seconds(3))
                        {
                            if let object = resolve.event.object, let state = SharedObjectState(object) {
                                await hub.apply(sharedObject: state)
                            }
                        }
                    }
                    // Open event streams would hold the server's shutdown: end them when the dashboard stops.
                    group.addTask {
                        await withTaskCancellationHandler {
                            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                        } onCancel: {
                            Task { await hub.close() }
                        }
                    }
                }
            }
            group.addTask { try await application.run() }
            try await group.next()
            group.cancelAll()
        }
    }
}
