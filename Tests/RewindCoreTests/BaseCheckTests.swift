import XCTest
@testable import RewindCore

/// Every number of a late transaction is checked against the state it was
/// made on (its `base`) before rebasing moves it (the hostile-client finding:
/// one submit with huge positions, rebased, overflowed and killed the server).
final class BaseCheckTests: XCTestCase {
    func text(_ s: String) -> [Unicode.Scalar] { Array(s.unicodeScalars) }

    func submission(_ tx: String, base: Int64, _ ops: [Op], selection: Selection? = nil) -> DocumentLedger.Submission {
        .init(tx: tx, base: base, ops: ops, action: nil, userID: 1, userName: "u1", client: "c",
              eventID: "e-\(tx)", time: 1_000, selection: selection)
    }

    func textNode(_ id: Key, _ s: String) -> Op {
        var spec = NodeSpec(id: id, kind: "text", frame: [0, 0, 9, 9])
        spec.text = text(s)
        return .create(spec, parent: "root", index: 0)
    }

    /// "hello" at version 1, one scalar removed at version 2.
    func ledger() throws -> DocumentLedger {
        var l = DocumentLedger(doc: "d")
        _ = try l.append(submission("a", base: 0, [textNode("t", "hello")]))
        _ = try l.append(submission("b", base: 1, [.remove("t", pos: 0, len: 1)]))
        return l
    }

    func code(_ body: () throws -> Void) -> ErrorCode? {
        do { try body() } catch let e as RewindError { return e.code } catch { return nil }
        return nil
    }

    /// An op behind the head on a node that was never there is `not_found`,
    /// as at the head (issue 44: it answered `conflict`, "changed by a
    /// concurrent transaction"); on one deleted since its base, `conflict`.
    func testANodeThatNeverExistedIsNotFoundAndOneDeletedSinceIsAConflict() throws {
        var l = try ledger()
        _ = try l.append(submission("v", base: 2, [.create(NodeSpec(id: "v", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0)]))
        _ = try l.append(submission("x", base: 3, [.delete("v")]))  // head 4: v gone since 3
        let set = { (n: Key) in Op.set(n, key: "color", value: "red") }
        XCTAssertEqual(code { _ = try l.append(submission("s1", base: 2, [set("ghost")])) }, .notFound)
        XCTAssertEqual(code { _ = try l.append(submission("s2", base: 2, [.delete("ghost")])) }, .notFound)
        XCTAssertEqual(code { _ = try l.append(submission("s3", base: 2, [.move("ghost", parent: "root", index: 0)])) }, .notFound)
        XCTAssertEqual(code { _ = try l.append(submission("s4", base: 2, [.move("t", parent: "ghost", index: 0)])) }, .notFound)
        XCTAssertEqual(code { _ = try l.append(submission("s5", base: 3, [set("v")])) }, .conflict, "v existed at 3")
        XCTAssertEqual(code { _ = try l.append(submission("s6", base: 3, [.create(NodeSpec(id: "w", kind: "view", frame: [0, 0, 1, 1]), parent: "v", index: 0)])) },
                       .conflict, "its parent existed at 3")
        XCTAssertEqual(code { _ = try l.append(submission("s7", base: 2, [set("v")])) }, .notFound, "v did not exist yet at 2")
        XCTAssertEqual(code { _ = try l.append(submission("s8", base: 4, [set("ghost")])) }, .notFound, "at the head, as before")
        XCTAssertEqual(l.version, 4, "nothing was appended")
    }

    /// The exact submit: huge positions, one version behind.
    func testHugePositionsBehindTheHeadAreBadRequestNotACrash() throws {
        var l = try ledger()
        let huge = 4_611_686_018_427_387_904
        XCTAssertEqual(code { _ = try l.append(submission("c", base: 1, [.remove("t", pos: huge, len: huge)])) }, .badRequest)
        XCTAssertEqual(code { _ = try l.append(submission("d", base: 1, [.insert("t", pos: Int.max, text: text("x"))])) }, .badRequest)
        XCTAssertEqual(code { _ = try l.append(submission("e", base: 1, [.remove("t", pos: 1, len: Int.max)])) }, .badRequest)
        XCTAssertEqual(l.version, 2, "nothing was appended")
        XCTAssertEqual(l.document["t"]!.textString, "ello")
    }

    /// Out of range at base by one: refused, although after the rebase it
    /// would be in range of a longer text.
    func testAPositionIsCheckedAgainstTheTextAtBaseNotAtTheHead() throws {
        var l = DocumentLedger(doc: "d")
        _ = try l.append(submission("a", base: 0, [textNode("t", "abc")]))
        _ = try l.append(submission("b", base: 1, [.insert("t", pos: 0, text: text("XYZ"))]))  // head: "XYZabc"
        XCTAssertEqual(code { _ = try l.append(submission("c", base: 1, [.insert("t", pos: 4, text: text("!"))])) }, .badRequest)
        XCTAssertEqual(code { _ = try l.append(submission("d", base: 1, [.remove("t", pos: 2, len: 2)])) }, .badRequest)
        // In range at base: accepted and moved through the concurrent insert.
        _ = try l.append(submission("e", base: 1, [.insert("t", pos: 3, text: text("!"))]))
        XCTAssertEqual(l.document["t"]!.textString, "XYZabc!")
    }

    /// A node deleted and created again under the same id since `base`: the
    /// position is checked against the text the client saw, not the new one.
    func testANodeRecreatedSinceBaseIsCheckedAsItWasAtBase() throws {
        var l = DocumentLedger(doc: "d")
        _ = try l.append(submission("a", base: 0, [textNode("t", "ab")]))
        _ = try l.append(submission("b", base: 1, [.delete("t")]))
        _ = try l.append(submission("c", base: 2, [textNode("t", "a much longer text")]))
        XCTAssertEqual(code { _ = try l.append(submission("d", base: 1, [.insert("t", pos: 10, text: text("x"))])) }, .badRequest)
        // A node that did not exist at base at all is not_found there.
        _ = try l.append(submission("e", base: 3, [textNode("u", "0123456789")]))
        XCTAssertEqual(code { _ = try l.append(submission("f", base: 3 - 1, [.insert("u", pos: 1, text: text("x"))])) }, .notFound)
    }

    /// Ops earlier in the same transaction count: a node it creates, and text it inserts.
    func testOpsOfTheSameTransactionAreCheckedInOrder() throws {
        var l = try ledger()
        _ = try l.append(submission("c", base: 1, [textNode("n", "xy"), .insert("n", pos: 2, text: text("z")),
                                                   .remove("n", pos: 0, len: 3), .insert("t", pos: 5, text: text("!"))]))
        XCTAssertEqual(l.document["n"]!.textString, "")
        XCTAssertEqual(l.document["t"]!.textString, "ello!")
        XCTAssertEqual(code { _ = try l.append(submission("d", base: 1, [.remove("t", pos: 0, len: 2), .insert("t", pos: 4, text: text("x"))])) },
                       .badRequest)
    }

    func testASelectionIsCheckedAtBase() throws {
        var l = try ledger()
        let past = Selection(node: "t", start: 0, end: 6)
        XCTAssertEqual(code { _ = try l.append(submission("c", base: 1, [.set("root", key: "k", value: 1)], selection: past)) }, .badRequest)
        let huge = Selection(node: "t", start: Int(Int32.max), end: Int(Int32.max))
        XCTAssertEqual(code { _ = try l.append(submission("d", base: 1, [.insert("t", pos: 0, text: text("x"))], selection: huge)) }, .badRequest)
        _ = try l.append(submission("e", base: 1, [.set("root", key: "k", value: 1)], selection: Selection(node: "t", start: 5, end: 5)))
    }

    /// On the wire, a position past the longest text a node can hold is refused while parsing.
    func testThePositionsOfAnOpAreBoundedWhenParsed() throws {
        let limits = Limits()
        func parse(_ o: JSON) -> ErrorCode? { code { _ = try Op.parse(o, limits: limits) } }
        XCTAssertEqual(parse(.obj([("op", "remove"), ("node", "t"), ("pos", .int(4_611_686_018_427_387_904)), ("len", 1)])), .badRequest)
        XCTAssertEqual(parse(.obj([("op", "insert"), ("node", "t"), ("pos", .int(Int64.max)), ("text", "x")])), .badRequest)
        XCTAssertEqual(parse(.obj([("op", "remove"), ("node", "t"), ("pos", 0), ("len", .int(Int64(limits.maxTextPerNode) + 1))])), .badRequest)
        XCTAssertNil(parse(.obj([("op", "remove"), ("node", "t"), ("pos", 0), ("len", .int(Int64(limits.maxTextPerNode)))])))
    }

    /// Property: walking back through the inverses finds every node's text
    /// length (or its absence) at each version of the rebase window.
    func testTextLengthsAtBaseEqualTheStateAtThatVersion() throws {
        for seed in 0..<100 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var l = DocumentLedger(doc: "d")
            var states: [Document] = [l.document]
            for i in 0..<40 {
                let op = gen.op(on: l.document)
                guard (try? l.append(submission("t\(i)", base: l.version, [op]))) != nil else { continue }
                states.append(l.document)
            }
            let ids = Set(states.flatMap { $0.nodes.keys })
            for base in 0...l.version {
                let found = l.textLengths(of: ids, at: base)
                for id in ids {
                    XCTAssertEqual(found[id] ?? nil, states[Int(base)][id]?.text.count, "seed \(seed): \(id) at \(base)")
                }
            }
        }
    }

