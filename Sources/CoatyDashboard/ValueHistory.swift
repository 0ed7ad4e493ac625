/// The recent history of one source's numeric values in bounded memory: the window is cut into `capacity`
/// buckets of equal width, and each bucket keeps the mean, minimum, maximum and count of the values in it, so that
/// an hour at 1 Hz (3600 values) costs `capacity` buckets, and any rate costs no more.
public struct ValueHistory: Sendable, Hashable {
    public struct Bucket: Sendable, Hashable {
        /// The start of the bucket, ms since 1970.
        public var time: Int64
        public var mean: Double
        public var minimum: Double
        public var maximum: Double
        public var count: Int
    }

    /// Milliseconds of history kept.
    public let window: Int64
    public let capacity: Int
    /// Milliseconds per bucket.
    public let bucketWidth: Int64
    public private(set) var buckets: [Bucket] = []

    public init(window: Int64, capacity: Int) {
        precondition(window > 0 && capacity > 0, "a history needs a window and buckets")
        self.window = window
        self.capacity = capacity
        bucketWidth = max(1, (window + Int64(capacity) - 1) / Int64(capacity))
    }

    /// Adds a value; a value older than the newest bucket (a clock step back) counts in the newest bucket.
    public mutating func record(_ value: Double, at time: Int64) {
        guard value.isFinite else { return }
        let start = time - ((time % bucketWidth) + bucketWidth) % bucketWidth
        if let last = buckets.last, start <= last.time {
            var bucket = last
            bucket.count += 1
            bucket.mean += (value - bucket.mean) / Double(bucket.count)
            bucket.minimum = min(bucket.minimum, value)
            bucket.maximum = max(bucket.maximum, value)
            buckets[buckets.count - 1] = bucket
        } else {
            buckets.append(Bucket(time: start, mean: value, minimum: value, maximum: value, count: 1))
        }
        let cutoff = time - window
        var drop = 0
        while drop < buckets.count - 1, buckets[drop].time + bucketWidth <= cutoff { drop += 1 }
        drop = max(drop, buckets.count - capacity)
        if drop > 0 { buckets.removeFirst(drop) }
    }
}
