import Foundation
import RewindCore
import RewindStore
import XCTest

/// A user's documents as the web editor's home page shows them (PROTOCOL
/// "Documents: lists, titles, bringing back"): `list_docs`, `doc_info`,
/// `rename` and its `renamed` push, `list_deleted`, `undelete_doc`.
final class LibraryTests: XCTestCase {
    let view = JSON.obj([("op", "create"), ("node", "n"), ("parent", "root"), ("kind", "view"), ("frame", [0, 0, 10, 10])])

    func docs(_ r: JSONObject) -> [JSONObject] { (r["docs"]?.arrayValue ?? []).compactMap(\.objectValue) }
    func ids(_ r: JSONObject) -> [String] { docs(r).compactMap { $0["doc"]?.stringValue } }

    func testListDocsShowsOwnedAndSharedNewestEditFirstPagedAndNothingElse() throws {
        let f = try Fixture(doc: "d", sharedWith: [:], users: ["alice", "bob", "carol"])
        let bob = try f.terminal("bob"), carol = try f.terminal("carol")
        XCTAssertTrue(try f.alice.request("create_doc", [("doc", "plans"), ("title", "Plans")]).isOK)
        XCTAssertTrue(try f.alice.request("create_doc", [("doc", "q")]).isOK)
        XCTAssertTrue(try bob.request("create_doc", [("doc", "bobs"), ("title", "Bob's notes")]).isOK)
        try bob.share("bobs", "alice", "viewer")
        XCTAssertTrue(try carol.request("create_doc", [("doc", "carols")]).isOK)   // never shared with alice
        XCTAssertTrue(try f.alice.request("create_doc", [("doc", "doomed")]).isOK)
        XCTAssertTrue(try f.alice.request("delete_doc", [("doc", "doomed")]).isOK)
        // Edits date the documents: plans by alice, then bobs by bob (the newest).
        XCTAssertTrue(try f.alice.request("open", [("doc", "plans")]).isOK)
        try f.alice.submit("plans", tx: "p1", base: 0, [view])
        Thread.sleep(forTimeInterval: 0.01)
        XCTAssertTrue(try bob.request("open", [("doc", "bobs")]).isOK)
        try bob.submit("bobs", tx: "b1", base: 0, [view])

        let all = try f.alice.request("list_docs")
        XCTAssertTrue(all.isOK, JSONWriter.string(.object(all)))
        // Never edited: by creation, newest first (q after d).
        XCTAssertEqual(ids(all), ["bobs", "plans", "q", "d"], JSONWriter.string(.object(all)))
        XCTAssertNil(all["next"], "one page holds them all")
        let byID = Dictionary(uniqueKeysWithValues: docs(all).map { ($0["doc"]!.stringValue!, $0) })
        XCTAssertEqual(byID["bobs"]?["role"], "viewer")
        XCTAssertEqual(byID["bobs"]?["owner"], "bob")
        XCTAssertEqual(byID["bobs"]?["title"], "Bob's notes")
        XCTAssertEqual(byID["bobs"]?["last_editor"]?.objectValue?["user"], "bob")
        XCTAssertEqual(byID["plans"]?["role"], "owner")
        XCTAssertEqual(byID["plans"]?["last_editor"]?.objectValue?["user"], "alice")
        XCTAssertEqual(byID["q"]?["title"], .null)
        XCTAssertEqual(byID["q"]?["last_editor"], .null)
        XCTAssertTrue(byID["q"]?["edited"]?.stringValue?.hasSuffix("Z") == true)

        // Pages of two: the cursor resumes exactly after the last one shown.
        let first = try f.alice.request("list_docs", [("limit", 2)])
        XCTAssertEqual(ids(first), ["bobs", "plans"])
        let next = try XCTUnwrap(first["next"])
        let second = try f.alice.request("list_docs", [("limit", 2), ("after", next)])
        XCTAssertEqual(ids(second), ["q", "d"])
        XCTAssertNil(second["next"], "no page after the last")
        XCTAssertEqual(try f.alice.request("list_docs", [("after", "not a cursor")]).errorCode, "bad_request")
        XCTAssertEqual(try f.alice.request("list_docs", [("limit", 0)]).errorCode, "bad_request")
        XCTAssertEqual(try f.alice.request("list_docs", [("limit", 201)]).errorCode, "bad_request")

        // Losing a role takes the document off the list; a user with nothing has an empty one.
        try bob.share("bobs", "alice", nil)
        XCTAssertEqual(ids(try f.alice.request("list_docs")), ["plans", "q", "d"])
        XCTAssertEqual(ids(try carol.request("list_docs")), ["carols"])
        let fresh = try TestDatabase(users: ["nobody"])
        let server = try ServerProcess(database: fresh)
        let nobody = try Terminal(port: server.port)
        try nobody.hello("nobody", fresh)
        XCTAssertEqual(try nobody.request("list_docs")["docs"], [])
    }

