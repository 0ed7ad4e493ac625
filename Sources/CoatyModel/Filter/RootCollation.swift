/// The string order of Coaty JS's `ObjectMatcher`, which compares with `new Intl.Collator()`: the Unicode
/// Collation Algorithm with the CLDR root order at tertiary strength. Letters compare first ignoring case and
/// accents (`"a" < "B"`, `"é" < "f"`), then by accents (`"e" < "é"`), then by case, lowercase first
/// (`"abc" < "Abc" < "ABc"`); spaces and punctuation come before symbols, currency signs, digits and letters, and
/// are not ignored (`"a b" < "a-b" < "ab"`). Control and format characters are ignored, so `"a\u{0}"` equals
/// `"a"`, and canonically equivalent spellings are equal.
///
/// Foundation's locale-aware comparison gives the same order on Linux, but linking it adds about 50 MB of ICU
/// data to a statically linked agent. This is a compact table (about 50 KB) generated from the DUCET of UCA 13
/// for Latin, Greek, Cyrillic, IPA, general punctuation, symbols, arrows, box drawing, dingbats, fullwidth ASCII
/// and CJK punctuation; on the supported blocks it agrees with ICU 78 except for a handful of characters whose
/// weights changed after UCA 13. Characters outside the table get fallback weights that put them in the right
/// group, in code point order within it: punctuation and spaces, symbols, currency signs, digits of any script
/// (as the ASCII digit of the same value), letters of other scripts (script by script in UCA order), then
/// ideographs and unassigned code points. So other scripts sort after Latin, Greek and Cyrillic and among each
/// other as in JS, but their letters compare by code point, without case or accent folding, and their
/// nonspacing marks are ignored.
package enum RootCollation {
    /// -1, 0 or 1 as `a` sorts before, equal to, or after `b`, like `Intl.Collator.prototype.compare`.
    public static func compare(_ a: String, _ b: String) -> Int {
        if let order = compareASCII(a, b) { return order }
        return compareLevels(elements(of: a), elements(of: b))
    }

    // MARK: ASCII

    /// The single collation element of each ASCII character (0 for the ignorable control characters).
    private static let asciiElements: [UInt32] = (0..<128).map { code in
        let entry = entries[code]
        return entry >> 24 & 0x3F == 0 ? 0 : data[Int(entry & 0xFF_FFFF)]
    }

    /// Compares two ASCII strings in one pass, or returns nil for other strings. Every ASCII character has one
    /// element with the common secondary weight, so equal primaries imply equal secondaries, and the first
    /// tertiary difference decides.
    private static func compareASCII(_ a: String, _ b: String) -> Int? {
        a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y -> Int? in
                var i = 0
                var j = 0
                var tertiaryOrder = 0
                while true {
                    var first: UInt32 = 0
                    while i < x.count {
                        guard x[i] < 0x80 else { return nil }
                        first = asciiElements[Int(x[i])]
                        i += 1
                        if first != 0 { break }
                    }
                    var second: UInt32 = 0
                    while j < y.count {
                        guard y[j] < 0x80 else { return nil }
                        second = asciiElements[Int(y[j])]
                        j += 1
                        if second != 0 { break }
                    }
                    if first == 0 || second == 0 {
                        // Check the rest is ASCII before answering.
                        guard x[i...].allSatisfy({ $0 < 0x80 }), y[j...].allSatisfy({ $0 < 0x80 }) else { return nil }
                        if first != second { return first == 0 ? -1 : 1 }
                        return tertiaryOrder
                    }
                    let (p, q) = (first >> 16, second >> 16)
                    if p != q { return p < q ? -1 : 1 }
                    if tertiaryOrder == 0, first != second { tertiaryOrder = first < second ? -1 : 1 }
                }
            } ?? nil
        } ?? nil
    }

    // MARK: Collation elements

    /// A collation element: primary weight in the high 32 bits, then secondary and tertiary.
    private typealias Element = UInt64

    private static func element(primary: UInt32, secondary: UInt32, tertiary: UInt32) -> Element {
        UInt64(primary) << 32 | UInt64(secondary) << 8 | UInt64(tertiary)
    }

    private static func element(packed: UInt32) -> Element {
        element(primary: packed >> 16, secondary: packed >> 8 & 0xFF, tertiary: packed & 0xFF)
    }

    private enum Kind: UInt32 {
        case absent = 0
        case elements = 1
        case decomposition = 2
        case contractionStarter = 3
    }

    private static func entry(_ codePoint: UInt32) -> UInt32 {
        for block in blockStarts.indices where codePoint >= blockStarts[block] && codePoint < blockEnds[block] {
            return entries[Int(blockOffsets[block]) + Int(codePoint - blockStarts[block])]
        }
        return 0
    }

    private static func kind(_ entry: UInt32) -> Kind { Kind(rawValue: entry >> 30) ?? .absent }
    private static func values(_ entry: UInt32) -> ArraySlice<UInt32> {
        let start = Int(entry & 0xFF_FFFF)
        return data[start..<(start + Int(entry >> 24 & 0x3F))]
    }

    private static func combiningClass(_ codePoint: UInt32) -> UInt8 {
        // No character below the combining diacritical marks combines; this spares Latin text the lookup.
        guard codePoint >= 0x300 else { return 0 }
        return Unicode.Scalar(codePoint)?.properties.canonicalCombiningClass.rawValue ?? 0
    }

    /// The collation elements of a string: canonical decomposition and ordering first, so that equivalent
    /// spellings get the same elements, then contractions, table lookup and fallback weights.
    private static func elements(of string: String) -> [Element] {
        var codePoints: [UInt32] = []
        codePoints.reserveCapacity(string.utf8.count)
        var mayNeedReordering = false
        for scalar in string.unicodeScalars {
            let entry = entry(scalar.value)
            if kind(entry) == .decomposition {
                codePoints.append(contentsOf: values(entry))
                mayNeedReordering = true
            } else {
                codePoints.append(scalar.value)
                mayNeedReordering = mayNeedReordering || scalar.value >= 0x300
            }
        }
        if mayNeedReordering { orderCanonically(&codePoints) }

        var elements: [Element] = []
        elements.reserveCapacity(codePoints.count + 4)
        var index = 0
        while index < codePoints.count {
            let entry = entry(codePoints[index])
            switch kind(entry) {
            case .contractionStarter:
                if let contraction = contraction(startingAt: index, in: codePoints) {
                    elements.append(contentsOf: values(contraction.entry).lazy.map(element(packed:)))
                    codePoints.remove(at: contraction.matchedIndex)
                } else {
                    elements.append(contentsOf: values(entry).lazy.map(element(packed:)))
                }
            case .elements, .decomposition:
                elements.append(contentsOf: values(entry).lazy.map(element(packed:)))
            case .absent:
                appendFallback(codePoints[index], to: &elements)
            }
            index += 1
        }
        return elements
    }

    /// Sorts each run of combining marks by combining class, keeping the order of marks of equal class.
    private static func orderCanonically(_ codePoints: inout [UInt32]) {
        var index = 1
        while index < codePoints.count {
            let markClass = combiningClass(codePoints[index])
            if markClass != 0 {
                var position = index
                while position > 0 {
                    let previousClass = combiningClass(codePoints[position - 1])
                    guard previousClass > markClass else { break }
                    codePoints.swapAt(position, position - 1)
                    position -= 1
                }
            }
            index += 1
        }
    }

    /// The contraction of the starter at `index` with the next character, or with a later combining mark that
    /// no mark of the same or higher class stands before (UCA's discontiguous match).
    private static func contraction(startingAt index: Int, in codePoints: [UInt32]) -> (
        entry: UInt32, matchedIndex: Int
    )? {
        let starter = codePoints[index]
        var highestSkippedClass: UInt8 = 0
        var candidate = index + 1
        while candidate < codePoints.count {
            let markClass = combiningClass(codePoints[candidate])
            let isReachable = candidate == index + 1 || (markClass != 0 && markClass > highestSkippedClass)
            if isReachable {
                var row = 0
                while row < contractions.count {
                    if contractions[row] == starter && contractions[row + 1] == codePoints[candidate] {
                        return (contractions[row + 2], candidate)
                    }
                    row += 3
                }
            }
            guard markClass != 0 else { return nil }
            highestSkippedClass = max(highestSkippedClass, markClass)
            candidate += 1
        }
        return nil
    }

    /// Weights for a character outside the table: a lead element for its group, then its code point, as UCA's
    /// implicit weights do. Marks, controls and format characters are ignorable; decimal digits of any script
    /// weigh as the ASCII digit of their value.
    private static func appendFallback(_ codePoint: UInt32, to elements: inout [Element]) {
        guard let scalar = Unicode.Scalar(codePoint) else { return }
        let properties = scalar.properties
        guard properties.canonicalCombiningClass.rawValue == 0 else { return }
        let lead: UInt32
        switch properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .control, .format:
            return
        case .decimalNumber:
            if let value = properties.numericValue, value >= 0, value <= 9 {
                elements.append(contentsOf: values(entry(0x30 + UInt32(value))).lazy.map(element(packed:)))
                return
            }
            lead = letterLead
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation,
            .finalPunctuation, .otherPunctuation, .spaceSeparator, .lineSeparator, .paragraphSeparator:
            lead = punctuationLead
        case .mathSymbol, .modifierSymbol, .otherSymbol:
            lead = symbolLead
        case .currencySymbol:
            lead = currencyLead
        case .unassigned, .privateUse, .surrogate:
            lead = ideographLead
        default:
            if properties.isIdeographic {
                lead = ideographLead
            } else {
                elements.append(element(primary: letterLead, secondary: commonSecondary, tertiary: commonTertiary))
                elements.append(element(primary: scriptRank(codePoint) << 21 | codePoint, secondary: 0, tertiary: 0))
                return
            }
        }
        elements.append(element(primary: lead, secondary: commonSecondary, tertiary: commonTertiary))
        elements.append(element(primary: codePoint, secondary: 0, tertiary: 0))
    }

    /// The place of a letter's script in the DUCET order of scripts.
    private static func scriptRank(_ codePoint: UInt32) -> UInt32 {
        var row = 0
        while row < scriptBlocks.count {
            if codePoint >= scriptBlocks[row] && codePoint < scriptBlocks[row + 1] { return scriptBlocks[row + 2] }
            row += 3
        }
        return unlistedScriptRank
    }

    // MARK: Comparison

    /// Compares the primary weights of both strings, then the secondary, then the tertiary, skipping zero
    /// weights at each level.
    private static func compareLevels(_ x: [Element], _ y: [Element]) -> Int {
        for (shift, mask) in [(32, UInt64(0xFFFF_FFFF)), (8, 0xFFFF), (0, 0xFF)] {
            var i = 0
            var j = 0
            while true {
                while i < x.count, x[i] >> UInt64(shift) & mask == 0 { i += 1 }
                while j < y.count, y[j] >> UInt64(shift) & mask == 0 { j += 1 }
                guard i < x.count, j < y.count else {
                    if i < x.count { return 1 }
                    if j < y.count { return -1 }
                    break
                }
                let (p, q) = (x[i] >> UInt64(shift) & mask, y[j] >> UInt64(shift) & mask)
                if p != q { return p < q ? -1 : 1 }
                i += 1
                j += 1
            }
        }
        return 0
    }
}
