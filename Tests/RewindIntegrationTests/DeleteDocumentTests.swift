import Foundation
import RewindCore
import RewindStore
import XCTest

/// `delete_doc` and `rewind admin undelete` (PROTOCOL "Documents", SPEC
/// section 15): hidden at once for everyone on every instance, the id kept,
/// the log untouched, and brought back exactly as it was.
final class DeleteDocumentTests: XCTestCase {
    func testDeletedIsGoneForEveryoneOnEveryInstanceAndUndeleteBringsItBackAsItWas() throws {
        let f = try Fixture(doc: "d", sharedWith: ["bob": "editor", "carol": "viewer"], users: ["alice", "bob", "carol", "dave"])
        let other = try ServerProcess(database: f.db)   // a second instance on the same database
        func on(_ server: ServerProcess, _ user: String) throws -> Terminal {
            let t = try Terminal(port: server.port)
            try t.hello(user, f.db)
            return t
        }
        let create = JSON.obj([("op", "create"), ("node", "t"), ("parent", "root"), ("kind", "text"), ("frame", [0, 0, 100, 20]),
                               ("text", "secret plans")])
        XCTAssertTrue(try f.alice.request("open", [("doc", "d")]).isOK)
        try f.alice.submit("d", tx: "t1", base: 0, [create])
        try f.alice.submit("d", tx: "t2", base: 1, [.obj([("op", "insert"), ("node", "t"), ("pos", 0), ("text", "our ")])])
        let before = try f.alice.request("open", [("doc", "d")])
        let bob = try on(other, "bob"), carol = try on(other, "carol"), dave = try on(other, "dave")
        XCTAssertTrue(try bob.request("open", [("doc", "d")]).isOK)
        XCTAssertTrue(try carol.request("open", [("doc", "d")]).isOK)

        // Only the owner deletes: an editor is forbidden, a stranger finds nothing.
        XCTAssertEqual(try bob.request("delete_doc", [("doc", "d")]).errorCode, "forbidden")
        XCTAssertEqual(try dave.request("delete_doc", [("doc", "d")]).errorCode, "not_found")
        let deleted = try f.alice.request("delete_doc", [("doc", "d")])
        XCTAssertEqual(deleted["ok"], true, JSONWriter.string(.object(deleted)))
        XCTAssertEqual(deleted["deleted"], true)
        XCTAssertEqual(deleted["doc"], "d")

        // Every terminal that had it open, on both instances: `closed` `deleted`.
        for t in [f.alice, bob, carol] {
            let closed = try t.push("closed")
            XCTAssertEqual(closed["doc"], "d")
            XCTAssertEqual(closed["reason"], "deleted")
        }
        // Then it is `not_found` for everyone, with the message of a document that never existed.
        let never = try dave.request("open", [("doc", "never-was")])
        for t in [f.alice, bob, carol, dave, try on(other, "alice")] {
            let r = try t.request("open", [("doc", "d")])
            XCTAssertEqual(r.errorCode, "not_found")
            XCTAssertEqual(r["error"]?.objectValue?["message"]?.stringValue,
                           never["error"]?.objectValue?["message"]?.stringValue?.replacingOccurrences(of: "never-was", with: "d"))
        }
        XCTAssertEqual(try f.alice.request("submit", [("doc", "d"), ("tx", "t3"), ("base", 2), ("ops", [])]).errorCode, "not_found")
        XCTAssertEqual(try f.alice.request("delete_doc", [("doc", "d")]).errorCode, "not_found", "deleted once")
        XCTAssertEqual(try f.alice.request("share", [("doc", "d"), ("user", "dave"), ("role", "editor")]).errorCode, "not_found")
        // The id stays taken; quick actions no longer offer it.
        XCTAssertEqual(try dave.request("create_doc", [("doc", "d")]).errorCode, "conflict")
        let hello = try Terminal(port: f.server.port).request("hello", [("user", "alice"), ("token", .string(f.db.tokens["alice"]!))])
        XCTAssertFalse(JSONWriter.string(hello["shortcuts"] ?? .null).contains("\"doc\":\"d\""), JSONWriter.string(.object(hello)))
        // The log is untouched.
        XCTAssertEqual(try f.db.eventCount("d"), 2)

        let listed = try runAdmin(f.db, ["undelete", "--list"])
        XCTAssertEqual(listed.status, 0, listed.err)
        XCTAssertTrue(listed.out.hasPrefix("d\talice\t"), listed.out)
        let back = try runAdmin(f.db, ["undelete", "d"])
        XCTAssertEqual(back.status, 0, back.err)
        let after = try bob.request("open", [("doc", "d")])
        XCTAssertEqual(after["version"], before["version"])
        XCTAssertEqual(after["state"], before["state"], "every version back, as it was")
        XCTAssertTrue(try carol.request("open", [("doc", "d")]).isOK, "the roles are back too")
        XCTAssertTrue(try f.alice.request("open", [("doc", "d")]).isOK)
        let undo = try f.alice.request("undo", [("doc", "d")])
        XCTAssertEqual(undo["version"], 3, "and alice's undo history: \(JSONWriter.string(.object(undo)))")

        let again = try runAdmin(f.db, ["undelete", "d"])
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.err.contains("d is not deleted"), again.err)
        let unknown = try runAdmin(f.db, ["undelete", "nope"])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.err.contains("no document"), unknown.err)
    }

    func testUndeleteIsRefusedAfterTheRetentionPeriod() throws {
        let f = try Fixture(doc: "d")
        XCTAssertTrue(try f.alice.request("delete_doc", [("doc", "d")]).isOK)
        try f.db.db.query("UPDATE documents SET deleted_at = now() - interval '31 days' WHERE id = 'd'")
        let late = try runAdmin(f.db, ["undelete", "d"])
        XCTAssertEqual(late.status, 1)
        XCTAssertTrue(late.err.contains("deleted more than 30 days ago"), late.err)
        XCTAssertEqual(try runAdmin(f.db, ["undelete", "d", "--deleted-retention-days", "40"]).status, 0)
        XCTAssertTrue(try f.alice.request("open", [("doc", "d")]).isOK)
    }
}
