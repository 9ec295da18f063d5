import XCTest
@testable import RewindCore
import RewindTestSupport

/// The hash chain of the log: SHA-256 itself, an encoding no two rows share,
/// and a replay that refuses a log changed after it was written.
final class LogChainTests: XCTestCase {
    func testSHA256MatchesTheStandardVectors() {
        XCTAssertEqual(Hex.string(SHA256.hash([])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(Hex.string(SHA256.hash(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(Hex.string(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // Fed in pieces that straddle the 64-byte blocks, as a row's fields are.
        var h = SHA256()
        for _ in 0..<1_000 { h.update([UInt8](repeating: UInt8(ascii: "a"), count: 999)); h.update([UInt8(ascii: "a")]) }
        XCTAssertEqual(Hex.string(h.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    private func row(client: String = "c", action: String? = nil, tx: String? = "t", refers: String? = nil) -> LogRow {
        LogRow(doc: "d", seq: 1, version: 1, entry: "event", id: "00000000-0000-4000-8000-000000000000", userID: 1, client: client,
               kind: "edit", group: "g", action: action, tx: tx, txDigest: "x", base: 0, ops: "[]", inverse: "[]", refers: refers,
               meta: nil, time: 0, hash: [])
    }

    /// A field that contains what used to be the separator cannot pass for
    /// two fields, and a null is not an empty string.
    func testNoTwoDifferentRowsHashAlike() {
        let a = row(client: "a\nb", action: nil), b = row(client: "a", action: "b")
        XCTAssertNotEqual(a.chained(after: []), b.chained(after: []))
        XCTAssertNotEqual(row(action: nil).chained(after: []), row(action: "").chained(after: []))
        XCTAssertNotEqual(row(tx: "ab", refers: nil).chained(after: []), row(tx: "a", refers: "b").chained(after: []))
        XCTAssertNotEqual(row().chained(after: []), row().chained(after: SHA256.hash([1])), "the previous hash is part of it")
    }

    /// The hash input is written into one buffer with plain copies; it must
    /// be exactly the encoding the type's comment (and `rewind_entry_hash`)
    /// define, built here the plain way, for any row: nulls, empty and
    /// non-ASCII text, negative numbers, fields far larger than a stack page.
    func testTheHashInputIsTheDocumentedEncoding() {
        func reference(_ r: LogRow, after previous: [UInt8]) -> [UInt8] {
            var input = previous
            func length(_ n: Int) { input += withUnsafeBytes(of: UInt64(bitPattern: Int64(n)).bigEndian, Array.init) }
            func field(_ s: String?) {
                guard let s else { return input += withUnsafeBytes(of: UInt64(bitPattern: -1).bigEndian, Array.init) }
                length(s.utf8.count)
                input += Array(s.utf8)
            }
            for f in [r.doc, String(r.seq), String(r.version), r.entry, r.id, String(r.userID), r.client, r.kind, r.group, r.action,
                      r.tx, r.txDigest, r.base.map(String.init), r.ops, r.inverse, r.refers, r.meta, String(r.time)] as [String?] {
                field(f)
            }
            return SHA256.hash(input)
        }
        var rng = SeededRandom(seed: 26)
        let samples = ["", "a", "é☃︎𝄞", "tab\there", String(repeating: "x", count: 300_000), "00000000-0000-4000-8000-000000000000"]
        func text() -> String { samples[Int(rng.next() % UInt64(samples.count))] }
        func maybe() -> String? { rng.next() % 3 == 0 ? nil : text() }
        func number() -> Int64 { [0, 1, -1, Int64.max, Int64.min, Int64(bitPattern: rng.next())][Int(rng.next() % 6)] }
        for _ in 0..<300 {
            let r = LogRow(doc: text(), seq: number(), version: number(), entry: text(), id: text(), userID: number(), client: text(),
                           kind: text(), group: maybe(), action: maybe(), tx: maybe(), txDigest: maybe(),
                           base: rng.next() % 2 == 0 ? nil : number(), ops: maybe(), inverse: maybe(), refers: maybe(), meta: maybe(),
                           time: number(), hash: [])
            let previous = rng.next() % 4 == 0 ? [] : SHA256.hash([UInt8(truncatingIfNeeded: rng.next())])
            XCTAssertEqual(r.chained(after: previous), reference(r, after: previous))
        }
    }

    /// Entries a ledger seals replay into an identical ledger; change any
    /// stored byte of one (its ops, its action, a mark's group) and replay
    /// names that entry.
    func testReplayRefusesAnEntryChangedAfterItWasWritten() throws {
        var sim = UndoSim()
        try sim.edit(1, [.create(NodeSpec(id: "t", kind: "text", frame: [0, 0, 1, 1]), parent: "root", index: 0)])
        try sim.edit(1, [.insert("t", pos: 0, text: Array("hello".unicodeScalars))], group: "g1")
        sim.mark(.close, 1, group: "g1", action: "Hello")
        try sim.edit(2, [.set("t", key: "color", value: "red")])
        try sim.undo(1, policy: .force)
        var clean = DocumentLedger(doc: "d")
        for e in sim.entries { try clean.replay(e) }
        XCTAssertEqual(clean.document, sim.ledger.document)
        XCTAssertEqual(clean.headHash, sim.ledger.headHash)
        XCTAssertEqual(sim.entries.map(\.seq), Array(1...5))

        func replay(_ entries: [LogEntry]) -> RewindError? {
            var l = DocumentLedger(doc: "d")
            do { for e in entries { try l.replay(e) } } catch { return error }
            return nil
        }
        var forged = sim.entries
        guard case var .event(e) = forged[3] else { return XCTFail() }
        e.ops = [.set("t", key: "color", value: "blue")]
        e.stored.ops = JSONWriter.string(Op.encodeList(e.ops))
        forged[3] = .event(e)
        XCTAssertEqual(replay(forged)?.details?.objectValue?["seq"], 4)
        XCTAssertTrue(replay(forged)?.message.contains("entry 4") ?? false)

        forged = sim.entries
        guard case var .mark(m) = forged[2] else { return XCTFail() }
        m.action = "Goodbye"
        forged[2] = .mark(m)
        XCTAssertEqual(replay(forged)?.details?.objectValue?["seq"], 3, "marks are in the chain too")
    }

    /// The push encoding written straight into bytes is the same JSON as the event's wire form.
    func testAnEventEncodesToTheSameJSONEitherWay() throws {
        for seed in 500..<520 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var sim = UndoSim()
            for i in 0..<30 {
                let op = gen.op(on: sim.doc)
                _ = try? sim.edit(Int64(i % 3 + 1), [op], action: i % 4 == 0 ? "Name \"quoted\"\n" : nil)
                if i % 7 == 0 { _ = try? sim.undo(Int64(i % 3 + 1), policy: .force) }
            }
            for case let .event(e) in sim.entries {
                XCTAssertEqual(try JSONParser.parse(e.wireBytes), e.json, "seed \(seed) version \(e.version)")
            }
        }
    }

    /// A snapshot restores only when the log's hash at its entry is the one it recorded.
    func testASnapshotIsTrustedOnlyAsFarAsTheChainVouchesForIt() throws {
        var sim = UndoSim()
        try sim.edit(1, [.create(NodeSpec(id: "t", kind: "text", frame: [0, 0, 1, 1]), parent: "root", index: 0)])
        try sim.edit(1, [.insert("t", pos: 0, text: Array("x".unicodeScalars))])
        let snapshot = try JSONParser.parse(JSONWriter.string(sim.ledger.snapshotJSON), maxDepth: 64)
        XCTAssertNoThrow(try DocumentLedger(doc: "d", snapshot: snapshot, tail: sim.entries))
        var other = UndoSim()
        try other.edit(1, [.create(NodeSpec(id: "u", kind: "text", frame: [0, 0, 1, 1]), parent: "root", index: 0)])
        try other.edit(1, [.insert("u", pos: 0, text: Array("y".unicodeScalars))])
        XCTAssertThrowsError(try DocumentLedger(doc: "d", snapshot: snapshot, tail: other.entries), "a log that is not the one it was taken from")
    }
}
