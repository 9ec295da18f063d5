import XCTest
@testable import RewindCore

final class ChainAnchorsTests: XCTestCase {
    /// A chain of `n` rows, sealed as the server seals them.
    func chain(_ n: Int) -> [LogRow] {
        var rows: [LogRow] = []
        var previous: [UInt8] = []
        for i in 1...n {
            var r = LogRow(doc: "d", seq: Int64(i), version: Int64(i), entry: "event", id: "id\(i)", userID: 1, client: "c", kind: "edit",
                           group: "g\(i)", action: nil, tx: "t\(i)", txDigest: "x", base: Int64(i - 1), ops: "[\(i)]", inverse: "[]",
                           refers: nil, meta: nil, time: 0, hash: [])
            r.hash = r.chained(after: previous)
            previous = r.hash
            rows.append(r)
        }
        return rows
    }

    func anchors(_ rows: [LogRow], from first: Int) -> ChainAnchors {
        var a = ChainAnchors(first: rows[first - 1].seq, hash: rows[first - 1].hash)
        for r in rows[first...] { a.note(seq: r.seq, hash: r.hash) }
        return a
    }

    func testReadsAreWidenedToTheAnchorsAroundThem() throws {
        let rows = chain(1_000)
        var a = anchors(rows, from: 600)
        XCTAssertTrue(a.needsWalk)
        XCTAssertNil(a.before(300), "below the first trusted entry: walk first")
        let found = try ChainAnchors.check(Array(rows[..<600]), from: (0, []), to: a.before(601)!, doc: "d")
        XCTAssertEqual(found.map(\.seq), [256, 512])
        a.walked(found)
        XCTAssertFalse(a.needsWalk)
        XCTAssertEqual(a.before(300)?.seq, 256)
        XCTAssertEqual(a.atOrAfter(300)?.seq, 512)
        XCTAssertEqual(a.before(1)?.seq, 0)
        XCTAssertEqual(a.before(700)?.seq, 512)
        XCTAssertEqual(a.atOrAfter(700)?.seq, 768)
        XCTAssertEqual(a.atOrAfter(900)?.seq, 1_000, "past the last multiple: the head")
        XCTAssertEqual(a.before(1_001)?.seq, 1_000)
        XCTAssertNil(a.atOrAfter(1_001))
        for (lo, hi) in [(1, 5), (250, 260), (599, 601), (990, 1_000)] {
            let start = a.before(Int64(lo))!, end = a.atOrAfter(Int64(hi))!
            XCTAssertNoThrow(try ChainAnchors.check(Array(rows[Int(start.seq)..<Int(end.seq)]), from: start, to: end, doc: "d"))
        }
    }

    /// Changed in place, or changed and re-sealed: either way the check fails.
    func testAChangedEntryIsFoundResealedOrNot() throws {
        let rows = chain(600)
        let a = anchors(rows, from: 1)
        var changed = rows
        changed[299].ops = "[666]"
        let start = a.before(300)!, end = a.atOrAfter(300)!
        XCTAssertThrowsError(try ChainAnchors.check(Array(changed[Int(start.seq)..<Int(end.seq)]), from: start, to: end, doc: "d")) {
            XCTAssertTrue(($0 as! RewindError).message.contains("breaks at entry 300"))
        }
        // Re-sealed from the change on: each row matches its hash, the arrival does not.
        for i in 299..<600 { changed[i].hash = changed[i].chained(after: changed[i - 1].hash) }
        XCTAssertThrowsError(try ChainAnchors.check(Array(changed[Int(start.seq)..<Int(end.seq)]), from: start, to: end, doc: "d")) {
            XCTAssertTrue(($0 as! RewindError).message.contains("does not arrive"))
        }
        // A row missing from the read.
        var gap = Array(rows[Int(start.seq)..<Int(end.seq)])
        gap.remove(at: 10)
        XCTAssertThrowsError(try ChainAnchors.check(gap, from: start, to: end, doc: "d"))
    }
}
