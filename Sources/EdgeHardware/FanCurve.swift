import CoatyJSON

/// A duty in percent for each input (a temperature), by linear interpolation between points; below the first point
/// the first point's duty, above the last the last one's.
public struct FanCurve: Sendable, Hashable {
    public struct Point: Sendable, Hashable {
        public var input: Double
        public var duty: Double

        public init(input: Double, duty: Double) {
            self.input = input
            self.duty = duty
        }
    }

    /// At least one, inputs strictly rising, duties in 0...100.
    public let points: [Point]

    /// Fails with the reason unless the points are at least one, their inputs strictly rising and finite, and their
    /// duties in 0...100.
    public init(points: [Point]) throws(CurveError) {
        guard !points.isEmpty else { throw CurveError(index: nil, reason: "needs at least one point") }
        for (index, point) in points.enumerated() {
            guard point.input.isFinite else {
                throw CurveError(index: index, reason: "input \(point.input) is not a number")
            }
            guard (0...100).contains(point.duty) else {
                throw CurveError(index: index, reason: "duty \(JSONValue.number(point.duty)) is outside 0...100")
            }
            if index > 0, point.input <= points[index - 1].input {
                throw CurveError(
                    index: index,
                    reason:
                        "input \(JSONValue.number(point.input)) must be above the previous point's, \(JSONValue.number(points[index - 1].input))"
                )
            }
        }
        self.points = points
    }

    /// The points of a JSON value: `[[40, 0], [60, 50], [75, 100]]` or `[{"input": 40, "duty": 0}, ...]` (as a
    /// shared object holds them).
    public init(json: JSONValue) throws(CurveError) {
        guard case .array(let elements) = json else {
            throw CurveError(
                index: nil,
                reason:
                    "expected an array of points like [40, 0] or {\"input\": 40, \"duty\": 0}, found \(json.typeName)")
        }
        var points: [Point] = []
        for (index, element) in elements.enumerated() {
            switch element {
            case .array(let pair) where pair.count == 2:
                guard let input = pair[0].numberValue, let duty = pair[1].numberValue else {
                    throw CurveError(index: index, reason: "a point [input, duty] holds two numbers")
                }
                points.append(Point(input: input, duty: duty))
            case .object(let object):
                guard let input = object["input"]?.numberValue, let duty = object["duty"]?.numberValue,
                    object.count == 2
                else {
                    throw CurveError(
                        index: index, reason: "a point {\"input\": number, \"duty\": number} has these two members only"
                    )
                }
                points.append(Point(input: input, duty: duty))
            default:
                throw CurveError(index: index, reason: "expected a point like [40, 0] or {\"input\": 40, \"duty\": 0}")
            }
        }
        try self.init(points: points)
    }

    public func duty(at input: Double) -> Double {
        guard let first = points.first, let last = points.last else { return 0 }
        if input <= first.input { return first.duty }
        if input >= last.input { return last.duty }
        // Few points: a linear search is the fastest.
        let upper = points.firstIndex { $0.input >= input } ?? points.count - 1
        let low = points[upper - 1]
        let high = points[upper]
        return low.duty + (high.duty - low.duty) * (input - low.input) / (high.input - low.input)
    }
}

public struct CurveError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The point at fault, if one is.
    public var index: Int?
    public var reason: String

    public var description: String { index.map { "point \($0): \(reason)" } ?? reason }
}

/// A fan curve with a hysteresis band: the duty follows a rising input at once, but a falling input only once it has
/// fallen `band` below the input the duty was last raised for, so a temperature that wobbles around a point does not
/// make the fan hunt. (A backlash: the curve is read at the input held back by at most `band`.)
public struct CurveFollower: Sendable, Hashable {
    public var curve: FanCurve
    public let band: Double
    /// The input the curve is read at; nil before the first input.
    public private(set) var reference: Double?

    public init(curve: FanCurve, band: Double) {
        self.curve = curve
        self.band = max(band, 0)
    }

    /// The duty for a new input.
    public mutating func duty(for input: Double) -> Double {
        let held: Double
        if let reference, input < reference {
            // Falling: the reference follows only once the input is more than the band below it.
            held = min(reference, input + band)
        } else {
            held = input
        }
        reference = held
        return curve.duty(at: held)
    }

    /// The duty for the current reference on new points, or nil before the first input.
    public mutating func retune(_ curve: FanCurve) -> Double? {
        self.curve = curve
        return reference.map { curve.duty(at: $0) }
    }
}