    /// Property: for random histories and late transactions with random
    /// (often out-of-range) numbers, the ledger either appends or throws —
    /// never traps — and what it appends equals applying the rebased ops to
    /// the head, the check at base never refusing a transaction that was in
    /// range at its base.
    func testLateTransactionsWithRandomNumbersNeverTrapAndInRangeOnesApply() throws {
        for seed in 0..<200 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var l = DocumentLedger(doc: "d")
            var states: [Document] = [l.document]
            for i in 0..<30 {
                let base = max(0, l.version - Int64.random(in: 0...4, using: &gen.rng))
                let atBase = states[Int(base)]
                let made = gen.op(on: atBase)
                let wild = Int.random(in: 0..<4, using: &gen.rng) == 0
                let op: Op
                switch made {
                case let .insert(n, _, t) where wild:
                    op = .insert(n, pos: Int.random(in: 0...Int.max, using: &gen.rng), text: t)
                case let .remove(n, _, _) where wild:
                    op = .remove(n, pos: Int.random(in: 0...20, using: &gen.rng), len: Int.random(in: 0...Int.max, using: &gen.rng))
                default:
                    op = made
                }
                let inRange: Bool = {
                    switch op {
                    case let .insert(n, p, _): return atBase[n].map { p <= $0.text.count } ?? true
                    case let .remove(n, p, len): return atBase[n].map { p <= $0.text.count && len <= $0.text.count - p } ?? true
                    default: return true
                    }
                }()
                do throws(RewindError) {
                    _ = try l.append(submission("t\(i)", base: base, [op]))
                    states.append(l.document)
                } catch let e {
                    if inRange && op.isText && atBase[op.node] != nil {
                        XCTAssertNotEqual(e.code, .badRequest, "seed \(seed): \(op) was in range at base \(base): \(e.message)")
                    }
                }
            }
        }
    }
}
