import XCTest
@testable import RewindCore

final class OpTests: XCTestCase {
    let limits = Limits()

    /// Property: for random documents and random valid ops, applying an op and
    /// then its inverse restores the document exactly.
    func testEveryOpsInverseRestoresTheDocumentExactly() throws {
        for seed in 0..<300 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var doc = gen.document(ops: 25)
            for _ in 0..<10 {
                let before = doc
                let op = gen.op(on: doc)
                guard let (applied, inverse) = try? doc.apply(op, limits: limits) else { continue }
                var undone = doc
                _ = try undone.apply(inverse, limits: .unbounded)
                XCTAssertEqual(undone, before, "seed \(seed): \(op) then \(inverse)")
                XCTAssertEqual(undone.json, before.json)
                // The op as applied (indexes clamped) replays to the same state.
                var replayed = before
                try replayed.replay([applied])
                XCTAssertEqual(replayed, doc, "seed \(seed): replay of \(applied)")
            }
        }
    }

    /// Property: a transaction's inverse list undoes the whole transaction.
    func testTransactionInverseRestoresTheDocument() throws {
        for seed in 1000..<1200 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var doc = gen.document(ops: 20)
            let before = doc
            var ops: [Op] = []
            var scratch = doc
            for _ in 0..<6 {
                let op = gen.op(on: scratch)
                if (try? scratch.apply(op, limits: limits)) != nil { ops.append(op) }
            }
            let applied = try doc.apply(ops, limits: limits)
            XCTAssertEqual(doc, scratch)
            try doc.replay(applied.inverse)
            XCTAssertEqual(doc, before, "seed \(seed)")
        }
    }

    func testAFailingOpLeavesTheWholeTransactionUnapplied() throws {
        var doc = Document()
        _ = try doc.apply([.create(NodeSpec(id: "a", kind: "text", frame: [0, 0, 1, 1]), parent: "root", index: 0)], limits: limits)
        let before = doc
        XCTAssertThrowsError(try doc.apply([
            .insert("a", pos: 0, text: Array("hi".unicodeScalars)),
            .set("a", key: "color", value: "red"),
            .remove("a", pos: 5, len: 1),
        ], limits: limits)) { e in
            let e = e as! RewindError
            XCTAssertEqual(e.code, .badRequest)
            XCTAssertEqual(e.details?.objectValue?["op"], .int(2))
        }
        XCTAssertEqual(doc, before)
    }

    func testRejectionsCarryTheRightCode() throws {
        var doc = Document()
        _ = try doc.apply([.create(NodeSpec(id: "a", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0),
                           .create(NodeSpec(id: "b", kind: "view", frame: [0, 0, 1, 1]), parent: "a", index: 0)], limits: limits)
        func code(_ op: Op) -> ErrorCode? {
            do { _ = try doc.apply([op], limits: limits); return nil } catch { return error.code }
        }
        XCTAssertEqual(code(.move("a", parent: "b", index: 0)), .badRequest)  // cycle
        XCTAssertEqual(code(.move("a", parent: "a", index: 0)), .badRequest)
        XCTAssertEqual(code(.delete("missing")), .notFound)
        XCTAssertEqual(code(.create(NodeSpec(id: "a", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0)), .conflict)
        XCTAssertEqual(code(.create(NodeSpec(id: "document", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0)), .badRequest)
        XCTAssertEqual(code(.create(NodeSpec(id: "z", kind: "view", frame: [0, 0, 1, 1]), parent: "nope", index: 0)), .notFound)
        XCTAssertEqual(code(.delete("root")), .badRequest)
        XCTAssertEqual(code(.set("a", key: "clips", value: "yes")), .badRequest)
        XCTAssertEqual(code(.set("a", key: "frame", value: [1, 2])), .badRequest)
        XCTAssertEqual(code(.set("a", key: "kind", value: "x")), .badRequest)
        XCTAssertEqual(code(.insert("a", pos: 1, text: ["x"])), .badRequest)
        XCTAssertEqual(code(.remove("a", pos: 0, len: 1)), .badRequest)
    }

    func testMoveIndexIsClampedAndTheClampedIndexIsRecorded() throws {
        var doc = Document()
        _ = try doc.apply([.create(NodeSpec(id: "a", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0),
                           .create(NodeSpec(id: "b", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 1)], limits: limits)
        let applied = try doc.apply([.move("a", parent: "root", index: 99)], limits: limits)
        XCTAssertEqual(doc["root"]!.children, ["b", "a"])
        XCTAssertEqual(applied.ops, [.move("a", parent: "root", index: 1)])
    }

    func testOpsSurviveTheirWireFormExactly() throws {
        for seed in 0..<100 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            let doc = gen.document(ops: 15)
            let op = gen.op(on: doc)
            let text = JSONWriter.string(Op.encodeList([op]))
            XCTAssertEqual(try Op.parseList(try JSONParser.parse(text), limits: .unbounded), [op], text)
        }
    }

    func testTransactionsOverTheOpLimitAreTooLarge() {
        var l = Limits()
        l.maxOpsPerTransaction = 3
        let ops: JSON = .array(Array(repeating: ["op": "delete", "node": "x"], count: 4))
        XCTAssertThrowsError(try Op.parseList(ops, limits: l)) { e in XCTAssertEqual((e as! RewindError).code, .tooLarge) }
    }

    func testWrongFieldTypesAreBadRequests() {
        let cases: [JSON] = [
            ["op": "insert", "node": "t", "pos": "3", "text": "x"],
            ["op": "insert", "node": "t", "pos": -1, "text": "x"],
            ["op": "remove", "node": "t", "pos": 0],
            ["op": "create", "node": "n", "parent": "root", "kind": "view", "frame": [1, 2, 3]],
            ["op": "create", "node": "n", "parent": "root", "kind": 5],
            ["op": "explode", "node": "n"],
            ["node": "n"],
            "not an op",
        ]
        for c in cases {
            XCTAssertThrowsError(try Op.parse(c, limits: Limits()), "\(c)") { e in
                XCTAssertEqual((e as! RewindError).code, .badRequest)
            }
        }
    }
}
