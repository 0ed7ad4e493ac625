/// How a census after a reconnect (the IO router's of its nodes, `AgentPresence`'s of the agents) asks who is still
/// there. One Discover is not enough: an agent that came back before this one advertised itself unheard, so its answer
/// is all this agent learns of it, and a late answer (a loaded machine, a stalled process) or a lost one (QoS 0: a
/// broker drops what it cannot queue for a client that falls far behind) would drop it, until its next reconnect.
package enum CensusRounds {
    /// At most this many Discovers: the first waits the census timeout, each further one twice as long as the one
    /// before (3 + 6 + 12 s with the default timeout of 3 s).
    package static let count = 3

    /// Runs `ask` (a Discover whose answers it takes until it is cancelled) up to `count` times: the first waits
    /// `firstWait`; a further one starts only while `isComplete` is false and waits twice as long as the one before.
    /// Then cancels them all. Returns false when the census itself was cancelled.
    package static func run(
        firstWait: Duration, isComplete: @escaping @Sendable () -> Bool, ask: @escaping @Sendable () async -> Void
    ) async -> Bool {
        await withTaskGroup(of: Void.self) { group in
            var wait = firstWait
            for round in 1...count {
                group.addTask { await ask() }
                guard (try? await Task.sleep(for: wait)) != nil else { break }
                if round == count || isComplete() { break }
                wait *= 2
            }
            group.cancelAll()
        }
        return !Task.isCancelled
    }
}
