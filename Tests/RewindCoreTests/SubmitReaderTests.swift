import XCTest
@testable import RewindCore

/// `submit` lines read without a tree of their ops (`Request.readSubmit`)
/// give exactly what the general path gives — `decode`, then `Op.parseList`
/// of the `ops` member with the same limits — and any line the reader does
/// not take is left to that path whole, which accepts or names the problem
/// as before.
final class SubmitReaderTests: XCTestCase {
    /// What the general path makes of `line`: the request (its `ops` member
    /// taken out) and its ops, or nil where either step refuses it.
    private func general(_ line: [UInt8], _ limits: Limits) -> (Request, [Op])? {
        guard case let .success(r) = Request.decode(line, maxDepth: limits.maxJSONDepth) else { return nil }
        guard r.type == "submit", let ops = try? Op.parseList(r.body["ops"], limits: limits) else { return nil }
        return (r, ops)
    }

    private func fast(_ line: [UInt8], _ limits: Limits) -> Request? {
        line.withUnsafeBufferPointer { Request.readSubmit($0, limits: limits) }
    }

    /// Checks one line both ways; true when the reader took it.
    @discardableResult
    private func check(_ line: [UInt8], _ limits: Limits, _ what: @autoclosure () -> String) -> Bool {
        let text = String(decoding: line, as: UTF8.self)
        guard let f = fast(line, limits) else {
            // Not taken: `decode` with the reader on gives what it gives without it.
            let on = Request.decode(line, maxDepth: limits.maxJSONDepth, submitLimits: limits)
            let off = Request.decode(line, maxDepth: limits.maxJSONDepth)
            switch (on, off) {
            case let (.success(a), .success(b)):
                XCTAssertNil(a.ops, "\(what()): \(text)")
                XCTAssertEqual(a.body, b.body, "\(what()): \(text)")
            case let (.failure(a), .failure(b)):
                XCTAssertEqual(a.error.code, b.error.code, "\(what()): \(text)")
                XCTAssertEqual(a.error.message, b.error.message, "\(what()): \(text)")
                XCTAssertEqual(a.id, b.id, "\(what()): \(text)")
            default: XCTFail("\(what()): the two paths disagree on \(text)")
            }
            return false
        }
        guard let (g, ops) = general(line, limits) else {
            XCTFail("\(what()): the reader took a line the general path refuses: \(text)")
            return true
        }
        XCTAssertEqual(f.id, g.id, "\(what()): \(text)")
        XCTAssertEqual(f.type, g.type)
        XCTAssertEqual(f.ops, ops, "\(what()): \(text)")
        XCTAssertEqual(f.body, JSONObject(g.body.members.filter { $0.key != "ops" }), "\(what()): \(text)")
        if case let .success(d) = Request.decode(line, maxDepth: limits.maxJSONDepth, submitLimits: limits) {
            XCTAssertEqual(d.ops, ops, "decode takes the reader's way: \(text)")
        } else {
            XCTFail("decode refused what the reader took: \(text)")
        }
        return true
    }

    private static func line(_ members: [(String, JSON)]) -> [UInt8] {
        JSONWriter.encode(.object(JSONObject(members.map { (key: $0.0, value: $0.1) })))
    }

    func testCompactSubmitsAreReadAsTheGeneralPathReadsThem() {
        var gen = OpGenerator(seed: 2525)
        var rng = SeededRandom(seed: 2526)
        var doc = Document()
        var taken = 0, lines = 0
        for n in 0..<1_500 {
            let ops = (0..<(1 + n % 3)).map { _ in gen.op(on: doc) }
            guard let applied = try? doc.apply(ops, limits: Limits()) else { continue }
            for list in [applied.ops, applied.inverse] {
                var members: [(String, JSON)] = [
                    ("type", "submit"), ("doc", .string("d\(n)")), ("tx", .string("t-\"\\\(n)")), ("base", .int(Int64(n))),
                    ("ops", Op.encodeList(list)),
                ]
                if Bool.random(using: &rng) { members.append(("id", .int(Int64(n)))) }
                if n % 5 == 0 { members.append(("action", "Typing")) }
                if n % 7 == 0 { members.append(("selection", ["node": "t", "start": 1, "end": 2])) }
                if n % 11 == 0 { members.append(("extra", [1, ["deep": [true, .null]]])) }
                members.shuffle(using: &rng)
                lines += 1
                if check(Self.line(members), Limits(), "list \(n)") { taken += 1 }
            }
        }
        XCTAssertEqual(taken, lines, "every compact submit of canonical ops is read without a tree")
    }

