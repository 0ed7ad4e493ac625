// Writes Tests/CoatyModelTests/Filter/CollationVectors.swift: string orders computed by JavaScript's
// `new Intl.Collator()`, the collator of Coaty JS's ObjectMatcher, for RootCollation's tests.
//
// Usage: node Tests/Tools/generate-collation-vectors.js > Tests/CoatyModelTests/Filter/CollationVectors.swift
"use strict";

const collator = new Intl.Collator();

const words = [
    // The order the Coaty JS object filter test relies on, and case and accent levels.
    "Abc", "abc", "ABc", "ABC", "Abce", "Abb", "Abd", "Abf", "a", "A", "b", "B", "ab", "aB", "Ab", "AB",
    "e", "E", "é", "É", "è", "ê", "ë", "ē", "ė", "ę", "f", "F",
    // Punctuation and spaces are not ignored.
    "a b", "a-b", "a_b", "a.b", "a,b", "a;b", "a:b", "a!b", "a?b", "a'b", "a\"b", "a(b", "a)b", "a[b", "a{b",
    "a@b", "a*b", "a/b", "a\\b", "a&b", "a#b", "a%b", "a`b", "a^b", "a+b", "a<b", "a=b", "a>b", "a|b", "a~b",
    "a$b", "a0b", "a\u00a0b", "a\tb", "a\nb", " ", "", "-", "_", "--", "-1", "+1", "#1",
    // Digits compare digit by digit.
    "0", "1", "2", "9", "10", "100", "1.5", "1,5", "01", "2a", "a2", "a10", "a9", "½", "²", "①",
    // Ignorable controls and format characters.
    "a\u0000", "\u0000a", "a\u200b", "a\u00ad",
    // Latin letters of European languages.
    "ß", "ss", "SS", "st", "æ", "Æ", "ae", "AE", "af", "ø", "Ø", "o", "p", "œ", "oe", "å", "Å", "aa", "ä", "Ä",
    "ö", "Ö", "ü", "Ü", "ue", "uf", "ñ", "Ñ", "n", "ç", "Ç", "c", "č", "Č", "d", "ł", "Ł", "l", "m", "ı", "I",
    "i", "İ", "ğ", "ş", "ţ", "ț", "ð", "Ð", "þ", "Þ", "z", "Z", "ž", "Ž", "ź", "ż", "ij", "ĳ", "Ĳ", "ﬁ", "fi",
    "ﬀ", "ff", "ǆ", "dž", "Dž", "DŽ", "ŀ", "l·", "l·a", "la", "L·a",
    // Words.
    "Müller", "Muller", "Mueller", "Mülller", "Mahler", "Zürich", "Zurich", "Zug", "Ärger", "Arger", "Ofen",
    "Öfen", "Österreich", "Ostern", "Straße", "Strasse", "Strassen", "Stratus", "cote", "coté", "côte", "côté",
    "Cote", "Côte", "résumé", "resume", "Resume", "naïve", "naive", "façade", "facade", "Ångström", "Angstrom",
    "Łódź", "Lodz", "Dvořák", "Dvorak", "İstanbul", "Istanbul", "Kraków", "Krakow", "Nguyễn", "Nguyen",
    "Hà Nội", "Ha Noi", "garage", "Garage", "living room", "living-room", "livingroom", "LivingRoom",
    "floor 1", "floor 10", "floor 2", "floor-1", "Floor 1", "sensor.temp", "sensor_temp", "sensor-temp",
    "sensor temp", "sensortemp", "temp°C", "temp °C", "20°C", "20 °C", "20℃", "µs", "μs", "us", "ms",
    "relay 1", "relay-1", "relay_1", "Relay 1", "fan", "Fan", "FAN", "fån", "LED", "led", "Led",
    // Greek and Cyrillic.
    "α", "Α", "ά", "β", "γ", "ω", "Ω", "Ω", "σ", "ς", "Σ", "ΑΒΓ", "αβγ", "Ελλάδα", "ελλάδα",
    "а", "А", "б", "я", "Я", "ё", "е", "ж", "и", "й", "Й", "к", "ї", "і", "Москва", "москва", "Київ",
    // Other scripts, symbols and emoji.
    "א", "ا", "ա", "ა", "अ", "ก", "가", "あ", "ア", "中", "日本", "😀", "😃", "☃", "★", "→", "€", "$", "£",
    "¥", "₧", "Pts", "₨", "Rs", "©", "®", "™", "°", "§", "¶", "•", "…", "–", "—", "‘", "’", "“", "”", "«", "»",
];

