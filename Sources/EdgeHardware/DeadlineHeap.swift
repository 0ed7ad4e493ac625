/// Elements by deadline, earliest first, as a binary min-heap: the poll scheduler's waiters and the poll loop's
/// sensors. (swift-collections' `Heap` cannot take out an element other than the first, which a cancelled waiter
/// needs.)
struct DeadlineHeap<Deadline: Comparable, Element> {
    private var entries: [(deadline: Deadline, element: Element)] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    var earliest: Deadline? { entries.first?.deadline }

    mutating func reserveCapacity(_ capacity: Int) { entries.reserveCapacity(capacity) }

    mutating func insert(_ element: Element, dueAt deadline: Deadline) {
        entries.append((deadline, element))
        siftUp(entries.count - 1)
    }

    /// The element due earliest if it is due at `limit` or earlier, taken out.
    mutating func popEarliest(through limit: Deadline) -> Element? {
        guard let first = entries.first, first.deadline <= limit else { return nil }
        remove(at: 0)
        return first.element
    }

    /// Linear: for the rare element that leaves before it is due.
    mutating func remove(where matches: (Element) -> Bool) -> Element? {
        guard let index = entries.firstIndex(where: { matches($0.element) }) else { return nil }
        let element = entries[index].element
        remove(at: index)
        return element
    }

    mutating func removeAll() -> [Element] {
        defer { entries.removeAll() }
        return entries.map(\.element)
    }

    private mutating func remove(at index: Int) {
        let last = entries.removeLast()
        guard index < entries.count else { return }
        entries[index] = last
        siftDown(index)
        siftUp(index)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { return }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            var smallest = parent
            let left = 2 * parent + 1
            let right = left + 1
            if left < entries.count && entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count && entries[right].deadline < entries[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
