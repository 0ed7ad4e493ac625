import Testing

@testable import CoatyJSON

@Suite struct JSONSerializationTests {
    @Test(arguments: [
        (21.5, "21.5"), (22, "22"), (-0.0, "0"), (0.1, "0.1"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
        (1.2345678901234568e20, "123456789012345680000"), (1.5e-7, "1.5e-7"), (0.000001, "0.000001"),
        (1e-7, "1e-7"), (-273.15, "-273.15"), (1700000000000, "1700000000000"), (0.1 + 0.2, "0.30000000000000004"),
        (.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"), (-1e-10, "-1e-10"),
        (0.0001, "0.0001"), (0.00001, "0.00001"), (1e15 + 0.5, "1000000000000000.5"), (123456789.125, "123456789.125"),
        (1e16, "10000000000000000"),
        (123e-20, "1.23e-18"), (1e15, "1000000000000000"), (12345.6789e10, "123456789000000"),
        (.infinity, "null"), (.nan, "null"), (9007199254740994, "9007199254740994"), (-1.5, "-1.5"),
    ])
    func numbersAsJavaScriptWritesThem(value: Double, expected: String) {
        #expect(JSONValue.number(value).serialized() == expected)
    }

    @Test func stringsEscapeOnlyWhatJSONStringifyEscapes() {
        let value = JSONValue.string("a\"b\\c/d\u{08}\u{0C}\n\r\t\u{01}\u{1F}é€😀\u{2028}")
        #expect(value.serialized() == "\"a\\\"b\\\\c/d\\b\\f\\n\\r\\t\\u0001\\u001f\u{E9}\u{20AC}😀\u{2028}\"")
    }

    /// The word-at-a-time scan of the writer and the parser: a special character at any place of a long string, next
    /// to text of every width of UTF-8, is escaped and read back where it is.
    @Test(arguments: ["\"", "\\", "\n", "\u{01}", "\u{1F}", "\u{7F}"])
    func aSpecialCharacterAtAnyPlaceOfALongStringIsEscapedAndReadBack(special: String) throws {
        let escaped = [
            "\"": "\\\"", "\\": "\\\\", "\n": "\\n", "\u{01}": "\\u0001", "\u{1F}": "\\u001f", "\u{7F}": "\u{7F}",
        ]
        for filler in ["a", "é", "€", "😀"] {
            for place in 0..<40 {
                let text =
                    String(repeating: filler, count: place) + special + String(repeating: filler, count: 40 - place)
                let expected =
                    "\"" + String(repeating: filler, count: place) + (escaped[special] ?? "")
                    + String(repeating: filler, count: 40 - place) + "\""
                #expect(JSONValue.string(text).serialized() == expected, "\(filler) \(place)")
                #expect(try JSONValue(parsing: Array(expected.utf8)) == .string(text), "\(filler) \(place)")
            }
        }
    }

    /// The scan stops at the word that holds the first special byte, never after it, and crosses only words that
    /// hold none, whatever their other bytes (all 256 values tried, one per place).
    @Test func theScanStopsAtTheWordOfTheFirstSpecialByteAndNeverEarlierForOtherBytes() {
        let plain = (0...255).map(UInt8.init).filter {
            $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\")
        }
        let bytes = plain + plain
        bytes.withUnsafeBufferPointer { buffer in
            #expect(JSONStringScan.firstSpecialByte(in: buffer, from: 0) == buffer.count / 8 * 8)
            #expect(JSONStringScan.firstSpecialByte(in: buffer, from: 3) == 3 + (buffer.count - 3) / 8 * 8)
        }
        for special in [UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x00, 0x1F] {
            for place in 0..<40 {
                var text = Array(plain.prefix(48))
                text[place] = special
                text.withUnsafeBufferPointer { buffer in
                    let found = JSONStringScan.firstSpecialByte(in: buffer, from: 0)
                    #expect(found <= place && place < found + 8, "\(special) at \(place): \(found)")
                }
            }
        }
    }

    @Test func objectsKeepMemberOrderAndReplaceInPlace() {
        var object: JSONObject = ["name": "x", "coreType": "IoNode"]
        object["objectId"] = "1"
        object["name"] = "y"
        #expect(JSONValue.object(object).serialized() == #"{"name":"y","coreType":"IoNode","objectId":"1"}"#)
        object["coreType"] = nil
        #expect(object.keys == ["name", "objectId"])
        object.set("absent", ifPresent: nil)
        #expect(!object.contains(key: "absent"))
    }

    /// `serializedBytes` writes into room for a typical value, and again into room of the counted size when that is
    /// too little: the text is whole at every size around the first room's, escapes included.
    @Test func textBeyondTheFirstRoomIsWrittenWhole() throws {
        for length in [0, 1, 40, 55, 56, 57, 63, 64, 65, 200, 245, 256, 300, 5000] {
            let text = String(repeating: "a", count: max(0, length - 3)) + (length >= 3 ? "\"\u{01}\n" : "")
            let escaped = String(repeating: "a", count: max(0, length - 3)) + (length >= 3 ? "\\\"\\u0001\\n" : "")
            let string = JSONValue.string(text)
            #expect(string.serialized() == "\"\(escaped)\"")
            #expect(string.serializedCount == escaped.utf8.count + 2)
            let object: JSONObject = ["key": string, "list": [1.5, string, 1e21]]
            let expected = #"{"key":"\#(escaped)","list":[1.5,"\#(escaped)",1e+21]}"#
            #expect(object.serialized() == expected, "\(length)")
            #expect(JSONValue.object(object).serialized() == expected, "\(length)")
            #expect(object.serializedCount == expected.utf8.count)
            #expect(try JSONValue(parsing: object.serializedBytes()) == .object(object))
        }
    }

    @Test func equalityIgnoresMemberOrder() {
        let a: JSONValue = ["a": 1, "b": [true, .null]]
        let b: JSONValue = ["b": [true, .null], "a": 1]
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != ["a": 1, "b": [true, false]])
    }
}

@Suite struct JSONParserTests {
    @Test func capturedCoatyJSFrameRoundTripsByteForByte() throws {
        let frame =
            #"{"object":{"name":"TemperatureMeasurement","coreType":"IoContext","objectType":"coaty.test.TemperatureIoContext","objectId":"55555555-5555-4555-8555-555555555555","operatingState":"normal","parentObjectId":"44444444-4444-4444-8444-444444444444"}}"#
        let value = try JSONValue(parsing: frame)
        #expect(value.serialized() == frame)
        #expect(value["object"]?["operatingState"] == "normal")
    }

