import Foundation
import RewindCore
import RewindStore
import XCTest

/// The server as an operator runs it: as the least-privilege role that
/// `deploy/roles.sql` creates, through every request type the server knows
/// (read from its request table, so a new one cannot be left out), none of
/// them answered `internal`. And that role still cannot change the log.
final class DeployRoleTests: XCTestCase {
    /// The request types of `Sources/RewindServer/RequestTable.swift`.
    func requestTypes() throws -> Set<String> {
        let table = try String(contentsOfFile: TestDatabase.repositoryRoot + "/Sources/RewindServer/RequestTable.swift", encoding: .utf8)
        var names = Set<String>()
        var rest = table[...]
        while let r = rest.range(of: "name: \"") {
            let after = rest[r.upperBound...]
            guard let end = after.firstIndex(of: "\"") else { break }
            names.insert(String(after[..<end]))
            rest = after[end...]
        }
        return names
    }

    func testTheDeployRoleServesEveryRequestTypeAndCannotChangeTheLog() throws {
        let db = try TestDatabase()
        try db.db.execute(script: try String(contentsOfFile: TestDatabase.repositoryRoot + "/deploy/roles.sql", encoding: .utf8))
        let asRole = TestDatabase(reusing: db, conninfo: db.conninfo + " user=rewind_server")
        let secretFile = NSTemporaryDirectory() + "rewind-deploy-secret-\(getpid())"
        try SignedTokenTests.secret.write(toFile: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        // Webhooks: the role takes an endpoint's lease and records its position (schema/022's grants).
        let receiver = try WebhookReceiver()
        _ = try receiver.add(to: db)
        let server = try ServerProcess(database: asRole, arguments: ["--jwt-secret-file", secretFile] + WebhookTests.fast)
        let alice = try Terminal(port: server.port)
        let bob = try Terminal(port: server.port)
        var used = Set<String>()
        var failedInternally: [String] = []
        func req(_ t: Terminal, _ type: String, _ fields: [(String, JSON)] = []) throws -> JSONObject {
            used.insert(type)
            let r = try t.request(type, fields)
            if r.errorCode == "internal" { failedInternally.append("\(type): \(JSONWriter.string(.object(r)))") }
            return r
        }
        XCTAssertTrue(try req(alice, "hello", [("user", "alice"), ("token", .string(db.tokens["alice"]!))]).isOK)
        XCTAssertTrue(try req(bob, "hello", [("user", "bob"), ("token", .string(db.tokens["bob"]!))]).isOK)
        _ = try req(alice, "ping")
        XCTAssertTrue(try req(alice, "create_doc", [("doc", "d"), ("title", "D")]).isOK)
        XCTAssertTrue(try req(alice, "share", [("doc", "d"), ("user", "bob"), ("role", "editor")]).isOK)
        XCTAssertTrue(try req(alice, "open", [("doc", "d")]).isOK)
        XCTAssertTrue(try req(bob, "open", [("doc", "d")]).isOK)
        let create = JSON.obj([("op", "create"), ("node", "t"), ("parent", "root"), ("kind", "text"), ("frame", [0, 0, 100, 20]),
                               ("focusable", true), ("text", "hello")])
        XCTAssertEqual(try req(alice, "submit", [("doc", "d"), ("tx", "t1"), ("base", 0), ("ops", [create])])["version"], 1)
        XCTAssertTrue(try req(alice, "begin_group", [("doc", "d"), ("action", "Rename")]).isOK)
        XCTAssertTrue(try req(alice, "submit", [("doc", "d"), ("tx", "t2"), ("base", 1),
                                                ("ops", [.obj([("op", "insert"), ("node", "t"), ("pos", 5), ("text", "!")])])]).isOK)
        XCTAssertTrue(try req(alice, "set_action", [("doc", "d"), ("action", "Shout")]).isOK)
        XCTAssertTrue(try req(alice, "end_group", [("doc", "d")]).isOK)
        XCTAssertTrue(try req(alice, "undo", [("doc", "d")]).isOK)
        XCTAssertTrue(try req(alice, "redo", [("doc", "d")]).isOK)
        XCTAssertTrue(try req(alice, "set_undo_levels", [("doc", "d"), ("levels", 50)]).isOK)
        XCTAssertTrue(try req(alice, "history", [("doc", "d")]).isOK)
        XCTAssertTrue(try req(alice, "focus", [("doc", "d"), ("node", "t")]).isOK)
        XCTAssertTrue(try req(alice, "select", [("doc", "d"), ("node", "t"), ("start", 1), ("end", 3)]).isOK)
        XCTAssertTrue(try req(alice, "hit_test", [("doc", "d"), ("x", 5), ("y", 5)]).isOK)
        XCTAssertTrue(try req(alice, "validate", [("doc", "d"), ("actions", ["undo", "copy"])]).isOK)
        XCTAssertTrue(try req(alice, "perform", [("doc", "d"), ("action", "copy")]).isOK)
        _ = try req(alice, "gesture", [("doc", "d"), ("gesture", "two_finger_tap")])
        let shake = try req(alice, "motion", [("doc", "d"), ("motion", "shake")])
        if let prompt = shake["prompt"]?.stringValue {
            _ = try req(alice, "respond", [("prompt", .string(prompt)), ("action", "cancel")])
        } else {
            _ = try req(alice, "respond", [("prompt", "nope"), ("action", "cancel")])
        }
        XCTAssertTrue(try req(alice, "blur", [("doc", "d")]).isOK)
        XCTAssertTrue(try req(alice, "scrub", [("doc", "d"), ("progress", 0.5)]).isOK)
        XCTAssertTrue(try req(alice, "scrub_cancel", [("doc", "d")]).isOK)
        XCTAssertTrue(try req(alice, "scrub", [("doc", "d"), ("progress", 0)]).isOK)
        XCTAssertTrue(try req(alice, "scrub_commit", [("doc", "d")]).isOK)
        let peek = try req(alice, "peek", [("doc", "d"), ("version", 1)])
        XCTAssertTrue(peek.isOK)
        XCTAssertTrue(try req(alice, "preview_action", [("preview", peek["preview"] ?? .null), ("action", "open")]).isOK)
        let again = try req(alice, "peek", [("doc", "d")])
        XCTAssertTrue(try req(alice, "pop", [("preview", again["preview"] ?? .null)]).isOK)
        XCTAssertTrue(try req(alice, "clear_history", [("doc", "d")]).isOK)
        let made = try req(alice, "shortcut", [("shortcut", .obj([("type", "new_document")]))])
        XCTAssertTrue(made.isOK, JSONWriter.string(.object(made)))
        XCTAssertTrue(try req(alice, "close", [("doc", "d")]).isOK)
        XCTAssertTrue(try req(alice, "create_doc", [("doc", "gone")]).isOK)
        XCTAssertTrue(try req(alice, "delete_doc", [("doc", "gone")]).isOK)
        // A user's documents (the web editor's home page).
        XCTAssertEqual(try req(alice, "list_deleted")["docs"]?.arrayValue?.count, 1)
        XCTAssertTrue(try req(alice, "undelete_doc", [("doc", "gone")]).isOK)
        XCTAssertTrue(try req(alice, "rename", [("doc", "d"), ("title", "Renamed")]).isOK)
        XCTAssertEqual(try req(alice, "doc_info", [("doc", "d")])["title"], "Renamed")
        let listed = try req(bob, "list_docs")
        XCTAssertEqual(listed["docs"]?.arrayValue?.first?.objectValue?["doc"], "d", JSONWriter.string(.object(listed)))
        // A signed token's user, made on first sight through the one function the role may call; its refresh.
        let app = try Terminal(port: server.port)
        XCTAssertTrue(try req(app, "hello", [("token", .string(try SignedTokenTests.hs256(sub: "app-user")))]).isOK)
        XCTAssertTrue(try req(app, "refresh", [("token", .string(try SignedTokenTests.hs256(sub: "app-user")))]).isOK)
        // The quick actions were read (document_editors): hello lists the document alice edited.
        let later = try Terminal(port: server.port)
        let hello = try later.request("hello", [("user", "alice"), ("token", .string(db.tokens["alice"]!))])
        XCTAssertTrue(JSONWriter.string(hello["shortcuts"] ?? .null).contains("\"doc\":\"d\""), JSONWriter.string(.object(hello)))

        let logged = try WebhookReceiver.logPositions(db)
        let posted = receiver.wait { Set($0.filter(\.delivered).compactMap(\.position)) == Set(logged) }
        XCTAssertEqual(Set(posted.filter(\.delivered).compactMap(\.position)), Set(logged), "webhooks delivered as the deploy role")
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertGreaterThanOrEqual(try WebhookReceiver.listed(db).first?["position"]?.intValue ?? 0, logged.last ?? 1, "and its position recorded")

        XCTAssertEqual(failedInternally, [], "requests the deploy role could not serve")
        XCTAssertEqual(try requestTypes().subtracting(used), [], "request types this test does not exercise yet")
        XCTAssertFalse(server.log.contains("permission denied"), server.log)

        // The role cannot rewrite the log.
        let role = try Database(asRole.conninfo)
        for sql in ["UPDATE log SET ops = '[]' WHERE doc = 'd'", "DELETE FROM log WHERE doc = 'd'", "TRUNCATE log"] {
            XCTAssertThrowsError(try role.query(sql), sql)
        }
        XCTAssertEqual(try db.eventCount("d"), try db.db.query("SELECT head FROM documents WHERE id = 'd'").int(0, 0).map(Int.init))
    }
}

/// A test run leaves no database behind (a run used to leave ~120, about 1 GB).
final class TestHygieneTests: XCTestCase {
    func count(_ name: String) throws -> Int64 {
        try Database("dbname=postgres").query("SELECT count(*) FROM pg_database WHERE datname = $1", [name]).int(0, 0) ?? -1
    }

    func testATestDatabaseIsDroppedWhenTheTestIsDoneWithIt() throws {
        var db: TestDatabase? = try TestDatabase()
        let name = db!.name
        var server: ServerProcess? = try ServerProcess(database: db!)   // holding connections to it
        XCTAssertEqual(try count(name), 1)
        server = nil
        db = nil
        XCTAssertEqual(try count(name), 0, "\(name) is still there")
        _ = server
    }
}
