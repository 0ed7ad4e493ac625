/// A compiled SQL LIKE pattern with the exact behaviour of Coaty JS, which turns the pattern into an anchored
/// JavaScript regular expression without flags:
///
/// - `_` is `.` and `%` is `.*`: one or any number of UTF-16 code units, but never a line terminator
///   (LF, CR, U+2028, U+2029), so `%` does not reach across lines and an emoji takes `__`;
/// - `\` makes the next `_` or `%` literal and `\\` is one literal backslash; before any other character the
///   backslash is dropped, and a trailing one is ignored;
/// - everything else matches itself, code unit by code unit.
struct LikePattern: Sendable {
    enum Token: Sendable, Equatable {
        case unit(UInt16)
        case anyUnit
        case anyRun
    }

    let tokens: [Token]
    /// Whether the pattern has no wildcard, so matching is a comparison.
    private let isLiteral: Bool

    init(_ pattern: String) {
        var tokens: [Token] = []
        var isEscaped = false
        for scalar in pattern.unicodeScalars {
            switch scalar {
            case "\\":
                if isEscaped {
                    tokens.append(.unit(0x5C))  // a literal backslash
                }
                isEscaped.toggle()
                continue
            case "_" where !isEscaped:
                tokens.append(.anyUnit)
            case "%" where !isEscaped:
                // A run next to a run adds nothing.
                if tokens.last != .anyRun { tokens.append(.anyRun) }
            default:
                for unit in String(scalar).utf16 { tokens.append(.unit(unit)) }
            }
            isEscaped = false
        }
        self.tokens = tokens
        isLiteral = !tokens.contains { $0 == .anyUnit || $0 == .anyRun }
    }

    func matches(_ text: String) -> Bool {
        if isLiteral {
            return text.utf16.elementsEqual(tokens.lazy.map { if case .unit(let unit) = $0 { unit } else { 0 } })
        }
        // A breadth-first run of the pattern automaton: state i means "tokens before i are matched". Linear in
        // the text for any pattern, where backtracking could take exponential time on hostile patterns.
        let stateCount = tokens.count + 1
        return withUnsafeTemporaryAllocation(of: Bool.self, capacity: 2 * stateCount) { buffer in
            var current = UnsafeMutableBufferPointer(rebasing: buffer[0..<stateCount])
            var next = UnsafeMutableBufferPointer(rebasing: buffer[stateCount..<(2 * stateCount)])
            current.initialize(repeating: false)
            next.initialize(repeating: false)
            current[0] = true
            closeOverEmptyRuns(current)
            for unit in text.utf16 {
                let isLineTerminator = unit == 0x0A || unit == 0x0D || unit == 0x2028 || unit == 0x2029
                var anyActive = false
                for state in 0..<tokens.count where current[state] {
                    switch tokens[state] {
                    case .unit(let expected):
                        if unit == expected {
                            next[state + 1] = true
                            anyActive = true
                        }
                    case .anyUnit:
                        if !isLineTerminator {
                            next[state + 1] = true
                            anyActive = true
                        }
                    case .anyRun:
                        if !isLineTerminator {
                            next[state] = true
                            anyActive = true
                        }
                    }
                }
                guard anyActive else { return false }
                closeOverEmptyRuns(next)
                swap(&current, &next)
                for state in 0..<stateCount { next[state] = false }
            }
            return current[tokens.count]
        }
    }

    /// A run may match nothing: whoever stands before a run also stands after it.
    private func closeOverEmptyRuns(_ states: UnsafeMutableBufferPointer<Bool>) {
        for state in 0..<tokens.count where states[state] && tokens[state] == .anyRun {
            states[state + 1] = true
        }
    }
}
