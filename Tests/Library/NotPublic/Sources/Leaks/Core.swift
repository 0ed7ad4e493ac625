import CoatyCommunication
import CoatyModel

// CoatyCore: topic-name checks and log budgets are the manager's own business.
func coreLeaks() {
    _ = CoatyName.isValid("room")
    _ = LogBudget(limit: 1, per: .seconds(1))
}
