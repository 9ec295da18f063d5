import Foundation
import XCTest
@testable import RewindCore
@testable import RewindStore

/// What a signed token grants (`rewind.docs`) and how an operator takes a
/// token back before its `exp` (`rewind admin token deny`), against real
/// servers and PostgreSQL (PROTOCOL.md, "Identity from the app").
extension SignedTokenTests {
    func token(_ sub: String, docs: [String: String]? = nil, jti: String? = nil, name: String? = nil) throws -> String {
        var c = claims(sub, name: name)
        c.rewind = docs.map { SignedTokenTests.Grants(docs: $0) }
        c.jti = jti
        return try mint(c)
    }

    func refusalReason(_ r: JSONObject) -> String? { r["error"]?.objectValue?["details"]?.objectValue?["reason"]?.stringValue }

    func testGrantsByPatternTheStrongerOfStoredAndGrantedAndCreatingByAnEditorPattern() throws {
        let db = try TestDatabase(users: ["bob"])
        let s = try server(db)
        let bob = try Terminal(port: s.port)
        try bob.hello("bob", db)
        for doc in ["acme:board-1", "acme:board-7", "acme:board-8", "globex:1"] {
            XCTAssertEqual(try bob.request("create_doc", [("doc", .string(doc))])["ok"], true)
        }
        let grants = ["acme:*": "editor", "acme:board-7": "viewer", "acme:board-8": "viewer"]
        let (ann, greeting) = try hello(s.port, try token("ann", docs: grants))
        XCTAssertEqual(greeting["ok"], true, JSONWriter.string(.object(greeting)))
        // `ann` has no stored role anywhere, and is asked to edit by pattern.
        XCTAssertEqual(try ann.request("open", [("doc", "acme:board-1")])["ok"], true)
        XCTAssertGreaterThan(try ann.submit("acme:board-1", tx: "a1", base: 0, [textNode("t", "granted")]), 0)
        XCTAssertEqual(try ann.request("undo", [("doc", "acme:board-1")])["ok"], true)
        // The exact pattern decides board-7: read, not edit.
        XCTAssertEqual(try ann.request("open", [("doc", "acme:board-7")])["ok"], true)
        let viewerEdit = try ann.request("submit", [("doc", "acme:board-7"), ("tx", "a2"), ("base", 0), ("ops", [textNode("t", "x")])])
        XCTAssertEqual(viewerEdit.errorCode, "forbidden")
        // Outside every pattern: as for a document that does not exist. And a grant makes nothing exist.
        XCTAssertEqual(try ann.request("open", [("doc", "globex:1")]).errorCode, "not_found")
        XCTAssertEqual(try ann.request("open", [("doc", "acme:missing")]).errorCode, "not_found")
        // The stronger of stored and granted: bob makes ann an editor of board-8, which her token grants only to view.
        XCTAssertEqual(try bob.request("share", [("doc", "acme:board-8"), ("user", "ann"), ("role", "editor")])["ok"], true)
        XCTAssertEqual(try ann.request("open", [("doc", "acme:board-8")])["ok"], true)
        XCTAssertGreaterThan(try ann.submit("acme:board-8", tx: "a3", base: 0, [textNode("t", "stored editor")]), 0)
        // And a stored viewer granted editor edits (bob shares globex… no: acme:board-1 as viewer; the grant is editor).
        XCTAssertEqual(try bob.request("share", [("doc", "acme:board-1"), ("user", "ann"), ("role", "viewer")])["ok"], true)
        XCTAssertGreaterThan(try ann.submit("acme:board-1", tx: "a4", base: 2, [["op": "set", "node": "root", "key": "k", "value": 1]]), 0)
        // Taking the stored role away leaves the granted one: the terminal keeps the document.
        XCTAssertEqual(try bob.request("share", [("doc", "acme:board-1"), ("user", "ann"), ("role", .null)])["ok"], true)
        XCTAssertEqual(try ann.request("history", [("doc", "acme:board-1")])["ok"], true)
        XCTAssertFalse(ann.pushes.contains { $0["push"] == "closed" && $0["doc"] == "acme:board-1" }, "still granted")
        // Creating: an id an editor pattern matches, and only that.
        XCTAssertEqual(try ann.request("create_doc", [("doc", "acme:new")])["ok"], true)
        XCTAssertEqual(try ann.request("create_doc", [("doc", "globex:2")]).errorCode, "forbidden")
        XCTAssertEqual(try ann.request("create_doc", [("doc", "acme:board-7x")])["ok"], true, "acme:* decides it: editor")
        XCTAssertEqual(try ann.request("create_doc", [("title", "no id")]).errorCode, "forbidden", "an id must be named")
        // A token without grants creates as any user does.
        let (cy, _) = try hello(s.port, try token("cy"))
        XCTAssertEqual(try cy.request("create_doc", [("title", "mine")])["ok"], true)
        XCTAssertEqual(try cy.request("open", [("doc", "acme:board-1")]).errorCode, "not_found")

        // A refresh brings the new token's grants: a document no longer granted is closed, forbidden.
        let narrower = try token("ann", docs: ["acme:board-7": "viewer"])
        XCTAssertEqual(try ann.request("refresh", [("token", .string(narrower))])["ok"], true)
        let closed = try ann.push("closed")
        XCTAssertEqual(closed["doc"], "acme:board-1")
        XCTAssertEqual(closed["reason"], "forbidden")
        XCTAssertEqual(try ann.request("open", [("doc", "acme:board-8")])["ok"], true, "her stored role stays")
        XCTAssertEqual(try ann.request("create_doc", [("doc", "acme:newer")]).errorCode, "forbidden")
    }

