import Testing

@testable import CoatyModel

@Suite struct RootCollationTests {
    /// The orders the Coaty JS object filter test expects from `Intl.Collator`.
    @Test func coatyJavaScriptExpectations() {
        #expect(RootCollation.compare("Abc", "abc") > 0)
        #expect(RootCollation.compare("Abc", "ABc") <= 0)
        #expect(RootCollation.compare("Abc", "Abce") < 0)
        #expect(RootCollation.compare("Abc", "Abd") < 0)
        #expect(RootCollation.compare("Abb", "Abc") < 0)
        #expect(RootCollation.compare("Abc", "Abc") == 0)
    }

    @Test(arguments: [
        ("a", "B", -1),  // letters first ignoring case
        ("B", "a", 1),
        ("abc", "Abc", -1),  // then lowercase before uppercase
        ("e", "é", -1),  // accents after the base letter
        ("é", "f", -1),  // but before the next letter
        ("é", "E", 1),  // accents weigh more than case
        ("cote", "côte", -1),
        ("côte", "coté", 1),  // the first accent difference decides, left to right
        ("a b", "ab", -1),  // spaces and punctuation count
        ("a-b", "ab", -1),
        ("9", "a", -1),  // digits before letters
        ("10", "9", -1),  // digit by digit
        ("$", "1", -1),  // currency before digits
        ("!", "$", -1),  // punctuation before currency
        ("ß", "ss", 1),  // ß is "ss" with a tertiary difference
        ("ß", "st", -1),
        ("æ", "af", -1),
        ("e\u{301}", "é", 0),  // canonically equivalent
        ("a\u{0}", "a", 0),  // controls are ignorable
        ("", "\u{200B}", 0),
        ("Ω", "\u{2126}", 0),  // OHM SIGN is canonically GREEK CAPITAL OMEGA
        ("z", "α", -1),  // Latin before Greek
        ("ω", "а", -1),  // Greek before Cyrillic
        ("я", "א", -1),  // Cyrillic before other scripts
        ("א", "中", -1),  // and other scripts before ideographs
        ("😀", "a", -1),  // emoji are symbols
        ("٣", "3", 0),  // any script's digits weigh as the ASCII digit
    ])
    func compares(a: String, b: String, expected: Int) {
        #expect(RootCollation.compare(a, b) == expected)
        #expect(RootCollation.compare(b, a) == -expected)
    }

    /// Words sorted by JavaScript's `Intl.Collator` keep their order and their equalities.
    @Test func agreesWithIntlCollatorOnWords() {
        let words = CollationVectors.sortedWords
        for index in words.indices.dropFirst() {
            let (previous, current) = (words[index - 1].word, words[index].word)
            let expected = words[index].equalsPrevious ? 0 : -1
            #expect(
                RootCollation.compare(previous, current) == expected,
                "\(previous.debugDescription) vs \(current.debugDescription)")
        }
        // The order is transitive over the whole list, not just between neighbours.
        for i in words.indices {
            for j in words.indices where j > i + 1 {
                #expect(RootCollation.compare(words[i].word, words[j].word) <= 0)
            }
        }
    }

    @Test func agreesWithIntlCollatorOnRandomStrings() {
        for (a, b, expected) in CollationVectors.comparedPairs {
            #expect(RootCollation.compare(a, b) == expected, "\(a.debugDescription) vs \(b.debugDescription)")
        }
    }

    /// The fast path for ASCII and the general path give the same order.
    @Test func asciiAndGeneralPathsAgree() {
        let ascii = (0..<128).map { String(Unicode.Scalar(UInt8($0))) } + ["ab", "aB", "a-b", "A b", "a\u{0}b", ""]
        for a in ascii {
            for b in ascii {
                // A trailing combining grapheme joiner (ignorable) forces the general path without changing the order.
                #expect(RootCollation.compare(a, b) == RootCollation.compare(a + "\u{34F}", b))
            }
        }
    }
}
