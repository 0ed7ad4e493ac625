import CoatyCommunication
import CoatyModel

// CoatyCore: topic-name checks, the wire codec and log budgets are the manager's own business.
func coreLeaks() {
    _ = CoatyName.isValid("room")
    _ = CoatyCodec.self
    _ = LogBudget(limit: 1, per: .seconds(1))
}