    /// The strings the parser returns as literals (`JSONKnownStrings`) come out as the text says, as keys and as
    /// values; so do strings of the same length that differ in one byte, at its start, middle or end.
    @Test func knownStringsAndTheirNearMissesParseToTheirText() throws {
        for known in JSONKnownStrings.all.map({ $0.description }) {
            let bytes = Array(known.utf8)
            #expect(bytes.withUnsafeBufferPointer { JSONKnownStrings.string(of: $0) } == known)
            var variants = [known]
            for index in [0, bytes.count / 2, bytes.count - 1] {
                var changed = bytes
                changed[index] = changed[index] == UInt8(ascii: "x") ? UInt8(ascii: "y") : UInt8(ascii: "x")
                variants.append(String(decoding: changed, as: UTF8.self))
            }
            for text in variants {
                let parsed = try JSONValue(parsing: "{\"\(text)\":\"\(text)\"}")
                #expect(parsed.objectValue?.keys == [text])
                #expect(parsed[text] == .string(text))
            }
        }
    }

    @Test func scalarsAtTopLevel() throws {
        #expect(try JSONValue(parsing: "21.5") == .number(21.5))
        #expect(try JSONValue(parsing: " \"on\" ") == "on")
        #expect(try JSONValue(parsing: "null") == .null)
        #expect(try JSONValue(parsing: "-0") == .number(-0.0))
        #expect(try JSONValue(parsing: "1E400") == .number(.infinity))
        #expect(try JSONValue(parsing: "123456789012345678901234") == .number(1.2345678901234568e23))
    }

    /// Short decimals are computed from their digits, longer ones and exponents by the C library: both give the
    /// nearest double, as `JSON.parse` does.
    @Test(arguments: [
        "21.5", "273.15", "0.1", "0.000123", "123456789.125", "99999.99999", "0.123456789012345",
        "1234567890.12345", "0.30000000000000004", "1.7976931348623157e308", "2.5e-3", "9007199254740993.5",
    ])
    func decimalsAsTheNearestDouble(text: String) throws {
        let expected = try #require(Double(text))
        #expect(try JSONValue(parsing: text) == .number(expected))
        #expect(try JSONValue(parsing: "-" + text) == .number(-expected))
    }

    @Test func negativeZeroWithAFraction() throws {
        let value = try #require(try JSONValue(parsing: "-0.0").numberValue)
        #expect(value == 0 && value.sign == .minus)
    }

    @Test func escapesAndSurrogates() throws {
        #expect(try JSONValue(parsing: #""\u00e9\ud83d\ude00\/\n""#) == .string("é😀/\n"))
        #expect(try JSONValue(parsing: #""\ud800x""#) == .string("\u{FFFD}x"))
    }

