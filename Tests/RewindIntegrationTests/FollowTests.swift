import Foundation
import XCTest
@testable import RewindCore
@testable import RewindStore

/// Following the log (PROTOCOL.md, "Following the log"; schema/021): every
/// committed entry by position, none skipped and none twice — over
/// Server-Sent Events (`GET /v1/events`) and `rewind admin follow` — even
/// when two writers commit out of order.
final class FollowTests: XCTestCase {
    func key(_ db: TestDatabase, _ name: String, _ scopes: String...) throws -> String {
        try admin(db, ["api-key", "create", name] + scopes.flatMap { ["--scope", $0] }).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The writer a document's commits go through (EventStore's FNV-1a of the id, modulo the writers).
    func writer(of doc: String, writers: UInt64 = 2) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in doc.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        return h % writers
    }

    func follow(_ port: Int, _ key: String, _ query: String = "", lastEventID: String? = nil) throws -> HTTPTestClient {
        let c = try HTTPTestClient(port: port, key: key)
        c.send(c.requestBytes("GET", "/v1/events" + query, headers: lastEventID.map { ["Last-Event-ID": $0] } ?? [:]))
        let head = try c.response()
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.headers["content-type"], "text/event-stream")
        return c
    }

    func testAWriterThatCommitsLateIsNotSkipped() throws {
        let db = try TestDatabase(users: ["alice"])
        let s = try ServerProcess(database: db, arguments: ["--api", "127.0.0.1:0", "--writers", "2"])
        let k = try key(db, "feed", "events:read", "docs:read")
        // Two documents on different writer connections.
        let a = (0..<50).map { "a\($0)" }.first { writer(of: $0) == 0 }!
        let b = (0..<50).map { "b\($0)" }.first { writer(of: $0) == 1 }!
        let t = try Terminal(port: s.port)
        _ = try t.hello("alice", db)
        for d in [a, b] {
            XCTAssertEqual(try t.request("create_doc", [("doc", .string(d))])["ok"], true)
            XCTAssertEqual(try t.request("open", [("doc", .string(d))])["ok"], true)
        }
        let feed = try follow(try XCTUnwrap(s.apiPort), k)

        // Writer 0's batch for `a` takes its transaction id, then waits on the row the test holds.
        let holder = try Database(db.conninfo)
        try holder.query("BEGIN")
        try holder.query("SELECT 1 FROM documents WHERE id = $1 FOR UPDATE", [a])
        let late = try Terminal(port: s.port)
        _ = try late.hello("alice", db, client: "late")
        late.send(["id": 99, "type": "submit", "doc": .string(a), "tx": "late", "base": 0, "ops": [textNode("t", "late")]])
        Thread.sleep(forTimeInterval: 0.5)
        // Writer 1 commits `b` meanwhile: later transaction id, committed first.
        XCTAssertEqual(try t.submit(b, tx: "early", base: 0, [textNode("t", "early")]), 1)
        let meanwhile = feed.events(1, within: 1.5)
        XCTAssertTrue(meanwhile.isEmpty, "nothing is followable past the transaction still open: \(meanwhile.map(\.data))")

        try holder.query("COMMIT")
        let got = feed.events(2, within: 10)
        XCTAssertEqual(got.map { $0.data["doc"]?.stringValue }, [a, b], "the late commit first: it began first")
        let positions = got.compactMap { $0.id.flatMap { Int64($0) } }
        XCTAssertEqual(positions.count, 2)
        if positions.count == 2 { XCTAssertLessThan(positions[0], positions[1]) }
        XCTAssertEqual(got.map { $0.data["position"]?.intValue }, positions.map { $0 })
        XCTAssertEqual(got.first?.data["ops"]?.arrayValue?.first?.objectValue?["text"], "late", "docs:read: ops opened")
    }

    func testAFollowerResumesByPositionAndSeesEachEntryOnce() throws {
        let db = try TestDatabase(users: ["alice"])
        let s = try ServerProcess(database: db, arguments: ["--api", "127.0.0.1:0"])
        let port = try XCTUnwrap(s.apiPort)
        let withContent = try key(db, "feed", "events:read", "docs:read")
        let eventsOnly = try key(db, "meta", "events:read")
        let noEvents = try key(db, "docs", "docs:read")
        let t = try Terminal(port: s.port)
        _ = try t.hello("alice", db)
        for d in ["acme:1", "acme:2", "globex:1"] {
            XCTAssertEqual(try t.request("create_doc", [("doc", .string(d))])["ok"], true)
            XCTAssertEqual(try t.request("open", [("doc", .string(d))])["ok"], true)
            _ = try t.submit(d, tx: "\(d)-1", base: 0, [textNode("t", d)])
            _ = try t.submit(d, tx: "\(d)-2", base: 1, [["op": "set", "node": "root", "key": "k", "value": 2]])
        }
        let all = try follow(port, withContent).events(6)
        XCTAssertEqual(all.count, 6)
        XCTAssertEqual(Set(all.compactMap { $0.data["doc"]?.stringValue }), ["acme:1", "acme:2", "globex:1"])
        XCTAssertEqual(all.compactMap { $0.id.flatMap { Int64($0) } }, all.compactMap { $0.id.flatMap { Int64($0) } }.sorted())
        XCTAssertNotNil(all[0].data["ops"], "docs:read: content")
        XCTAssertNil(try follow(port, eventsOnly).events(1).first?.data["ops"], "events:read alone: no content")
        let refused = try HTTPTestClient(port: port, key: noEvents).request("GET", "/v1/events")
        XCTAssertEqual(refused.status, 403)

        // Resumed after the third: exactly the other three, then what comes next.
        let third = try XCTUnwrap(all[2].id)
        let resumed = try follow(port, withContent, lastEventID: third)
        XCTAssertEqual(resumed.events(3).map(\.id), all[3...].map(\.id))
        _ = try t.submit("acme:1", tx: "acme:1-3", base: 2, [["op": "set", "node": "root", "key": "k", "value": 3]])
        let next = resumed.events(1)
        XCTAssertEqual(next.first?.data["version"], 3)
        XCTAssertEqual(next.first?.data["user"], "alice")
        // By prefix.
        let acme = try follow(port, withContent, "?doc_prefix=acme:").events(5)
        XCTAssertEqual(acme.count, 5)
        XCTAssertTrue(acme.allSatisfy { $0.data["doc"]?.stringValue?.hasPrefix("acme:") == true })

        // `rewind admin follow`: killed (it stops once caught up) and run again with --after: each entry once.
        let first = try admin(db, "follow", "--caught-up", "--after", "0").split(separator: "\n")
        XCTAssertEqual(first.count, 7)
        let lastSeen = try XCTUnwrap((try JSONParser.parse(String(first.last!))).objectValue?["position"]?.intValue)
        _ = try t.submit("globex:1", tx: "g-3", base: 2, [["op": "set", "node": "root", "key": "k", "value": 3]])
        let rest = try admin(db, "follow", "--caught-up", "--after", String(lastSeen)).split(separator: "\n")
        XCTAssertEqual(rest.count, 1)
        XCTAssertEqual((try JSONParser.parse(String(rest[0]))).objectValue?["doc"], "globex:1")
    }

    /// Several entries of several documents in one transaction: each document's positions grow with its seq
    /// (a follower and a webhook deliver a document's entries in position order).
    func testADocumentsPositionsGrowWithItsSeqInsideOneTransaction() throws {
        let db = try TestDatabase(users: ["alice"])
        let s = try ServerProcess(database: db, arguments: ["--writers", "1"])
        var terminals: [Terminal] = []
        for d in ["p", "q", "r"] {
            let t = try Terminal(port: s.port)
            _ = try t.hello("alice", db, client: "c-\(d)")
            XCTAssertEqual(try t.request("create_doc", [("doc", .string(d))])["ok"], true)
            XCTAssertEqual(try t.request("open", [("doc", .string(d))])["ok"], true)
            terminals.append(t)
        }
        for round in 0..<5 {
            // Each terminal pipelines its submits, all at once: the writer batches them.
            for (i, t) in terminals.enumerated() {
                t.sendRaw((0..<20).flatMap { k -> [UInt8] in
                    let v = Int64(round * 20 + k)
                    return Message.line(["id": .int(1_000 + v), "type": "submit", "doc": .string(["p", "q", "r"][i]), "tx": .string("t\(v)"),
                                         "base": .int(v), "ops": [["op": "set", "node": "root", "key": "k", "value": .int(v)]]])
                })
            }
            for t in terminals {
                var acked = 0
                while acked < 20 { if try t.next()["re"] != nil { acked += 1 } }
            }
        }
        let check = try Database(db.conninfo)
        let shared = try check.query("SELECT count(*) FROM (SELECT position >> 20 FROM log GROUP BY 1 HAVING count(*) > 1) t").int(0, 0) ?? 0
        XCTAssertGreaterThan(shared, 0, "some transaction appended several entries (else this test proves nothing)")
        let mixed = try check.query("SELECT count(*) FROM (SELECT position >> 20 FROM log GROUP BY 1 HAVING count(DISTINCT doc) > 1) t").int(0, 0) ?? 0
        XCTAssertGreaterThan(mixed, 0, "some transaction appended entries of several documents")
        XCTAssertEqual(try check.query("""
            SELECT count(*) FROM log a JOIN log b ON a.doc = b.doc AND a.seq < b.seq AND a.position > b.position
            """).int(0, 0), 0, "a document's positions grow with its seq")
        XCTAssertEqual(try check.query("SELECT count(*) - count(DISTINCT position) FROM log").int(0, 0), 0, "positions are unique")
    }

    /// Each malformed way of asking for the feed is a 400 problem naming what is wrong, on a connection that goes on.
    func testMalformedFollowRequestsAreProblemsNotStreams() throws {
        let db = try TestDatabase(users: ["alice"])
        let s = try ServerProcess(database: db, arguments: ["--api", "127.0.0.1:0"])
        let c = try HTTPTestClient(port: try XCTUnwrap(s.apiPort), key: try key(db, "feed", "events:read"))
        let long = String(repeating: "x", count: 5_000)
        for (path, headers, mentions) in [
            ("/v1/events?after=-1", [String: String](), "after"), ("/v1/events?after=abc", [:], "after"),
            ("/v1/events?after=99999999999999999999", [:], "after"), ("/v1/events?after=1.5", [:], "after"),
            ("/v1/events", ["Last-Event-ID": "x"], "Last-Event-ID"), ("/v1/events", ["Last-Event-ID": "-3"], "Last-Event-ID"),
            ("/v1/events?doc_prefix=\(long)", [:], "doc_prefix"), ("/v1/events?doc_prefix=a%00b", [:], "%00"),
        ] {
            let r = try c.request("GET", path, headers: headers)
            XCTAssertEqual(r.status, 400, "\(path.prefix(60)) \(headers)")
            XCTAssertEqual(r.headers["content-type"], "application/problem+json", path)
            XCTAssertEqual(r.code, "bad_request", path)
            XCTAssertTrue(r.json["detail"]?.stringValue?.contains(mentions) == true, "\(path.prefix(60)): \(r.json)")
        }
        let ok = try c.request("GET", "/v1/docs/none")
        XCTAssertEqual(ok.status, 403, "the connection still answers (a key without docs:read)")
    }

    /// docs/examples/search_index.py, an app backend's search index kept from the feed, run as a backend would run it.
    func testTheExampleSearchIndexFollowsTheLog() throws {
        let db = try TestDatabase(users: ["alice"])
        let s = try ServerProcess(database: db, arguments: ["--api", "127.0.0.1:0"])
        let k = try key(db, "search", "events:read", "docs:read")
        let t = try Terminal(port: s.port)
        _ = try t.hello("alice", db)
        for (d, text) in [("notes/1", "Quarterly plan draft"), ("notes/2", "Plan for the offsite")] {
            XCTAssertEqual(try t.request("create_doc", [("doc", .string(d))])["ok"], true)
            XCTAssertEqual(try t.request("open", [("doc", .string(d))])["ok"], true)
            _ = try t.submit(d, tx: d, base: 0, [textNode("t", text)])
        }
        let run = try runProgram("/usr/bin/python3", [TestDatabase.repositoryRoot + "/docs/examples/search_index.py",
                                                      "http://127.0.0.1:\(try XCTUnwrap(s.apiPort))", k, "--idle", "2"])
        XCTAssertEqual(run.status, 0, run.err)
        let index = try XCTUnwrap((try JSONParser.parse(run.out.trimmingCharacters(in: .whitespacesAndNewlines))).objectValue)
        XCTAssertEqual(index["plan"], ["notes/1", "notes/2"])
        XCTAssertEqual(index["offsite"], ["notes/2"])
        XCTAssertEqual(index["quarterly"], ["notes/1"])
        // The same in Swift (docs/examples/search-index-swift, built as search-index-example).
        let swift = try runProgram(ServerProcess.binDirectory + "/search-index-example",
                                   ["127.0.0.1", String(try XCTUnwrap(s.apiPort)), k, "--idle", "2"])
        XCTAssertEqual(swift.status, 0, swift.err)
        XCTAssertEqual(try JSONParser.parse(swift.out.trimmingCharacters(in: .whitespacesAndNewlines)), .object(index),
                       "the Swift example's index is the Python one's")
    }

    /// A database restored into another cluster meets smaller transaction ids: a server refuses it until
    /// `rewind admin migrate` raises the positions, and then every new entry follows the old ones.
    func testPositionsOfARestoredLogAreRaisedByMigrate() throws {
        let db = try TestDatabase(users: ["alice"])
        try db.db.query("UPDATE log_position_base SET base = 1000000000")  // the old cluster, far ahead
        var s: ServerProcess? = try ServerProcess(database: db)
        let t = try Terminal(port: s!.port)
        _ = try t.hello("alice", db)
        XCTAssertEqual(try t.request("create_doc", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try t.request("open", [("doc", "d")])["ok"], true)
        _ = try t.submit("d", tx: "1", base: 0, [textNode("t", "before")])
        XCTAssertEqual(s!.terminate(), 0)
        s = nil
        let old = try XCTUnwrap(try db.db.query("SELECT max(position) FROM log").int(0, 0))
        try db.db.query("UPDATE log_position_base SET base = 0")  // restored: this cluster's ids are small

        XCTAssertThrowsError(try ServerProcess(database: db), "a server refuses the log until its positions are raised")
        let migrated = try admin(db, "migrate")
        XCTAssertTrue(migrated.contains("positions"), migrated)
        let again = try ServerProcess(database: db)
        let u = try Terminal(port: again.port)
        _ = try u.hello("alice", db)
        XCTAssertEqual(try u.request("open", [("doc", "d")])["ok"], true)
        _ = try u.submit("d", tx: "2", base: 1, [["op": "set", "node": "root", "key": "k", "value": 2]])
        let followed = try admin(db, "follow", "--caught-up", "--after", String(old)).split(separator: "\n")
        XCTAssertEqual(followed.count, 1, "the entry made after the restore follows the old ones")
        XCTAssertEqual((try JSONParser.parse(String(followed[0]))).objectValue?["version"], 2)
    }
}
