/// Topic filters in the order they were first added, each with the number of adds not yet taken back: the filters
/// a transport renews after every reconnect (each inserted once), and a communication manager's, which counts the
/// observers needing each. Membership is a dictionary lookup and removing one is O(1), since filters come and go one by one (a
/// response subscription per pending request, an `observe` of a large fleet giving up its exact topics); the order
/// is needed only to renew them.
package struct SubscriptionList: Sequence {
    private var members: [String: (count: Int, order: Int)] = [:]
    private var nextOrder = 0

    package init() {}

    package func contains(_ filter: String) -> Bool { members[filter] != nil }

    /// Counts one add of each filter (a filter given twice counts twice); returns those that were not in the list
    /// before, in the order given, once each.
    @discardableResult
    package mutating func add(_ filters: [String]) -> [String] {
        admit(filters) { member in
            member.count += 1
            return member.count == 1
        }
    }

    /// Adds the filters not in the list yet, each with a count of one, and leaves the others as they are: a
    /// transport's subscriptions, where a filter is subscribed or not; `remove` then takes each out at once. Returns
    /// those added, in the order given, once each.
    @discardableResult
    package mutating func insert(_ filters: [String]) -> [String] {
        admit(filters) { member in
            guard member.count == 0 else { return false }
            member.count = 1
            return true
        }
    }

    /// Applies `count` to each filter's member (a new one has count 0) and returns the filters it calls new. One
    /// lookup per filter: response topics come and go here 16 at a time, and a topic is hashed per lookup.
    private mutating func admit(
        _ filters: [String], counting count: (inout (count: Int, order: Int)) -> Bool
    ) -> [String] {
        var new: [String] = []
        for filter in filters where count(&members[filter, default: (0, nextOrder)]) {
            nextOrder += 1
            new.append(filter)
        }
        return new
    }

    /// Takes back one add of each filter (ignoring filters not in the list); returns those whose count reached zero,
    /// which are no longer in the list, in the order they were first added.
    @discardableResult
    package mutating func remove(_ filters: [String]) -> [String] {
        var gone: [(filter: String, order: Int)] = []
        for filter in filters {
            guard let index = members.index(forKey: filter) else { continue }
            let member = members.values[index]
            if member.count > 1 {
                members.values[index].count -= 1
            } else {
                members.remove(at: index)
                gone.append((filter, member.order))
            }
        }
        return gone.sorted { $0.order < $1.order }.map(\.filter)
    }

    /// In the order they were first added.
    package func makeIterator() -> IndexingIterator<[String]> {
        members.sorted { $0.value.order < $1.value.order }.map(\.key).makeIterator()
    }
}
