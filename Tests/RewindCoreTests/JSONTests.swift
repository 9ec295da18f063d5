import XCTest
@testable import RewindCore
import RewindTestSupport

final class JSONTests: XCTestCase {
    func roundTrip(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let v = try JSONParser.parse(text)
        XCTAssertEqual(JSONWriter.string(v), text, file: file, line: line)
        XCTAssertEqual(try JSONParser.parse(JSONWriter.string(v)), v, file: file, line: line)
    }

    func testIntegersBeyondDoublePrecisionRoundTripExactly() throws {
        try roundTrip(#"{"big":9007199254740993,"min":-9223372036854775808,"max":9223372036854775807}"#)
        XCTAssertEqual(try JSONParser.parse("9007199254740993"), .int(9_007_199_254_740_993))
    }

    /// Integers are read in place up to 18 digits and through `Int64(_:)` past
    /// that: every length, both signs, and the edges either side, read as `Int64` reads their text.
    func testIntegersOfEveryLengthReadAsInt64ReadsThem() throws {
        var texts = ["0", "-0", "9", "-9", "999999999999999999", "-999999999999999999", "1000000000000000000",
                     "-1000000000000000000", "9223372036854775807", "-9223372036854775808"]
        var rng = SeededRandom(seed: 1864)
        for digits in 1...19 {
            for _ in 0..<20 {
                var t = String(Int.random(in: 1...9, using: &rng))
                for _ in 1..<digits { t += String(Int.random(in: 0...9, using: &rng)) }
                texts += [t, "-" + t]
            }
        }
        for t in texts {
            let expected: JSON = Int64(t).map { .int($0) } ?? .double(Double(t)!)
            XCTAssertEqual(try JSONParser.parse(t), expected, t)
            XCTAssertEqual(try JSONParser.parse("[\(t)]"), .array([expected]), t)
        }
        XCTAssertEqual(try JSONParser.parse("9223372036854775808"), .double(9_223_372_036_854_775_808))  // past Int64: a double, as before
    }

    /// The size a value counts against the document's limit is the size of its encoding.
    func testEncodedSizeIsTheEncodingsLength() {
        var rng = SystemRandomNumberGenerator()
        var values: [JSON] = [.int(0), .int(-1), .int(9), .int(10), .int(-10), .int(.max), .int(.min), .double(0.5), .null, .bool(false),
                              .string("a\"b\n\u{1}é"), .array([.int(-12), .string("x")]), .obj([("k", .int(99)), ("é", .array([]))])]
        for _ in 0..<500 { values.append(.int(Int64.random(in: .min ... .max, using: &rng) >> Int64.random(in: 0...63, using: &rng))) }
        for v in values { XCTAssertEqual(v.encodedSize, JSONWriter.encode(v).count, "\(v)") }
    }

    func testIntegersAndFloatsStayDistinct() throws {
        XCTAssertEqual(try JSONParser.parse("1"), .int(1))
        XCTAssertEqual(try JSONParser.parse("1.0"), .double(1))
        XCTAssertNotEqual(JSON.int(1), JSON.double(1))
        try roundTrip("[0.1,1e+20,-2.5,100.0]")
    }

    func testStringsWithEscapesAndNonASCIIRoundTrip() throws {
        let v = try JSONParser.parse(#""a\"b\\c\n\t\u0001 é 中 \ud83d\ude00""#)
        XCTAssertEqual(v, .string("a\"b\\c\n\t\u{1} é 中 😀"))
        XCTAssertEqual(try JSONParser.parse(JSONWriter.string(v)), v)
    }

    func testCanonicallyEquivalentStringsAreDifferentValues() {
        XCTAssertNotEqual(JSON.string("é"), JSON.string("e\u{301}"))
        XCTAssertNotEqual(Key("é"), Key("e\u{301}"))
        XCTAssertEqual(Set([Key("é"), Key("e\u{301}")]).count, 2)
    }

    func testDuplicateKeysAreRejected() {
        XCTAssertThrowsError(try JSONParser.parse(#"{"a":1,"a":2}"#)) { e in
            XCTAssertEqual((e as? JSONParser.Failure)?.kind, .duplicateKey)
        }
        // Canonically equivalent but byte-different keys are two keys.
        XCTAssertNoThrow(try JSONParser.parse("{\"é\":1,\"e\u{301}\":2}"))
    }

    func testNestingPastTheLimitIsRejected() {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        XCTAssertThrowsError(try JSONParser.parse(deep)) { e in
            XCTAssertEqual((e as? JSONParser.Failure)?.kind, .tooDeep)
        }
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        XCTAssertNoThrow(try JSONParser.parse(ok))
    }

    func testNULIsRejectedBecausePostgresCannotStoreIt() {
        XCTAssertThrowsError(try JSONParser.parse(#""a\u0000b""#)) { e in
            XCTAssertEqual((e as? JSONParser.Failure)?.kind, .nul)
        }
    }

    func testMalformedInputIsRejected() {
        for bad in ["", "{", "[1,]", "{\"a\"}", "01", "1.", "-", "tru", "\"abc", "[1] x", "NaN", "1e999", "\"\\ud800\""] {
            XCTAssertThrowsError(try JSONParser.parse(bad), "accepted \(bad)")
        }
        XCTAssertThrowsError(try JSONParser.parse([0x22, 0xFF, 0x22]))  // invalid UTF-8 inside a string
    }

    func testRequestDecodingReportsTheIDOfABrokenLine() {
        guard case let .failure(f) = Request.decode(Array(#"{"id": 42, "type": "open", oops}"#.utf8), maxDepth: 64) else {
            return XCTFail("accepted broken JSON")
        }
        XCTAssertEqual(f.error.code, .badFrame)
        XCTAssertEqual(f.id, 42)
        guard case let .failure(g) = Request.decode([0x7B, 0xFF, 0x7D], maxDepth: 64) else { return XCTFail() }
        XCTAssertEqual(g.error.code, .badFrame)
        XCTAssertTrue(g.error.message.contains("UTF-8"))
        guard case let .failure(h) = Request.decode(Array("[1]".utf8), maxDepth: 64) else { return XCTFail() }
        XCTAssertEqual(h.error.code, .badFrame)
    }

    func testTimestampsFormatAsISO8601() {
        XCTAssertEqual(Timestamp.iso8601(millis: 0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(Timestamp.iso8601(millis: 1_795_388_092_123), "2026-11-22T22:54:52.123Z")
        XCTAssertEqual(Timestamp.iso8601(millis: 951_782_400_000), "2000-02-29T00:00:00.000Z")
    }
}
