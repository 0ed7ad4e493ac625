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
    /// Then calls `ended`, and the asks go on taking answers until the census is cancelled (by the next census or
    /// the stop): an answer later than the census (a machine so loaded that it came after the first wait, while
    /// nothing known before was missed, so no second round was asked) still counts, only too late to keep
    /// what `ended` dropped. Returns when cancelled; `ended` is not called when that was before the last round.
    package static func run(
        firstWait: Duration, isComplete: @escaping @Sendable () -> Bool, ended: () -> Void,
        ask: @escaping @Sendable () async -> Void
    ) async {
        await withTaskGroup(of: Void.self) { group in
            var wait = firstWait
            for round in 1...count {
                group.addTask { await ask() }
                guard (try? await Task.sleep(for: wait)) != nil else { return group.cancelAll() }
                if round == count || isComplete() { break }
                wait *= 2
            }
            ended()
            await group.waitForAll()
        }
    }
}