// Deterministic random strings over characters of the supported blocks plus a few others.
let seed = 20261122;
function random() {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
}
const alphabet = Array.from(
    "aAbBcCeEiIlLoOsSzZ 019-_.,'\"!?()" +
    "àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞß" +
    "āăąćčďđēėęěğīıįķĺļľłńňņőœŕřśşšţťũūůűųŵŷźżžǆǉǌȘșȚțĳĿŀ·" +
    "αβγδεζηθικλμνξοπρσςτυφχψωΑΒΓΔΩάέήίόύώϊϋ" +
    "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВЁЖЙЯіїєґ" +
    "ḁḃḉẞạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ" +
    "\u0300\u0301\u0302\u0303\u0306\u0308\u030a\u030c\u0323\u0327\u0328\u0345" +
    "°µ¹²³¼½¾×÷±§¶©®™€$£¥¢₹←→↑↓∞≠≤≥√∑∫☃★♥♪✓✗①②⑩─│┌▲●◆" +
    "–—‘’“”„«»‹›…•‰′″\u00a0\u2009\u200b\u00ad" +
    "אבاب가나あいアイ中国😀😃🙂٣३"
);
function randomString() {
    const length = Math.floor(random() * 6);
    let text = "";
    for (let i = 0; i < length; i++) text += alphabet[Math.floor(random() * alphabet.length)];
    return text;
}
const pairs = [];
for (let i = 0; i < 1500; i++) {
    const a = randomString();
    const prefix = Array.from(a).slice(0, Math.floor(random() * (a.length + 1))).join("");
    const b = random() < 0.4 ? prefix + Array.from(randomString()).slice(0, 2).join("") : randomString();
    pairs.push([a, b, collator.compare(a, b)]);
}

const sorted = Array.from(new Set(words)).sort(collator.compare);
// Each word with whether it compares equal to the one before it.
const rows = sorted.map((word, i) => [word, i > 0 && collator.compare(sorted[i - 1], word) === 0]);

// A Swift string literal; invisible characters and lone marks are written as escapes.
function swift(text) {
    let literal = "";
    for (const character of text) {
        if (character === "\"" || character === "\\") {
            literal += "\\" + character;
        } else if (character === " " || (/[\p{L}\p{N}\p{P}\p{S}]/u.test(character) && character !== "\u00ad")) {
            literal += character;
        } else {
            literal += "\\u{" + character.codePointAt(0).toString(16).toUpperCase() + "}";
        }
    }
    return '"' + literal + '"';
}
const out = [];
out.push("// swift-format-ignore-file");
out.push("// Generated by Tests/Tools/generate-collation-vectors.js with `new Intl.Collator()` of Node " +
    process.versions.node + " (ICU " + process.versions.icu + ", locale " + collator.resolvedOptions().locale + "); do not edit.");
out.push("");
out.push("enum CollationVectors {");
out.push("    /// Words in JavaScript's order, each marked when it compares equal to the word before it.");
out.push("    static let sortedWords: [(word: String, equalsPrevious: Bool)] = [");
for (const [word, equal] of rows) out.push(`        (${swift(word)}, ${equal}),`);
out.push("    ]");
out.push("");
out.push("    /// Random strings and JavaScript's comparison of them.");
out.push("    static let comparedPairs: [(String, String, Int)] = [");
for (const [a, b, r] of pairs) out.push(`        (${swift(a)}, ${swift(b)}, ${r}),`);
out.push("    ]");
out.push("}");
out.push("");
process.stdout.write(out.join("\n"));
