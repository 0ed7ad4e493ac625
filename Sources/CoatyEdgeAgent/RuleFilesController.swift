import CoatyIORouting
import CoatyRuntime
import RoutingRules

/// Gives a router the rules of a rules path (a directory of JSON rule files, or one file), again whenever they
/// change on disk, also when the path itself is replaced. A change that does not load is logged with file, JSON
/// path and reason, and the router keeps its last good rules.
final class RuleFilesController: Controller {
    private let router: IoRouter
    private let path: String
    private let initial: RoutingRuleSet

    init(router: IoRouter, path: String, initial: RoutingRuleSet) {
        self.router = router
        self.path = path
        self.initial = initial
    }

    func whileStarted(_ context: ControllerContext) async {
        var current = initial
        logWarnings(of: initial, context)
        var failed = false
        for await outcome in RulePathWatcher(path: path) {
            switch outcome {
            case .success(let rules):
                let recovered = failed
                failed = false
                guard rules != current else {
                    if recovered { context.logger.notice("the routing rules in \(path) load again, unchanged") }
                    continue
                }
                current = rules
                context.logger.notice("reloaded \(rules.rules.count) routing rules from \(path)")
                logWarnings(of: rules, context)
                router.setRules(rules)
            case .failure(let error):
                failed = true
                context.logger.error("rules in \(path) not reloaded, keeping the last good ones:\n\(error)")
            }
        }
    }

    private func logWarnings(of rules: RoutingRuleSet, _ context: ControllerContext) {
        let warnings = rules.warnings(context: router.context)
        guard !warnings.isEmpty else { return }
        context.logger.warning("\(warnings.map(\.description).joined(separator: "\n"))")
    }
}

/// Prints every value this agent's IO actors receive, one line each: what a newcomer watches in the demo.
final class ConsoleController: Controller {
    private let actors: IoActorController

    init(actors: IoActorController) {
        self.actors = actors
    }

    func whileStarted(_ context: ControllerContext) async {
        let ioActors = context.communicationManager.ioNodeDefinitions.flatMap(\.ioActors)
        await withDiscardingTaskGroup { group in
            for actor in ioActors {
                group.addTask {
                    // A value received before this run is replayed first: print only what arrives now.
                    var isReplay = self.actors.latestValue(of: actor) != nil
                    for await value in self.actors.values(of: actor) {
                        guard !isReplay else {
                            isReplay = false
                            continue
                        }
                        switch value {
                        case .json(let json): context.logger.info("\(actor.name) received \(json)")
                        case .raw(let bytes): context.logger.info("\(actor.name) received \(bytes.count) bytes")
                        }
                    }
                }
                group.addTask {
                    for await isAssociated in self.actors.associations(of: actor) {
                        context.logger.info("\(actor.name) is \(isAssociated ? "associated" : "not associated")")
                    }
                }
            }
        }
    }
}
