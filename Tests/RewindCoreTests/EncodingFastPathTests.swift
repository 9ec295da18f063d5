import Foundation
import XCTest
@testable import RewindCore

/// The commit path's encoders write bytes straight (issue 25's instruction
/// count): each must give exactly the text the general way gives, since that
/// text is hashed into the chain, fingerprinted, and read by clients.
final class EncodingFastPathTests: XCTestCase {
    func testIntegersAreWrittenAsTheirDecimalText() {
        var rng = SeededRandom(seed: 25)
        var values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1]
        for _ in 0..<5_000 {
            let bits = Int.random(in: 0...62, using: &rng)
            values.append(Int64.random(in: -(1 << bits)...(1 << bits) - 1, using: &rng))
        }
        for v in values {
            var w = JSONWriter()
            w.write(int: v)
            XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), String(v))
            XCTAssertEqual(JSONWriter.string(.int(v)), String(v))
            XCTAssertEqual(JSONWriter.withDecimal(v) { Array($0) }, Array(String(v).utf8))
        }
    }

    func testStringsNeedingEscapesAndThoseNotEncodeAsBefore() throws {
        var rng = SeededRandom(seed: 2025)
        let pieces = ["a", "Z", " ", "\"", "\\", "\n", "\r", "\t", "\u{1}", "\u{1f}", "é", "中", "😀", "/", "\u{7f}", "0123456789abcdef"]
        for n in 0..<3_000 {
            let s = (0..<Int.random(in: 0...(n % 40), using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
            var w = JSONWriter()
            w.write(string: s)
            XCTAssertEqual(w.bytes, Self.escapedOneByteAtATime(s), "\(s.debugDescription)")
            XCTAssertEqual(try JSONParser.parse(w.bytes), .string(s))
        }
    }

    /// The eight-bytes-at-a-time check sees every byte JSON escapes, at any
    /// place of a word or of the tail, and nothing else (high bytes of UTF-8 included).
    func testTheEscapeCheckSeesEveryByteThatNeedsOneAnywhere() {
        for length in [1, 7, 8, 9, 15, 16, 17, 24, 31] {
            for at in 0..<length {
                for b in 0...255 as ClosedRange<Int> {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[at] = UInt8(b)
                    let expected = b < 0x20 || b == 0x22 || b == 0x5C
                    XCTAssertEqual(bytes.withUnsafeBufferPointer { JSONWriter.needsEscape($0) }, expected, "byte \(b) at \(at) of \(length)")
                }
            }
        }
        // Bytes beside those, where the arithmetic borrows or carries (0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, high bytes), in any mix.
        let safe: [UInt8] = [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF]
        var rng = SeededRandom(seed: 8)
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...40, using: &rng)).map { _ in safe.randomElement(using: &rng)! }
            XCTAssertFalse(bytes.withUnsafeBufferPointer { JSONWriter.needsEscape($0) }, "\(bytes)")
        }
    }

    /// A node's text is written from its scalars, never made a `String`:
    /// byte for byte what the `String` of those scalars writes (escapes, and
    /// UTF-8 of one to four bytes), for random texts.
    func testTextWrittenFromItsScalarsIsTheStringsEncoding() throws {
        var rng = SeededRandom(seed: 26)
        let pieces: [Unicode.Scalar] = ["a", " ", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1f}", "\u{7f}", "\u{80}", "é", "\u{7ff}",
                                        "\u{800}", "中", "\u{fffd}", "\u{ffff}", "\u{10000}", "😀", "\u{10ffff}"]
        for n in 0..<3_000 {
            let scalars = (0..<Int.random(in: 0...(n % 60), using: &rng)).map { _ in pieces.randomElement(using: &rng)! }
            var fromScalars = JSONWriter(), fromString = JSONWriter()
            fromScalars.write(scalars: scalars)
            fromString.write(string: String(String.UnicodeScalarView(scalars)))
            XCTAssertEqual(fromScalars.bytes, fromString.bytes, "\(scalars)")
        }
    }

    /// The writer as it was before the one-scan fast path.
    static func escapedOneByteAtATime(_ s: String) -> [UInt8] {
        var out: [UInt8] = [0x22]
        for c in s.utf8 {
            switch c {
            case 0x22, 0x5C: out += [0x5C, c]
            case 0x0A: out += Array("\\n".utf8)
            case 0x0D: out += Array("\\r".utf8)
            case 0x09: out += Array("\\t".utf8)
            case 0..<0x20: out += Array(String(format: "\\u%04x", c).utf8)
            default: out.append(c)
            }
        }
        return out + [0x22]
    }

    func testTimestampsAgreeWithFoundationAcrossTheYears() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var rng = SeededRandom(seed: 8601)
        // 1600 to 9999 (Foundation turns Julian before 1582; ours is proleptic
        // Gregorian throughout), and the edges of days, years and the epoch.
        var millis: [Int64] = [0, -1, 1, 999, 1000, 86_399_999, 86_400_000, -86_400_000, 253_402_300_799_999, 951_782_400_000]
        for _ in 0..<3_000 { millis.append(Int64.random(in: -11_676_096_000_000...253_402_300_799_999, using: &rng)) }
        for m in millis {
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(m) / 1000))
            XCTAssertEqual(Timestamp.iso8601(millis: m), expected, "\(m)")
            var w = JSONWriter()
            w.write(timestamp: m)
            XCTAssertEqual(w.bytes, Array("\"\(expected)\"".utf8))
        }
    }

    func testYearsPastFourDigitsStillFormat() {
        XCTAssertEqual(Timestamp.iso8601(millis: -62_135_596_800_000), "0001-01-01T00:00:00.000Z")  // proleptic Gregorian
        // Beyond year 9999 the year takes the digits it needs (no clock gives these; they must not trap).
        XCTAssertEqual(Timestamp.iso8601(millis: 253_402_300_800_000), "10000-01-01T00:00:00.000Z")
        XCTAssertTrue(Timestamp.iso8601(millis: -62_167_219_200_001).hasSuffix("12-31T23:59:59.999Z"))
    }

    func testASCIICheckSeesAHighByteAtAnyOffset() {
        for length in 0..<40 {
            let ascii = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            XCTAssertTrue(ascii.withUnsafeBufferPointer { UTF8Text.isASCII($0) })
            for at in 0..<length {
                var b = ascii
                b[at] = 0xC3
                XCTAssertFalse(b.withUnsafeBufferPointer { UTF8Text.isASCII($0) }, "length \(length), at \(at)")
                XCTAssertFalse(b.withUnsafeBufferPointer { UTF8Text.isValid($0) }, "a lone lead byte is not UTF-8")
            }
        }
        let valid = Array("abcdefgh é 中 😀".utf8)
        XCTAssertTrue(valid.withUnsafeBufferPointer { UTF8Text.isValid($0) })
    }

    func testInvalidUTF8InsideAStringIsStillRefused() {
        for bad: [UInt8] in [[0xFF], [0xC3], [0xE4, 0xB8], [0xED, 0xA0, 0x80], [0xC0, 0xAF]] {
            let text = Array("{\"k\":\"ab".utf8) + bad + Array("cd\"}".utf8)
            XCTAssertThrowsError(try JSONParser.parse(text)) { XCTAssertEqual(($0 as? JSONParser.Failure)?.kind, .syntax) }
            guard case let .failure(f) = Request.decode(text, maxDepth: 8) else { return XCTFail("decoded invalid UTF-8") }
            XCTAssertEqual(f.error.code, .badFrame)
        }
    }

    func testFingerprintInputIsTheCanonicalObjectOfOpsAndAction() {
        var gen = OpGenerator(seed: 77)
        for n in 0..<500 {
            let ops: [Op] = (0..<(n % 4)).map { _ in .set("root", key: "k\(Int.random(in: 0..<5, using: &gen.rng))", value: gen.value()) }
            let action: String? = n % 3 == 0 ? nil : "Act \"\(n)\"\n"
            let s = DocumentLedger.Submission(tx: "t\(n)", base: 0, ops: ops, action: action, userID: 1, userName: "u",
                                              client: "c", eventID: "e\(n)", time: 0)
            // What every fingerprint in the log so far was computed over.
            let general = JSONWriter.encode(.obj([("ops", Op.encodeList(ops)), ("action", action.map { .string($0) })]))
            XCTAssertEqual(s.digestInput, general)
        }
    }

    /// Ops read back from the log without a tree (`Op.readCanonicalList`) are
    /// the ops `parseList` reads from the same text: random ops and their
    /// inverses (deletes' inverses recreate whole subtrees with props and
    /// text), ids and text with escapes, a subtree 12 levels deep, and one
    /// past the depth bound (refused by both); any other form of the text (spaces, another key order, a
    /// missing field) is left to `parseList`.
    func testOpsReadWithoutATreeAreTheOpsReadThroughOne() throws {
        var gen = OpGenerator(seed: 9090)
        var doc = Document()
        var lists: [[Op]] = []
        for n in 0..<1_500 {
            let ops = (0..<(1 + n % 3)).map { _ in gen.op(on: doc) }
            guard let applied = try? doc.apply(ops, limits: Limits()) else { continue }
            lists.append(applied.ops)
            lists.append(applied.inverse)
        }
        var deep = NodeSpec(id: "d0", kind: "view", frame: [0, 0, 1, 1])
        for k in 1..<12 {
            var parent = NodeSpec(id: Key("d\(k)"), kind: "view", frame: [0, 0, 1, 1])
            parent.children = [deep]
            deep = parent
        }
        var odd = NodeSpec(id: "q\"\\\u{1}中😀", kind: "k\n", frame: [.int(0), .double(1.5), .int(-3), .double(1e20)])
        odd.props = ["a\"b": ["x": [1, 2, .null]], "n": .int(Int64.min)]
        odd.text = Array("a\"b\\c\n\u{1}中😀".unicodeScalars)
        lists.append([.create(odd, parent: "root", index: Int.max), .set("q\"", key: "k\"", value: .double(-0.5)), .delete("x")])
        lists.append([.create(deep, parent: "root", index: 0)])
        lists.append([])
        var fast = 0
        for (i, ops) in lists.enumerated() {
            let text = JSONWriter.encode(Op.encodeList(ops))
            let tree = try Op.parseList(JSONParser.parse(text, maxDepth: Limits.unbounded.maxJSONDepth), limits: .unbounded)
            XCTAssertEqual(tree, ops, "list \(i) round trips through the tree")
            let read = text.withUnsafeBufferPointer { Op.readCanonicalList($0, limits: .unbounded) }
            if let read {
                XCTAssertEqual(read, tree, "list \(i)")
                fast += 1
            }
        }
        XCTAssertEqual(fast, lists.count, "every list written by `encodeList` read without a tree")
        // At every depth bound, the reader takes exactly what the tree takes (the rest it leaves to the tree, which refuses it).
        let deepText = JSONWriter.encode(Op.encodeList([.create(deep, parent: "root", index: 0), .set("root", key: "k", value: [[[[1]]]])]))
        for bound in 1...40 {
            var limits = Limits.unbounded
            limits.maxJSONDepth = bound
            let tree = try? Op.parseList(JSONParser.parse(deepText, maxDepth: bound), limits: limits)
            let read = deepText.withUnsafeBufferPointer { Op.readCanonicalList($0, limits: limits) }
            XCTAssertEqual(read, tree, "depth bound \(bound)")
        }
        // Other forms: left to the tree, never read differently.
        for text in [#"[ {"op":"delete","node":"a"}]"#, #"[{"node":"a","op":"delete"}]"#, #"[{"op":"insert","node":"a","pos":0}]"#,
                     #"[{"op":"insert","node":"a","pos":-1,"text":"x"}]"#, #"[{"op":"delete","node":""}]"#,
                     #"[{"op":"delete","node":"a"}]x"#, #"[{"op":"move","node":"a","parent":"b","index":1.5}]"#] {
            XCTAssertNil(Array(text.utf8).withUnsafeBufferPointer { Op.readCanonicalList($0, limits: .unbounded) }, text)
        }
    }

    /// Ops written straight into bytes (`Op.encodedList`: each commit's ops
    /// and inverse) are byte for byte what `JSONWriter` writes for
    /// `encodeList`: random ops and their inverses, ids, keys and text with
    /// escapes and characters past ASCII, values of every kind.
    func testOpsAreWrittenAsTheirJSONTreeEncodes() {
        var gen = OpGenerator(seed: 4242)
        var doc = Document()
        var lists: [[Op]] = [[]]
        for n in 0..<2_000 {
            let ops = (0..<(1 + n % 3)).map { _ in gen.op(on: doc) }
            guard let applied = try? doc.apply(ops, limits: Limits()) else { continue }
            lists.append(applied.ops)
            lists.append(applied.inverse)
        }
        let odd: Key = "q\"\\\u{1}中😀\n"
        lists.append([.insert(odd, pos: 3, text: Array("a\"b\\c\n\u{1}\u{7f}中😀".unicodeScalars)), .remove(odd, pos: Int.max, len: 0),
                      .set(odd, key: "k\"\u{1f}", value: ["a": [1, 2.5, .null, true, "x\"y"], "b": .int(Int64.min)]), .delete(odd),
                      .move(odd, parent: "p\\", index: 0), .set("n", key: "d", value: .double(1e300))])
        var kinds = Set<String>()
        for (i, ops) in lists.enumerated() {
            XCTAssertEqual(Op.encodedList(ops), JSONWriter.encode(Op.encodeList(ops)), "list \(i)")
            for op in ops { kinds.insert(op.json.objectValue?["op"]?.stringValue ?? "?") }
        }
        XCTAssertEqual(kinds, ["create", "delete", "set", "move", "insert", "remove"], "every kind of op was written")
    }

    /// Replies are written straight: the same bytes as the tree they replace
    /// (`line(.obj(…))`), with or without `re`, nil fields left out, values of every kind.
    func testRepliesAreWrittenAsTheirJSONTreeEncodes() {
        let values: [JSON?] = [nil, .null, true, .int(-7), .double(2.5), "x\"\\\n中", [1, [2]], ["a": ["b": .null]]]
        var rng = SeededRandom(seed: 118)
        for n in 0..<2_000 {
            let re: Int64? = n % 4 == 0 ? nil : Int64.random(in: Int64.min...Int64.max, using: &rng)
            let fields: [(String, JSON?)] = (0..<(n % 5)).map { k in ("k\(k)\u{1}\"", values.randomElement(using: &rng)!) }
            let tree = Message.line(.obj([("re", re.map { .int($0) }), ("ok", .bool(true))] + fields))
            XCTAssertEqual(Message.reply(re, fields), tree, "reply \(n)")
            let version = n % 3 == 0 ? Int64(n) : Int64.random(in: 0...Int64.max, using: &rng)
            XCTAssertEqual(Message.versionReply(re, version: version),
                           Message.line(.obj([("re", re.map { .int($0) }), ("ok", .bool(true)), ("version", .int(version))])),
                           "a submit's reply \(n)")
        }
    }

    /// Hex read from a string's storage (every log row's hash): round trips,
    /// from an offset (bytea's `\x`), upper case, and refuses what is not hex.
    func testHexIsReadBackExactlyAndOnlyWhenItIsHex() {
        var gen = SeededRandom(seed: 5150)
        for n in 0..<300 {
            let bytes = (0..<(n % 40)).map { _ in UInt8.random(in: 0...255, using: &gen) }
            let hex = Hex.string(bytes)
            XCTAssertEqual(Hex.bytes(hex), bytes)
            XCTAssertEqual(Hex.bytes("\\x" + hex, from: 2), bytes)
            XCTAssertEqual(Hex.bytes(hex.uppercased()), bytes)
        }
        for bad in ["0", "0g", "zz", "12 4", "é1", "\\x00"] { XCTAssertNil(Hex.bytes(bad), bad) }
        XCTAssertNil(Hex.bytes("ab", from: 3))
        XCTAssertEqual(Hex.bytes("ab", from: 2), [])
    }

    func testStateIsWrittenAsItsJSONTreeEncodes() {
        var gen = OpGenerator(seed: 4242)
        for n in 0..<60 {
            var doc = gen.document(ops: n * 3)
            // Frames as clients send them (integers and fractions), every field set both ways, escapes in ids and text.
            var spec = NodeSpec(id: Key("q\"\\\(n)"), kind: "text", frame: [.int(0), .double(1.5), .int(-3), .double(1e20)])
            spec.text = Array("a\"b\\c\n\u{1}中😀".unicodeScalars)
            for op: Op in [.set("root", key: "clips", value: .bool(n % 2 == 0)), .set("root", key: "focusable", value: .bool(n % 3 == 0)),
                           .set("root", key: "undoScope", value: .bool(n % 5 == 0)), .create(spec, parent: "root", index: 0)] {
                XCTAssertNoThrow(try doc.apply(op, limits: Limits()))
            }
            for (id, node) in doc.nodes {
                var w = JSONWriter()
                node.write(to: &w)
                XCTAssertEqual(w.bytes, JSONWriter.encode(node.json), "node \(id) of document \(n)")
            }
            var w = JSONWriter()
            doc.writeState(to: &w)
            XCTAssertEqual(w.bytes, JSONWriter.encode(doc.json), "document \(n)")
        }
    }

    func testNoncesAreNeverRepeated() throws {
        let cipher = DocumentCipher(doc: "d", keyID: "k1", key: [UInt8](repeating: 7, count: 32))
        var seen = Set<String>()
        // More than one refill of the pool (4 KiB holds 341 nonces).
        for i in 0..<2_000 {
            let sealed = cipher.sealEntry(ops: "same text", inverse: "[]", seq: 1, id: "e")
            let bytes = Base64.decode(String(sealed.split(separator: ":", maxSplits: 1)[1]))!
            XCTAssertTrue(seen.insert(Hex.string(Array(bytes.prefix(12)))).inserted, "nonce repeated at seal \(i)")
            XCTAssertEqual(try cipher.openEntry(sealed, seq: 1, id: "e").ops, "same text")
        }
    }
}