    /// Lines the reader leaves whole to `decode`: each still answered as before.
    func testOtherFormsAreLeftToTheGeneralPath() {
        let ops = #"[{"op":"set","node":"root","key":"k","value":1}]"#
        let others = [
            #"{"id":1, "type":"submit","doc":"d","tx":"t","base":0,"ops":\#(ops)}"#,                     // a space
            #"{"id":1,"type":"submit","doc":"d","tx":"t","base":0,"ops":[{"node":"root","op":"set","key":"k","value":1}]}"#,  // key order
            #"{"id":1,"type":"submit","doc":"d","tx":"t","base":0,"ops":\#(ops),"ops":\#(ops)}"#,          // duplicate ops
            #"{"id":1,"type":"submit","doc":"d","doc":"e","tx":"t","base":0,"ops":\#(ops)}"#,             // duplicate doc
            #"{"id":1,"type":"open","doc":"d","tx":"t","base":0,"ops":\#(ops)}"#,                         // not a submit
            #"{"id":"1","type":"submit","doc":"d","tx":"t","base":0,"ops":\#(ops)}"#,                     // id not an integer
            #"{"id":1,"type":"submit","doc":"d","tx":"t","base":0}"#,                                      // no ops
            #"{"id":1,"type":"submit","doc":"d","tx":"t","base":0,"ops":\#(ops)}x"#,                       // trailing bytes
            #"{"id":1,"type":"submit","doc":"d","tx":"t","base":0,"ops":[{"op":"delete","node":""}]}"#,   // an empty name
            #"{"id":1,"type":"submit","doc":"d","tx":"t","base":0,"ops":[{"op":"insert","node":"a","pos":-1,"text":"x"}]}"#,
            #"{"id":1,"type":"submit","doc":"d","tx":"t","base":0,"ops":\#(ops)"#,                         // unterminated
            #"{"id":1,"type":"submit","doc":"d\u0000","tx":"t","base":0,"ops":\#(ops)}"#,                  // NUL
            #"{}"#, #"[]"#, #"{"type":"submit","ops":[]}"#,
        ]
        for text in others { check(Array(text.utf8), Limits(), "other form") }
        // Many members: left to `decode` (which hashes keys past a few), not compared each with each.
        let many = "{\"type\":\"submit\",\"ops\":\(ops)," + (0..<20_000).map { "\"m\($0)\":0" }.joined(separator: ",") + "}"
        XCTAssertFalse(check(Array(many.utf8), Limits(), "20,000 members"))
        XCTAssertFalse(check(Array(others[0].utf8), Limits(), "a space"))
        XCTAssertTrue(check(Array(#"{"type":"submit","ops":[]}"#.utf8), Limits(), "empty ops: read, and refused by the handler as before"))
    }

    /// At every depth bound, and past the limits on ops and names, the reader
    /// takes exactly what the general path takes.
    func testDepthAndLimitsAreCountedAsTheGeneralPathCountsThem() {
        var deep = NodeSpec(id: "d0", kind: "view", frame: [0, 0, 1, 1])
        for k in 1..<12 {
            var parent = NodeSpec(id: Key("d\(k)"), kind: "view", frame: [0, 0, 1, 1])
            parent.children = [deep]
            deep = parent
        }
        let lists: [[Op]] = [
            [.create(deep, parent: "root", index: 0)],
            [.set("root", key: "k", value: [[[[1]]]])],
            [.set("root", key: "k", value: 1)],
            [.delete("a")],
            [],
            (0..<12).map { .set("root", key: "k\($0)", value: .int(Int64($0))) },
            [.set(Key(String(repeating: "n", count: 80)), key: "k", value: 1)],
        ]
        var taken = 0
        for (i, list) in lists.enumerated() {
            let line = Self.line([("id", 1), ("type", "submit"), ("doc", "d"), ("tx", "t"), ("base", 0), ("ops", Op.encodeList(list))])
            for bound in 1...40 {
                for maxOps in [1, 10, 1_000] {
                    var limits = Limits()
                    limits.maxJSONDepth = bound
                    limits.maxOpsPerTransaction = maxOps
                    limits.maxNameBytes = 64
                    if check(line, limits, "list \(i), depth bound \(bound), \(maxOps) ops") { taken += 1 }
                }
            }
        }
        XCTAssertGreaterThan(taken, 300, "the reader took lines at most bounds (else this checks nothing)")
    }
}
