import CoatyMQTT
import Testing

/// The filters a transport renews and a communication manager counts: first-added order, a count per filter, gone at
/// count zero.
@Suite struct SubscriptionListTests {
    @Test func keepsFirstAddedOrderAndCountsEachAdd() {
        var list = SubscriptionList()
        #expect(list.add(["c", "a", "c"]) == ["c", "a"])
        #expect(list.add(["b", "a"]) == ["b"])
        #expect(Array(list) == ["c", "a", "b"])

        // "c" was added twice: the first remove only counts down.
        #expect(list.remove(["c"]).isEmpty)
        #expect(list.contains("c"))
        #expect(list.remove(["b", "c", "a", "missing"]) == ["c", "b"])
        #expect(Array(list) == ["a"])
        #expect(!list.contains("c") && !list.contains("b"))

        // Added again after it was gone: at the end of the order.
        #expect(list.add(["c"]) == ["c"])
        #expect(Array(list) == ["a", "c"])
    }

    /// A transport's list: a filter inserted again stays counted once, so one remove takes it out.
    @Test func insertsEachFilterOnce() {
        var list = SubscriptionList()
        #expect(list.insert(["c", "a", "c"]) == ["c", "a"])
        #expect(list.insert(["b", "a"]) == ["b"])
        #expect(Array(list) == ["c", "a", "b"])
        #expect(list.remove(["a", "a", "missing"]) == ["a"])
        #expect(Array(list) == ["c", "b"])
        #expect(list.insert(["a"]) == ["a"])
        #expect(list.remove(["b", "c", "a"]) == ["c", "b", "a"])
        #expect(Array(list).isEmpty)
    }

    @Test func removesManyFiltersOneByOneInTheirOrder() {
        var list = SubscriptionList()
        let filters = (0..<10_000).map { "coaty/3/ns/IOV/\($0)" }
        #expect(list.add(filters) == filters)
        for filter in filters where filter.hasSuffix("7") {
            #expect(list.remove([filter]) == [filter])
        }
        #expect(Array(list) == filters.filter { !$0.hasSuffix("7") })
    }
}
