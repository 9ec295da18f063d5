import RewindCore
@testable import RewindServer
import RewindTestSupport
import XCTest

/// Entries read back from the log are checked against the hash chain
/// wherever they lie: a superuser's edit of an entry below the snapshot a
/// server started from is refused (`internal`), not served (issue 28, 4).
final class TamperBelowSnapshotTests: XCTestCase {
    func set(_ i: Int) -> JSON { .obj([("op", "set"), ("node", "root"), ("key", "k"), ("value", .int(Int64(i)))]) }

    /// 12 events with a snapshot every 5, written by a first instance; then
    /// a second instance starts from the newest snapshot (its tail: the last
    /// few events only).
    func twoInstances() throws -> (first: SteppedServer, second: SteppedServer) {
        let configure: (inout ServerConfig) -> Void = {
            $0.snapshotEvery = 5; $0.snapshotBytesPerEvent = 0
            $0.undoLevels = 2  // no old undo group keeps the tail long
            $0.limits.maxRebaseDistance = 3
        }
        let a = try SteppedServer(configure: configure)
        let alice = try a.terminal("alice")
        XCTAssertTrue(try alice.request("create_doc", [("doc", "d")]).isOK)
        for i in 0..<12 {
            XCTAssertTrue(try alice.request("submit", [("doc", "d"), ("tx", .string("s\(i)")), ("base", .int(Int64(i))), ("ops", [set(i)])]).isOK)
        }
        try a.turn(until: { try a.db.query("SELECT count(*) FROM snapshots WHERE doc = 'd'").int(0, 0) == 2 }, "two snapshots")
        return (a, try SteppedServer(sharing: a, configure: configure))
    }

    func testEntriesBelowTheSnapshotAreCheckedBeforeTheyAreServed() throws {
        let (first, b) = try twoInstances()
        defer { withExtendedLifetime(first) {} }  // the first instance owns the database
        let alice = try b.terminal("alice")
        // Untouched: catch-up from 0 walks the chain below the snapshot and serves every event.
        let all = try alice.request("open", [("doc", "d"), ("since", 0)])
        XCTAssertEqual(all["events"]?.arrayValue?.count, 12, JSONWriter.string(.object(all)))
        XCTAssertEqual(b.document("d")?.anchors.needsWalk, false, "the entries below the snapshot were walked")
        XCTAssertEqual(try alice.request("scrub", [("doc", "d"), ("progress", 0.1)])["state"]?.objectValue?["nodes"]?
            .objectValue?["root"]?.objectValue?["props"], .obj([("k", 0)]))
    }

    func testAnEntryChangedBelowTheSnapshotIsRefusedNotServed() throws {
        let (a, _) = try twoInstances()
        try a.db.execute(script: """
            ALTER TABLE log DISABLE TRIGGER USER;
            UPDATE log SET ops = (SELECT ops FROM log WHERE doc = 'd' AND seq = 2) WHERE doc = 'd' AND seq = 1;
            ALTER TABLE log ENABLE TRIGGER USER;
            """)
        let c = try SteppedServer(sharing: a) { $0.snapshotEvery = 5; $0.snapshotBytesPerEvent = 0; $0.undoLevels = 2; $0.limits.maxRebaseDistance = 3 }
        let alice = try c.terminal("alice")
        // The head (from the snapshot, whose chain to the head holds) is served.
        XCTAssertTrue(try alice.request("open", [("doc", "d")]).isOK)
        // Catch-up from 0 reads entry 1: refused, never served.
        let caughtUp = try alice.request("open", [("doc", "d"), ("since", 0)])
        XCTAssertEqual(caughtUp.errorCode, "internal", JSONWriter.string(.object(caughtUp)))
        XCTAssertTrue(caughtUp["error"]?.objectValue?["message"]?.stringValue?.contains("entry 1") ?? false, JSONWriter.string(.object(caughtUp)))
        XCTAssertNil(caughtUp["events"], "entry 1 (now holding entry 2's sealed ops) is not served")
        // And the document stops for those who had it open, as for other tampering.
        XCTAssertEqual(try alice.push("closed")["reason"], "internal")

        // A scrub (a fresh runtime again) reads the same entries: refused too.
        let again = try c.terminal("alice")
        XCTAssertTrue(try again.request("open", [("doc", "d")]).isOK)
        let scrub = try again.request("scrub", [("doc", "d"), ("progress", 0.1)])
        XCTAssertEqual(scrub.errorCode, "internal", JSONWriter.string(.object(scrub)))
        XCTAssertNil(scrub["state"])
        // A peek of version 1.
        let viewer = try c.terminal("alice")
        let peek = try viewer.request("peek", [("doc", "d"), ("version", 1)])
        XCTAssertEqual(peek.errorCode, "internal", JSONWriter.string(.object(peek)))
    }

    /// Entries above the snapshot, changed and re-sealed so that each hash
    /// matches its row: the chain still does not arrive at the hash this
    /// server checked when it loaded them, so a read of them is refused.
    /// The change is to a column the key does not seal (`client`): sealed
    /// ops moved from another entry would not even open there
    /// (EncryptionTests), and this is about what the chain alone catches.
    func testAResealedEntryAboveTheSnapshotIsRefusedToo() throws {
        let (a, b) = try twoInstances()
        let alice = try b.terminal("alice")
        XCTAssertTrue(try alice.request("open", [("doc", "d")]).isOK)  // b loaded and checked entries up to 12
        try a.db.execute(script: """
            ALTER TABLE log DISABLE TRIGGER USER;
            UPDATE log SET client = 'forged' WHERE doc = 'd' AND seq = 11;
            ALTER TABLE log ENABLE TRIGGER USER;
            """ + resealSQL(doc: "d", from: "11"))
        let other = try b.terminal("alice")
        b.document("d")!.recent = []  // what b holds in memory is not asked for: the log is read
        let r = try other.request("open", [("doc", "d"), ("since", 9)])
        XCTAssertEqual(r.errorCode, "internal", JSONWriter.string(.object(r)))
        XCTAssertNil(r["events"], "entry 11 (now with another client) is not served")
        XCTAssertTrue(r["error"]?.objectValue?["message"]?.stringValue?.contains("does not arrive") ?? false, JSONWriter.string(.object(r)))
    }
}