    @Test func duplicateKeysKeepFirstPositionAndLastValue() throws {
        let value = try JSONValue(parsing: #"{"a":1,"b":2,"a":3}"#)
        #expect(value.serialized() == #"{"a":3,"b":2}"#)
        let many = "{" + (0..<40).map { "\"k\($0 % 20)\":\($0)" }.joined(separator: ",") + "}"
        let parsed = try JSONValue(parsing: many)
        #expect(parsed.objectValue?.count == 20)
        #expect(parsed["k0"] == 20)
        #expect(parsed.objectValue?.keys.first == "k0")
    }

    /// As in a JavaScript object: array-index keys first, ascending; then the others in insertion order.
    @Test func membersAreOrderedAsJavaScriptOrdersThem() throws {
        #expect(
            try JSONValue(parsing: #"{"b":1,"1":2,"a":3,"0":4,"10":5,"01":6,"-1":7,"4294967295":8,"4294967294":9}"#)
                .serialized()
                == #"{"0":4,"1":2,"10":5,"4294967294":9,"b":1,"a":3,"01":6,"-1":7,"4294967295":8}"#)
        var object: JSONObject = ["name": "n"]
        object["7"] = 1
        object["2"] = 2
        object["z"] = 3
        #expect(object.keys == ["2", "7", "name", "z"])
        let many = "{" + (0..<40).reversed().map { "\"\($0)\":\($0)" }.joined(separator: ",") + ",\"x\":0}"
        #expect(try JSONValue(parsing: many).objectValue?.keys == (0..<40).map(String.init) + ["x"])
    }

    /// JavaScript keeps "é" and "e" + combining accent apart; Swift's String equality would merge them.
    @Test func keysAreComparedByCodeUnits() throws {
        let value = try JSONValue(parsing: #"{"\u00e9":1,"e\u0301":2}"#)
        #expect(value.objectValue?.count == 2)
        #expect(value["\u{E9}"] == 1)
        #expect(value["e\u{301}"] == 2)
    }

    @Test func invalidUTF8BecomesReplacementCharacter() throws {
        let value = try JSONValue(parsing: [0x22, 0x61, 0xFF, 0x22])
        #expect(value == .string("a\u{FFFD}"))
    }

    @Test(arguments: [
        ("", "unexpected end of input"), ("{", "unterminated object"), ("[1,]", "unexpected ']'"),
        ("{\"a\":1,}", "expected a member name"), ("01", "leading zeros"), ("1.", "decimal point"),
        ("\"a", "unterminated string"), ("\"\u{01}\"", "control character"), ("tru", "invalid literal"),
        ("[1] x", "after the JSON value"), ("\"\\x\"", "invalid escape"), ("{'a':1}", "member name"),
        ("NaN", "expected a value"), ("\u{FEFF}1", "expected a value"), ("1e", "exponent"), ("-", "invalid number"),
    ])
    func rejectsWhatJSONParseRejects(text: String, reason: String) {
        #expect {
            try JSONValue(parsing: text)
        } throws: { error in
            (error as? JSONParseError)?.reason.contains(reason) == true
        }
    }

    @Test func errorsSayLineAndColumn() {
        do {
            _ = try JSONValue(parsing: "{\n  \"a\": 1,\n  \"b\": ]\n}")
            Issue.record("expected an error")
        } catch {
            #expect(error.line == 3)
            #expect(error.column == 8)
        }
    }

    // MARK: Strict parsing, for files people write

    /// The error of a strict parse of `bytes`, as "path: reason (line, column)".
    private func strictError(_ bytes: [UInt8]) -> String? {
        do {
            _ = try JSONValue(parsing: bytes, mode: .strict)
            return nil
        } catch {
            #expect(error.path != nil, "\(error)")
            return error.description
        }
    }

    @Test func strictParsingRefusesDuplicateKeysAtTheirPath() throws {
        #expect(strictError(Array(#"{"a": 1, "b": 2, "a": 3}"#.utf8)) == "$.a: duplicate key (line 1, column 18)")
        let nested = "{\n  \"x\": [{\"b\": 1}, {\"b\": 1, \"c\": {\"d\": 1,\n    \"d\": 2}}]\n}"
        #expect(strictError(Array(nested.utf8)) == "$.x[1].c.d: duplicate key (line 3, column 5)")
        // Past the small-object path of the JSON.parse mode, and keys that differ only in normalisation are distinct.
        let many = "{" + (0..<40).map { "\"k\($0)\": \($0)" }.joined(separator: ", ") + #", "k7": 0}"#
        #expect(strictError(Array(many.utf8))?.hasPrefix("$.k7: duplicate key") == true)
        #expect(try JSONValue(parsing: #"{"\u00e9": 1, "e\u0301": 2}"#, mode: .strict).objectValue?.count == 2)
        // JSON.parse's semantics stay for wire payloads.
        #expect(try JSONValue(parsing: #"{"a": 1, "a": 2}"#) == ["a": 2])
    }

    @Test func strictParsingRefusesInvalidUTF8AtItsPath() throws {
        let value = Array(#"{"name": "ab"#.utf8) + [0xFF] + Array(#"c"}"#.utf8)
        #expect(strictError(value) == "$.name: invalid UTF-8 (byte 0xff) (line 1, column 13)")
        let escaped = Array(#"{"list": ["ok", "\n"#.utf8) + [0xC3] + Array(#""]}"#.utf8)
        #expect(strictError(escaped) == "$.list[1]: invalid UTF-8 (byte 0xc3) (line 1, column 20)")
        let key = Array(#"{"a": {"k"#.utf8) + [0xED, 0xA0, 0x80] + Array(#"": 1}}"#.utf8)  // an encoded surrogate
        #expect(strictError(key) == "$.a: invalid UTF-8 (byte 0xed) (line 1, column 10)")
        #expect(try JSONValue(parsing: Array(#"{"t": "é€😀"}"#.utf8), mode: .strict) == ["t": "é€😀"])
        #expect(try JSONValue(parsing: value) == ["name": "ab\u{FFFD}c"])
    }

    @Test func strictParsingRefusesLoneSurrogatesAndNumbersBeyondADouble() throws {
        #expect(
            strictError(Array(#"{"s": "x\ud800y"}"#.utf8))
                == "$.s: a lone surrogate escape, which stands for no character (line 1, column 9)")
        #expect(strictError(Array(#"{"s": "\udc00"}"#.utf8))?.hasPrefix("$.s: a lone surrogate escape") == true)
        #expect(
            strictError(Array(#"{"n": [1, -1e400]}"#.utf8))
                == "$.n[1]: -1e400 is beyond the range of numbers (about ±1.8e308) (line 1, column 11)")
        #expect(try JSONValue(parsing: #"{"n": 1e400}"#) == ["n": .number(.infinity)])
    }

    @Test func strictParsingReportsSyntaxErrorsAsBefore() {
        do {
            _ = try JSONValue(parsing: "{\n  \"a\": 1,\n  \"b\": ]\n}", mode: .strict)
            Issue.record("expected an error")
        } catch {
            #expect(error.path == nil)
            #expect(error.description == "line 3, column 8: unexpected ']', expected a value")
        }
    }

    @Test func deepNestingIsRejectedNotACrash() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: deep) }
        #expect(throws: Never.self) {
            try JSONValue(parsing: String(repeating: "[", count: 500) + String(repeating: "]", count: 500))
        }
    }
}

@Suite struct JSONCursorTests {
    @Test func errorsNameTheJSONPath() throws {
        let document = try JSONValue(
            parsing: #"{"communication":{"brokerUrl":5,"tls":{"ca file":true}},"rules":[{},{"rate":-1}]}"#)
        let root = JSONCursor(document)
        #expect(
            throws: JSONShapeError(
                path: JSONPath([.key("communication"), .key("brokerUrl")]), reason: "expected a string, found number")
        ) {
            try root.required("communication").required("brokerUrl").string()
        }
        let rules = try root.required("rules").elements()
        #expect(
            throws: JSONShapeError(
                path: JSONPath([.key("rules"), .index(1), .key("rate")]), reason: "-1 is out of range 0...100")
        ) {
            try rules[1].required("rate").integer(in: 0...100)
        }
        let tls = try root.required("communication").required("tls")
        do {
            try tls.allowOnly(["caFile"])
            Issue.record("expected an error")
        } catch {
            #expect(error.path.description == #"$.communication.tls["ca file"]"#)
        }
        #expect(throws: JSONShapeError.self) { try rules[0].required("name") }
    }

    /// A whole number too large for an Int (or for a double to hold exactly) is out of range, not "not whole".
    @Test(arguments: [
        (1e308, 5...65535, "1e+308 is out of range 5...65535"),
        (-1e20, 0...100, "-100000000000000000000 is out of range 0...100"),
        (1e16, 1...Int.max, "10000000000000000 is out of range 1...9007199254740992"),
        (2.5, 0...100, "must be a whole number"),
        (101, 0...100, "101 is out of range 0...100"),
    ])
    func integersOutOfRangeSaySo(value: Double, range: ClosedRange<Int>, reason: String) {
        #expect(throws: JSONShapeError(path: JSONPath([.key("n")]), reason: reason)) {
            try JSONCursor(["n": .number(value)]).required("n").integer(in: range)
        }
    }
}
