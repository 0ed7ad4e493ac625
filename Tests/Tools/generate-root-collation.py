#!/usr/bin/env python3
"""Generates Sources/CoatyModel/Filter/RootCollationTable.swift from the Unicode Collation Algorithm's DUCET.

Usage: generate-root-collation.py ALLKEYS_TXT > Sources/CoatyModel/Filter/RootCollationTable.swift

ALLKEYS_TXT is allkeys.txt of UCA 13.0.0 (it ships with Perl's Unicode::Collate, or from unicode.org). Canonical
decompositions come from Python's unicodedata. The table covers the blocks in BLOCKS; RootCollation.swift
handles every other character with fallback weights, ordering the letters of other scripts by SCRIPTS. Where the
CLDR root collation of JavaScript's Intl.Collator differs from DUCET 13, OVERRIDES follows CLDR.
"""
import re
import sys
import unicodedata

BLOCKS = [
    (0x0000, 0x0530),  # Latin, IPA, spacing modifiers, combining diacritics, Greek, Cyrillic
    (0x1D00, 0x2C00),  # phonetic extensions, Latin extended additional, Greek extended, punctuation, symbols
    (0x2C60, 0x2C80),  # Latin extended-C
    (0x2DE0, 0x2E80),  # Cyrillic extended-A, supplemental punctuation
    (0x3000, 0x3040),  # CJK symbols and punctuation
    (0xA640, 0xA6A0),  # Cyrillic extended-B
    (0xA720, 0xA800),  # Latin extended-D
    (0xAB30, 0xAB70),  # Latin extended-E
    (0xFB00, 0xFB07),  # Latin ligatures
    (0xFE00, 0xFE10),  # variation selectors
    (0xFF00, 0xFF5F),  # fullwidth ASCII
    (0xFFE0, 0xFFEF),  # fullwidth symbols
]
# CLDR root weighs these as their letters ("Pts", "Rs") with compatibility tertiary weights; DUCET 13 as currency.
OVERRIDES = {0x20A7: "Pts", 0x20A8: "Rs"}
COMPATIBILITY_TERTIARY = {0x02: 0x04, 0x08: 0x0A}
# Blocks of scripts outside the table, by script. Their letters sort after the table's letters, script by script in
# DUCET order (found from the representative letter), and by code point within a script.
SCRIPTS = {
    0x2C80: [(0x2C80, 0x2D00)],  # Coptic
    0x2C00: [(0x2C00, 0x2C60)],  # Glagolitic
    0x10D0: [(0x10A0, 0x1100), (0x1C90, 0x1CC0), (0x2D00, 0x2D30)],  # Georgian
    0x0531: [(0x0530, 0x0590), (0xFB13, 0xFB18)],  # Armenian
    0x05D0: [(0x0590, 0x0600), (0xFB1D, 0xFB50)],  # Hebrew
    0x0800: [(0x0800, 0x0840)],  # Samaritan
    0x0627: [(0x0600, 0x0700), (0x0750, 0x0780), (0x08A0, 0x0900), (0xFB50, 0xFE00), (0xFE70, 0xFF00)],  # Arabic
    0x0710: [(0x0700, 0x0750)],  # Syriac
    0x0780: [(0x0780, 0x07C0)],  # Thaana
    0x07CA: [(0x07C0, 0x0800)],  # NKo
    0x2D30: [(0x2D30, 0x2D80)],  # Tifinagh
    0x1200: [(0x1200, 0x13A0), (0x2D80, 0x2DE0)],  # Ethiopic
    0x0905: [(0x0900, 0x0980), (0xA8E0, 0xA900)],  # Devanagari
    0x0985: [(0x0980, 0x0A00)],  # Bengali
    0x0A05: [(0x0A00, 0x0A80)],  # Gurmukhi
    0x0A85: [(0x0A80, 0x0B00)],  # Gujarati
    0x0B05: [(0x0B00, 0x0B80)],  # Oriya
    0x0B85: [(0x0B80, 0x0C00)],  # Tamil
    0x0C05: [(0x0C00, 0x0C80)],  # Telugu
    0x0C85: [(0x0C80, 0x0D00)],  # Kannada
    0x0D05: [(0x0D00, 0x0D80)],  # Malayalam
    0x0D85: [(0x0D80, 0x0E00)],  # Sinhala
    0x0E01: [(0x0E00, 0x0E80)],  # Thai
    0x0E81: [(0x0E80, 0x0F00)],  # Lao
    0x0F40: [(0x0F00, 0x1000)],  # Tibetan
    0x1000: [(0x1000, 0x10A0)],  # Myanmar
    0x1780: [(0x1780, 0x1800)],  # Khmer
    0x1820: [(0x1800, 0x18B0)],  # Mongolian
    0x13A0: [(0x13A0, 0x1400), (0xAB70, 0xABC0)],  # Cherokee
    0x1401: [(0x1400, 0x1680)],  # Canadian syllabics
    0x1681: [(0x1680, 0x16A0)],  # Ogham
    0x16A0: [(0x16A0, 0x1700)],  # Runic
    0x1100: [(0x1100, 0x1200), (0x3130, 0x3190), (0xA960, 0xA980), (0xAC00, 0xD800), (0xFFA0, 0xFFE0)],  # Hangul
    0x3042: [(0x3040, 0x3100), (0x31F0, 0x3200), (0xFF66, 0xFFA0)],  # Hiragana and Katakana
    0x3105: [(0x3100, 0x3130), (0x31A0, 0x31C0)],  # Bopomofo
    0xA000: [(0xA000, 0xA4D0)],  # Yi
}

