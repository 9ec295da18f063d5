import RewindCore
import RewindStore
import XCTest

/// `rewind_log` notices (schema 009, per statement since 016, sent by the
/// claims since 026): each document whose head a claim moved is announced
/// once, "<seq> <version> <doc>", when the transaction commits; an UPDATE that
/// moves no head announces nothing. Other instances and `rewind tail` follow
/// the log by them.
final class LogNoticeTests: XCTestCase {
    func testEveryHeadAClaimMovesIsAnnouncedOnceAndNothingElse() throws {
        let db = try TestDatabase()
        let user = try db.db.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0)!
        for d in ["a", "b", "c"] { try db.db.query("INSERT INTO documents (id, owner) VALUES ($1, $2)", [d, String(user)]) }
        let listener = try Database(db.conninfo)
        try listener.listen("rewind_log")
        func notices() throws -> [String] {
            var out: [String] = []
            while let n = try listener.nextNotice(timeoutMs: 300) { if n.channel == "rewind_log" { out.append(n.payload) } }
            return out.sorted()
        }
        func claim(_ expected: [Int], then seq: Int, _ head: Int) -> String {
            let docs = "ARRAY['a', 'b', 'c']", hashes = "ARRAY['\\x', '\\x', '\\x']::bytea[]"
            let to = "ARRAY[\(seq), \(seq), \(seq)]::bigint[]"
            return "SELECT * FROM rewind_claim_heads(\(docs), ARRAY\(expected)::bigint[], \(hashes), \(to), ARRAY[\(head), \(head), \(head)]::bigint[], \(hashes))"
        }

        // One claim of three heads, as a batch's: two moved (c's head is not where the writer thought), two announced.
        XCTAssertEqual(try db.db.query(claim([0, 0, 5], then: 2, 1)).values.map { $0[1] }, ["t", "t", "f"])
        XCTAssertEqual(try notices(), ["2 1 a", "2 1 b"])
        // A title, a deletion: no head moved, nothing announced.
        try db.db.execute(script: "UPDATE documents SET title = 'T' WHERE id IN ('a', 'c')")
        try db.db.execute(script: "UPDATE documents SET deleted_at = now() WHERE id = 'b'")
        XCTAssertEqual(try notices(), [])
        // A claim rolled back: nothing.
        try db.db.execute(script: "BEGIN; \(claim([2, 2, 0], then: 3, 2)); ROLLBACK")
        XCTAssertEqual(try notices(), [])
        // A head moved by hand, outside any claim, is not announced (schema/026).
        try db.db.execute(script: "UPDATE documents SET seq = 9 WHERE id = 'c'")
        XCTAssertEqual(try notices(), [])
    }

    /// A database migrated across 016 announces as before (an instance of an
    /// older release reads the same notices).
    func testTheNoticesAreTheSameBeforeAndAfterMigration016() throws {
        var payloads: [[String]] = []
        for upTo in [15, 16] {
            let db = try TestDatabase(upTo: upTo)
            let user = try db.db.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0)!
            for d in ["x", "y"] { try db.db.query("INSERT INTO documents (id, owner) VALUES ($1, $2)", [d, String(user)]) }
            let listener = try Database(db.conninfo)
            try listener.listen("rewind_log")
            try db.db.execute(script: "UPDATE documents SET seq = 3, head = 2")
            var got: [String] = []
            while let n = try listener.nextNotice(timeoutMs: 300) { got.append(n.payload) }
            payloads.append(got.sorted())
        }
        XCTAssertEqual(payloads[0], ["3 2 x", "3 2 y"])
        XCTAssertEqual(payloads[1], payloads[0])
    }
}
