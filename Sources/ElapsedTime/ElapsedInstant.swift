/// An instant as the time since an origin the user of a clock chose (a loop's start, a controller's making): a
/// concrete instant type for deadlines and schedules that work the same over any clock whose duration is `Duration`
/// (the continuous clock, a test's manual clock).
package struct ElapsedInstant: InstantProtocol {
    package var sinceOrigin: Duration

    package init(_ sinceOrigin: Duration) {
        self.sinceOrigin = sinceOrigin
    }

    package func advanced(by duration: Duration) -> ElapsedInstant {
        ElapsedInstant(sinceOrigin + duration)
    }

    package func duration(to other: ElapsedInstant) -> Duration {
        other.sinceOrigin - sinceOrigin
    }

    package static func < (lhs: ElapsedInstant, rhs: ElapsedInstant) -> Bool {
        lhs.sinceOrigin < rhs.sinceOrigin
    }
}