KIND_ELEMENTS, KIND_DECOMPOSITION, KIND_CONTRACTION_STARTER = 1, 2, 3


def read_allkeys(path):
    keys = {}
    for line in open(path, encoding="utf-8"):
        line = line.split("#")[0].strip()
        if not line or line.startswith("@"):
            continue
        code_points, elements = line.split(";")
        keys[tuple(int(x, 16) for x in code_points.split())] = [
            tuple(int(v, 16) for v in m)
            for m in re.findall(r"\[[.*]([0-9A-F]+)\.([0-9A-F]+)\.([0-9A-F]+)\]", elements)
        ]
    return keys


def main():
    keys = read_allkeys(sys.argv[1])
    covered = lambda c: any(a <= c < b for a, b in BLOCKS) 

    def canonical_decomposition(c):
        d = unicodedata.decomposition(chr(c))
        if not d or d.startswith("<"):
            return None
        return [ord(x) for x in unicodedata.normalize("NFD", chr(c))]

    # After decomposition only contractions of characters that do not decompose can occur.
    contractions = {
        k: v for k, v in keys.items()
        if len(k) == 2 and all(covered(x) and not canonical_decomposition(x) for x in k)
    }
    assert all(unicodedata.combining(chr(k[0])) == 0 for k in contractions)

    table = {}  # code point -> ("elements", [ce]) | ("decomposition", [cp])
    for a, b in BLOCKS:
        for c in range(a, b):
            if not covered(c):
                continue
            decomposition = canonical_decomposition(c)
            if c in OVERRIDES:
                table[c] = ("elements", [
                    (p, s, COMPATIBILITY_TERTIARY[t]) for letter in OVERRIDES[c] for p, s, t in keys[(ord(letter),)]
                ])
            elif decomposition:
                assert all(covered(x) and (x,) in keys for x in decomposition), hex(c)
                table[c] = ("decomposition", decomposition)
            elif (c,) in keys:
                table[c] = ("elements", keys[(c,)])

    elements = [ce for kind, v in table.values() if kind == "elements" for ce in v]
    elements += [ce for v in contractions.values() for ce in v]
    category = lambda c: unicodedata.category(chr(c))
    single = lambda cats: [v[0][0] for c, (k, v) in table.items() if k == "elements" and len(v) == 1 and v[0][0] and category(c) in cats]
    first_symbol = min(single({"Sk", "Sm", "So"}))
    first_currency = min(single({"Sc"}))
    first_digit = keys[(0x30,)][0][0]
    assert max(single({"Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "Zs"})) < first_symbol < first_currency < first_digit

    # Primary weights become dense ranks, with a rank reserved before each group for characters outside the table.
    leads = {"punctuation": first_symbol - 0.5, "symbol": first_currency - 0.5, "currency": first_digit - 0.5}
    primaries = sorted({p for p, _, _ in elements if p})
    leads["letter"] = primaries[-1] + 1
    leads["ideograph"] = primaries[-1] + 2
    ordered = sorted(primaries + list(leads.values()))
    primary_rank = {p: i + 1 for i, p in enumerate(ordered)}
    secondaries = sorted({s for _, s, _ in elements if s})
    secondary_rank = {s: i + 1 for i, s in enumerate(secondaries)}
    assert len(ordered) < 1 << 16 and len(secondaries) < 1 << 8
    assert max(t for _, _, t in elements) < 1 << 8

    def pack(ce):
        p, s, t = ce
        return (primary_rank[p] if p else 0) << 16 | (secondary_rank[s] if s else 0) << 8 | t

    data = []
    entries = []
    offsets = []
    def entry(kind, values):
        assert len(values) < 64
        start = len(data)
        data.extend(values)
        return kind << 30 | len(values) << 24 | start

    starters = {k[0] for k in contractions}
    for a, b in BLOCKS:
        offsets.append(len(entries))
        for c in range(a, b):
            if c not in table:
                entries.append(0)
                continue
            kind, values = table[c]
            if kind == "decomposition":
                entries.append(entry(KIND_DECOMPOSITION, values))
            else:
                entries.append(entry(KIND_CONTRACTION_STARTER if c in starters else KIND_ELEMENTS, [pack(ce) for ce in values]))
    contraction_rows = []
    for (first, second), ces in sorted(contractions.items()):
        contraction_rows += [first, second, entry(KIND_ELEMENTS, [pack(ce) for ce in ces])]

    script_rows = sorted(
        (start, end, rank + 1)
        for rank, representative in enumerate(sorted(SCRIPTS, key=lambda c: keys[(c,)][0][0]))
        for start, end in SCRIPTS[representative]
    )
    assert all(a[1] <= b[0] for a, b in zip(script_rows, script_rows[1:]))

    def array(name, kind, values, doc):
        lines = [f"    /// {doc}", f"    static let {name}: [{kind}] = ["]
        for i in range(0, len(values), 10):
            lines.append("        " + ", ".join(f"0x{v:X}" for v in values[i:i + 10]) + ",")
        lines.append("    ]")
        return "\n".join(lines)

    out = [
        "// swift-format-ignore-file",
        "// Generated by Tests/Tools/generate-root-collation.py from the DUCET of UCA 13.0.0; do not edit.",
        "",
        "extension RootCollation {",
        array("blockStarts", "UInt32", [a for a, _ in BLOCKS], "First code point of each block the table covers."),
        array("blockEnds", "UInt32", [b for _, b in BLOCKS], "End (exclusive) of each block."),
        array("blockOffsets", "Int32", offsets, "Index in `entries` of each block's first code point."),
        array("entries", "UInt32", entries,
              "Per code point: kind (bits 30-31: 0 absent, 1 elements, 2 decomposition, 3 elements and contraction starter), "
              "count (bits 24-29) and start in `data` (bits 0-23)."),
        array("data", "UInt32", data,
              "Collation elements (primary rank << 16 | secondary rank << 8 | tertiary) and canonical decompositions."),
        array("contractions", "UInt32", contraction_rows, "Rows of (starter, following code point, entry)."),
        array("scriptBlocks", "UInt32", [v for row in script_rows for v in row],
              "Rows of (first code point, end, rank) giving the DUCET order of scripts outside the table."),
        f"    static let unlistedScriptRank: UInt32 = {len(SCRIPTS) + 1}",
        f"    static let punctuationLead: UInt32 = {primary_rank[leads['punctuation']]}",
        f"    static let symbolLead: UInt32 = {primary_rank[leads['symbol']]}",
        f"    static let currencyLead: UInt32 = {primary_rank[leads['currency']]}",
        f"    static let letterLead: UInt32 = {primary_rank[leads['letter']]}",
        f"    static let ideographLead: UInt32 = {primary_rank[leads['ideograph']]}",
        f"    static let commonSecondary: UInt32 = {secondary_rank[0x20]}",
        f"    static let commonTertiary: UInt32 = 0x2",
        "}",
        "",
    ]
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