    func testRenameReachesEveryTerminalWithTheDocumentOpenOnEveryInstance() throws {
        let f = try Fixture(doc: "d", sharedWith: ["bob": "editor", "carol": "viewer"], users: ["alice", "bob", "carol", "dave"])
        let other = try ServerProcess(database: f.db)
        let bob = try Terminal(port: other.port)
        try bob.hello("bob", f.db)
        let carol = try f.terminal("carol"), dave = try f.terminal("dave")
        XCTAssertTrue(try bob.request("open", [("doc", "d")]).isOK)
        XCTAssertTrue(try carol.request("open", [("doc", "d")]).isOK)

        let renamed = try bob.request("rename", [("doc", "d"), ("title", "Roadmap 2027")])
        XCTAssertEqual(renamed["title"], "Roadmap 2027", JSONWriter.string(.object(renamed)))
        for t in [bob, carol] as [Terminal] {
            let p = try t.push("renamed")
            XCTAssertEqual(p["doc"], "d")
            XCTAssertEqual(p["title"], "Roadmap 2027")
        }
        XCTAssertEqual(try f.alice.request("doc_info", [("doc", "d")])["title"], "Roadmap 2027")
        XCTAssertEqual(docs(try carol.request("list_docs")).first?["title"], "Roadmap 2027")

        // A viewer may not; a stranger finds nothing; a title is a bounded string.
        XCTAssertEqual(try carol.request("rename", [("doc", "d"), ("title", "Mine")]).errorCode, "forbidden")
        XCTAssertEqual(try dave.request("rename", [("doc", "d"), ("title", "Mine")]).errorCode, "not_found")
        XCTAssertEqual(try bob.request("rename", [("doc", "d"), ("title", .string(String(repeating: "x", count: 1025)))]).errorCode,
                       "too_large")
        XCTAssertEqual(try bob.request("rename", [("doc", "d"), ("title", 7)]).errorCode, "bad_request")
        XCTAssertEqual(try bob.request("rename", [("doc", "d")]).errorCode, "bad_request")
        // "" (or null) removes it.
        XCTAssertTrue(try f.alice.request("rename", [("doc", "d"), ("title", "")]).isOK)
        XCTAssertEqual(try carol.push("renamed")["title"], .null)
        XCTAssertEqual(try dave.request("doc_info", [("doc", "d")]).errorCode, "not_found")
    }

    func testDocInfoShowsMembersToTheOwnerOnly() throws {
        let f = try Fixture(doc: "d", sharedWith: ["bob": "editor", "carol": "viewer"], users: ["alice", "bob", "carol"])
        try f.alice.submit("d", tx: "t1", base: 0, [view])
        let owner = try f.alice.request("doc_info", [("doc", "d")])
        XCTAssertEqual(owner["owner"], "alice")
        XCTAssertEqual(owner["role"], "owner")
        XCTAssertEqual(owner["version"], 1)
        XCTAssertEqual(owner["members"], [["user": "bob", "role": "editor"], ["user": "carol", "role": "viewer"]])
        let viewer = try f.terminal("carol").request("doc_info", [("doc", "d")])
        XCTAssertEqual(viewer["role"], "viewer")
        XCTAssertNil(viewer["members"], "who else has it is the owner's to see")
    }

    func testTheOwnerBringsBackWhatTheyDeletedWithinTheRetention() throws {
        let f = try Fixture(doc: "d", sharedWith: ["bob": "editor"], users: ["alice", "bob"])
        let bob = try f.terminal("bob")
        try f.alice.submit("d", tx: "t1", base: 0, [view])
        XCTAssertTrue(try f.alice.request("create_doc", [("doc", "old"), ("title", "Old")]).isOK)
        XCTAssertTrue(try f.alice.request("delete_doc", [("doc", "old")]).isOK)
        XCTAssertTrue(try f.alice.request("delete_doc", [("doc", "d")]).isOK)
        try f.db.db.query("UPDATE documents SET deleted_at = now() - interval '31 days' WHERE id = 'old'")

        let deleted = try f.alice.request("list_deleted")
        XCTAssertEqual(ids(deleted), ["d"], "past the retention (30 days) it is not offered: \(JSONWriter.string(.object(deleted)))")
        let row = try XCTUnwrap(docs(deleted).first)
        XCTAssertNotNil(row["deleted"]?.stringValue)
        XCTAssertGreaterThan(row["restorable_until"]?.stringValue ?? "", row["deleted"]?.stringValue ?? "~")
        XCTAssertEqual(try bob.request("list_deleted")["docs"], [], "only the owner's")

        XCTAssertEqual(try bob.request("undelete_doc", [("doc", "d")]).errorCode, "not_found", "an editor cannot")
        let back = try f.alice.request("undelete_doc", [("doc", "d")])
        XCTAssertEqual(back["deleted"], false, JSONWriter.string(.object(back)))
        XCTAssertEqual(try bob.request("open", [("doc", "d")])["version"], 1, "back for everyone with a role, as it was")
        XCTAssertEqual(try f.alice.request("undelete_doc", [("doc", "d")]).errorCode, "conflict")
        XCTAssertEqual(try f.alice.request("undelete_doc", [("doc", "old")]).errorCode, "conflict")
        XCTAssertEqual(try f.alice.request("undelete_doc", [("doc", "never")]).errorCode, "not_found")
        XCTAssertEqual(try f.alice.request("list_deleted")["docs"], [])
    }
}