    func testADeniedSubjectOrTokenIsRefusedAndItsConnectionsEndOnEveryInstance() throws {
        let db = try TestDatabase(users: ["bob"])
        let one = try server(db), two = try server(db)
        let (ann1, a1) = try hello(one.port, try token("ann"))
        let (ann2, a2) = try hello(two.port, try token("ann"), client: "phone")
        let (cy1, _) = try hello(one.port, try token("cy", jti: "cy-laptop"))
        let (cy2, c2) = try hello(two.port, try token("cy", jti: "cy-phone"), client: "phone")
        for r in [a1, a2, c2] { XCTAssertEqual(r["ok"], true, JSONWriter.string(.object(r))) }
        let bob = try Terminal(port: two.port)
        try bob.hello("bob", db)

        let denied = try admin(db, "token", "deny", "--sub", "ann", "--reason", "left the company")
        XCTAssertTrue(denied.contains("denied every token of sub \"ann\""), denied)
        for t in [ann1, ann2] {
            let bye = try t.push("bye")
            XCTAssertEqual(bye["reason"], "unauthorized")
            XCTAssertEqual(bye["retry"], false)
        }
        let (_, again) = try hello(two.port, try token("ann"))
        XCTAssertEqual(again.errorCode, "unauthorized")
        XCTAssertEqual(refusalReason(again), "denied")

        // One token by its jti: that connection ends, the same user's other token keeps working.
        try admin(db, "token", "deny", "--jti", "cy-laptop")
        XCTAssertEqual(try cy1.push("bye")["reason"], "unauthorized")
        XCTAssertEqual(try cy2.request("ping")["ok"], true)
        XCTAssertEqual(refusalReason(try hello(two.port, try token("cy", jti: "cy-laptop")).1), "denied")
        XCTAssertEqual(try hello(one.port, try token("cy", jti: "cy-tablet")).1["ok"], true)
        // refresh to a denied token is refused too; the session stays on its own.
        let refused = try cy2.request("refresh", [("token", .string(try token("cy", jti: "cy-laptop")))])
        XCTAssertEqual(refusalReason(refused), "denied")
        XCTAssertEqual(try cy2.request("ping")["ok"], true)
        XCTAssertEqual(try bob.request("ping")["ok"], true, "a user of the CLI is untouched")

        // Listed, and lifted: ann's tokens are taken again.
        let listed = try admin(db, "token", "denials", "--json")
        let rows = listed.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)).objectValue }
        XCTAssertEqual(rows.count, 2, listed)
        let annDenial = try XCTUnwrap(rows.first { $0["sub"] == "ann" })
        XCTAssertEqual(annDenial["reason"], "left the company")
        try admin(db, "token", "allow", String(annDenial["id"]?.intValue ?? 0))
        XCTAssertEqual(try hello(one.port, try token("ann")).1["ok"], true)
        // A denial until a time already past denies nothing; bad input is a clear error.
        try admin(db, "token", "deny", "--sub", "dee", "--until", "2020-01-01T00:00:00Z")
        XCTAssertEqual(try hello(one.port, try token("dee")).1["ok"], true)
        let both = try runAdmin(db, ["token", "deny", "--sub", "x", "--jti", "y"])
        XCTAssertNotEqual(both.status, 0)
        XCTAssertTrue(both.err.contains("--sub or --jti"), both.err)
        let badUntil = try runAdmin(db, ["token", "deny", "--sub", "x", "--until", "next tuesday"])
        XCTAssertNotEqual(badUntil.status, 0)
        XCTAssertTrue(badUntil.err.contains("--until"), badUntil.err)
    }

    /// The Swift example app backend of docs/operating.md (docs/examples/app-backend-swift) mints a token the server takes.
    func testTheSwiftExampleAppBackendsTokenLetsItsUserIn() throws {
        let db = try TestDatabase(users: ["bob"])
        let s = try server(db)
        let bob = try Terminal(port: s.port)
        try bob.hello("bob", db)
        XCTAssertEqual(try bob.request("create_doc", [("doc", "acme:plan")])["ok"], true)
        let minted = try runProgram(ServerProcess.binDirectory + "/app-backend-example",
                                    [secretPath, "u-77", "Uma Example", "--docs", "acme:*=editor",
                                     "--issuer", Self.issuer, "--audience", Self.audience])
        XCTAssertEqual(minted.status, 0, minted.err)
        let (uma, r) = try hello(s.port, minted.out.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(r["ok"], true, JSONWriter.string(.object(r)))
        XCTAssertEqual(r["name"], "Uma Example")
        XCTAssertEqual(try uma.request("open", [("doc", "acme:plan")])["ok"], true, "granted by the example's --docs")
    }
}
