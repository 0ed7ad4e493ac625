import CoatyIORouting

// CoatyIORouting: the router's evaluation engine is reached through IoRouter only.
func ioRoutingLeaks() {
    _ = IoRouterEvaluation.defaultMaximumMatches
}
