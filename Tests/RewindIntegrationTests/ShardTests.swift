import Foundation
import Glibc
import RewindCore
import RewindStore
import XCTest

/// Documents on three PostgreSQL clusters (SPEC section 17, issue 50): the
/// tests' own cluster holds the catalog (and the shard `home`); the two
/// extra clusters `scripts/test` starts (`rewind_start_shard_clusters`) hold
/// `s2` and `s3`.
final class ShardTests: XCTestCase {
    /// A catalog with users alice and bob, shards s2 and s3 added, and the policy `a- -> s2`, `b- -> s3`, least-loaded.
    private func fleet() throws -> (catalog: TestDatabase, shards: ShardDatabases) {
        let catalog = try TestDatabase()
        let shards = try ShardDatabases(named: catalog.name)
        for (name, conninfo) in shards.conninfos { try admin(catalog, "shard", "add", name, "--to", conninfo) }
        let policy = NSTemporaryDirectory() + "rewind-policy-\(catalog.name)"
        try "# by customer\na- -> s2\nb- -> s3\nleast-loaded\n".write(toFile: policy, atomically: true, encoding: .utf8)
        defer { unlink(policy) }
        try admin(catalog, "shard", "policy", "--set", policy)
        return (catalog, shards)
    }

    private func documents(_ db: Database) throws -> [String] {
        try db.query("SELECT id FROM documents ORDER BY id").values.compactMap { $0[0] }
    }

    private func text(_ state: JSON?) -> String? {
        state?.objectValue?["nodes"]?.objectValue?["t"]?.objectValue?["text"]?.stringValue
    }

    func testDocumentsLiveOnTheirShardsAndOneInstanceServesThemAll() throws {
        let (catalog, shards) = try fleet()
        let server = try ServerProcess(database: catalog)
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", catalog)
        for doc in ["a-1", "b-1", "c-1"] { XCTAssertEqual(try alice.request("create_doc", [("doc", .string(doc))]).isOK, true, doc) }
        // Made where the policy says, and nowhere else; each id placed once in the catalog.
        XCTAssertEqual(try documents(shards.db("s2")), ["a-1"])
        XCTAssertEqual(try documents(shards.db("s3")), ["b-1"])
        XCTAssertEqual(try documents(catalog.db), ["c-1"], "least loaded: every shard empty, `home` first by name")
        XCTAssertEqual(try catalog.db.query("SELECT doc || '@' || shard FROM placements ORDER BY doc").values.compactMap { $0[0] },
                       ["a-1@s2", "b-1@s3", "c-1@home"])
        XCTAssertEqual(try alice.request("create_doc", [("doc", "a-1")]).errorCode, "conflict", "an id is taken over all shards")

        // Edits, sharing, undo on each: the log rows land on the document's shard.
        try alice.share("a-1", "bob", "editor")
        let bob = try Terminal(port: server.port)
        try bob.hello("bob", catalog)
        for doc in ["a-1", "b-1", "c-1"] {
            XCTAssertEqual(try alice.request("open", [("doc", .string(doc))]).isOK, true, doc)
            _ = try alice.submit(doc, tx: "t-\(doc)", base: 0, [textNode("t", "hello \(doc)")])
        }
        XCTAssertEqual(try bob.request("open", [("doc", "a-1")]).isOK, true)
        _ = try bob.submit("a-1", tx: "bob-1", base: 1, [["op": "insert", "node": "t", "pos": 0, "text": "bob: "]])
        XCTAssertEqual(try alice.request("undo", [("doc", "b-1")]).isOK, true)
        XCTAssertEqual(try shards.db("s2").query("SELECT count(*) FROM log WHERE doc = 'a-1' AND entry = 'event'").int(0, 0), 2)
        XCTAssertEqual(try shards.db("s3").query("SELECT count(*) FROM log WHERE doc = 'b-1' AND entry = 'event'").int(0, 0), 2)
        XCTAssertEqual(try catalog.db.query("SELECT count(*) FROM log").int(0, 0), 1, "only c-1's edit is in the catalog's log")
        // Bob's account was copied to s2, where he wrote; s3 has only alice.
        XCTAssertEqual(try shards.db("s2").query("SELECT name FROM users ORDER BY name").values.compactMap { $0[0] }, ["alice", "bob"])
        XCTAssertEqual(try shards.db("s3").query("SELECT name FROM users").values.compactMap { $0[0] }, ["alice"])

        // A new terminal (nothing cached) reads each back from its shard.
        let again = try Terminal(port: server.port)
        try again.hello("alice", catalog)
        XCTAssertEqual(text(try again.request("open", [("doc", "a-1")])["state"]), "bob: hello a-1")
        XCTAssertNil(text(try again.request("open", [("doc", "b-1")])["state"]), "undone")
        XCTAssertEqual(text(try again.request("open", [("doc", "c-1")])["state"]), "hello c-1")

        // The home page lists them all, merged newest edit first; paging crosses shards.
        let listed = try again.request("list_docs", [("limit", 2)])
        let first = listed["docs"]?.arrayValue?.compactMap { $0.objectValue?["doc"]?.stringValue } ?? []
        XCTAssertEqual(first, ["a-1", "c-1"], "bob's edit of a-1 came last, then alice's of c-1 \(JSONWriter.string(.object(listed)))")
        XCTAssertNil(listed["unreachable_shards"])
        let rest = try again.request("list_docs", [("limit", 2), ("after", listed["next"] ?? .null)])
        XCTAssertEqual(rest["docs"]?.arrayValue?.compactMap { $0.objectValue?["doc"]?.stringValue }, ["b-1"])
        // Deleted on its shard, listed to be brought back, and brought back.
        XCTAssertEqual(try alice.request("delete_doc", [("doc", "b-1")]).isOK, true)
        XCTAssertEqual(try alice.request("list_deleted")["docs"]?.arrayValue?.first?.objectValue?["doc"], "b-1")
        XCTAssertEqual(try alice.request("undelete_doc", [("doc", "b-1")]).isOK, true)

        // A shard is an ordinary Rewind database: its chain verifies there.
        let verified = try runRewind(["admin", "verify", "--database", shards.conninfos["s2"]!])
        XCTAssertEqual(verified.status, 0, verified.out + verified.err)

        let shardList = try admin(catalog, "shard", "list", "--sample", "0")
        for line in ["home", "s2", "s3"] {
            XCTAssertTrue(shardList.split(separator: "\n").contains { $0.hasPrefix(line) && $0.contains("accepting") && $0.contains(" 1 ") }, shardList)
        }
    }

    func testAnotherInstanceHearsEditsOnAShard() throws {
        let (catalog, shards) = try fleet()
        let a = try ServerProcess(database: catalog), b = try ServerProcess(database: catalog)
        let alice = try Terminal(port: a.port), bob = try Terminal(port: b.port)
        try alice.hello("alice", catalog)
        try bob.hello("bob", catalog)
        XCTAssertEqual(try alice.request("create_doc", [("doc", "b-shared")]).isOK, true)
        try alice.share("b-shared", "bob", "viewer")
        XCTAssertEqual(try alice.request("open", [("doc", "b-shared")]).isOK, true)
        XCTAssertEqual(try bob.request("open", [("doc", "b-shared")]).isOK, true)
        XCTAssertEqual(try documents(shards.db("s3")), ["b-shared"])
        let v = try alice.submit("b-shared", tx: "x1", base: 0, [textNode("t", "from a")])
        let pushed = try bob.push("events")
        XCTAssertEqual(pushed["doc"], "b-shared")
        XCTAssertEqual(pushed["events"]?.arrayValue?.last?.objectValue?["version"]?.intValue, v)
    }

    func testAClosedShardTakesNoNewDocumentsAndItsRuleIsPassedOver() throws {
        let (catalog, shards) = try fleet()
        let server = try ServerProcess(database: catalog)
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", catalog)
        try admin(catalog, "shard", "state", "s2", "closed")
        // Every instance hears the catalog's notice; give it a moment.
        var placed: String?
        for i in 0..<50 {
            XCTAssertEqual(try alice.request("create_doc", [("doc", .string("a-closed-\(i)"))]).isOK, true)
            placed = try catalog.db.query("SELECT shard FROM placements WHERE doc = $1", ["a-closed-\(i)"])[0, 0]
            if placed != "s2" { break }
            usleep(100_000)
        }
        XCTAssertNotEqual(placed, "s2")
        XCTAssertEqual(try admin(catalog, "shard", "state", "s2", "accepting").contains("accepting"), true)
        // A rule must name a shard of the catalog.
        let policy = NSTemporaryDirectory() + "rewind-policy-bad-\(catalog.name)"
        try "x- -> nowhere\n".write(toFile: policy, atomically: true, encoding: .utf8)
        defer { unlink(policy) }
        let refused = try runAdmin(catalog, ["shard", "policy", "--set", policy])
        XCTAssertNotEqual(refused.status, 0, refused.out)
        XCTAssertTrue(refused.err.contains("names no shard"), refused.err)
        XCTAssertTrue(try admin(catalog, "shard", "policy").contains("a- -> s2"), "the policy before stays")
    }

    func testAdminCommandsReachTheDocumentsShardAndErasureReachesEveryShard() throws {
        let (catalog, shards) = try fleet()
        let server = try ServerProcess(database: catalog)
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", catalog)
        for doc in ["a-x", "c-x"] {
            XCTAssertEqual(try alice.request("create_doc", [("doc", .string(doc))]).isOK, true)
            _ = try alice.submit(doc, tx: "\(doc)-1", base: 0, [textNode("t", "in \(doc)")])
        }
        XCTAssertEqual(try documents(shards.db("s2")), ["a-x"])
        // grant and replay go to s2, where a-x is (bob's account copied there first).
        try admin(catalog, "grant", "a-x", "bob", "viewer")
        let bob = try Terminal(port: server.port)
        try bob.hello("bob", catalog)
        XCTAssertEqual(text(try bob.request("open", [("doc", "a-x")])["state"]), "in a-x")
        XCTAssertTrue(try admin(catalog, "replay", "a-x").contains("in a-x"))
        let mixed = try runAdmin(catalog, ["export", "a-x", "c-x"])
        XCTAssertEqual(mixed.status, 2, "usage: one shard at a time")
        XCTAssertTrue(mixed.err.contains("different shards"), mixed.err)

        let erased = try admin(catalog, "user", "erase", "alice", "--wait", "1")
        XCTAssertTrue(erased.contains("shard s2: renamed"), erased)
        let pseudonym = try catalog.db.query("SELECT name FROM users WHERE erased_at IS NOT NULL")[0, 0]
        XCTAssertNotNil(pseudonym)
        XCTAssertEqual(try shards.db("s2").query("SELECT name FROM users WHERE erased_at IS NOT NULL")[0, 0], pseudonym)
        XCTAssertEqual(try shards.db("s2").query("SELECT count(*) FROM users WHERE name = 'alice'").int(0, 0), 0)
    }

    func testAStoppedShardMakesOnlyItsDocumentsUnavailableUntilItIsBack() throws {
        let (catalog, shards) = try fleet()
        let server = try ServerProcess(database: catalog)
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", catalog)
        for doc in ["a-up", "b-down", "c-up"] {
            XCTAssertEqual(try alice.request("create_doc", [("doc", .string(doc))]).isOK, true)
            XCTAssertEqual(try alice.request("open", [("doc", .string(doc))]).isOK, true)
            _ = try alice.submit(doc, tx: "\(doc)-1", base: 0, [textNode("t", doc)])
        }
        XCTAssertEqual(try documents(shards.db("s3")), ["b-down"])
        try ShardDatabases.cluster(3, "stop")
        defer { try? ShardDatabases.cluster(3, "start") }
        // s3's documents: unavailable (the connection notices its loss at the next statement).
        var code: String?
        for i in 0..<100 {
            let r = try alice.request("submit", [("doc", "b-down"), ("tx", .string("b-x\(i)")), ("base", 1),
                                                 ("ops", [["op": "insert", "node": "t", "pos": 0, "text": "x"]])])
            code = r.errorCode
            if code != nil { break }
            usleep(100_000)
        }
        XCTAssertEqual(code, "unavailable")
        // The others: served as before, by the same instance.
        _ = try alice.submit("a-up", tx: "a-up-2", base: 1, [["op": "insert", "node": "t", "pos": 0, "text": "still "]])
        _ = try alice.submit("c-up", tx: "c-up-2", base: 1, [["op": "insert", "node": "t", "pos": 0, "text": "still "]])
        let fresh = try Terminal(port: server.port)
        try fresh.hello("alice", catalog)
        XCTAssertEqual(try fresh.request("open", [("doc", "b-down")]).errorCode, "unavailable")
        let listed = try fresh.request("list_docs")
        XCTAssertEqual(listed["unreachable_shards"], ["s3"], JSONWriter.string(.object(listed)))
        XCTAssertEqual(Set(listed["docs"]?.arrayValue?.compactMap { $0.objectValue?["doc"]?.stringValue } ?? []), ["a-up", "c-up"])
        XCTAssertEqual(try fresh.request("create_doc", [("doc", "b-new")]).isOK, true, "placed on a shard that is up")

        try ShardDatabases.cluster(3, "start")
        // Back by itself: the connections reconnect.
        var reopened = JSONObject()
        for _ in 0..<150 {
            reopened = try fresh.request("open", [("doc", "b-down")])
            if reopened.isOK { break }
            usleep(200_000)
        }
        XCTAssertEqual(reopened.isOK, true, JSONWriter.string(.object(reopened)))
        XCTAssertEqual(text(reopened["state"]), "b-down")
    }
}

/// A database of the same name on each of the tests' extra clusters
/// (REWIND_TEST_SHARD_CLUSTERS), dropped when the test is done.
final class ShardDatabases {
    let conninfos: [String: String]
    private let clusters: [String]
    private let name: String
    private var held: [String: Database] = [:]

    init(named name: String) throws {
        guard let env = ProcessInfo.processInfo.environment["REWIND_TEST_SHARD_CLUSTERS"] else {
            throw XCTSkip("REWIND_TEST_SHARD_CLUSTERS is not set: run the tests with scripts/test, which starts the extra clusters")
        }
        self.name = name
        clusters = env.split(separator: ";").map(String.init)
        var c: [String: String] = [:]
        for (i, cluster) in clusters.enumerated() {
            let admin = try Database(cluster + " dbname=postgres")
            try admin.query("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
            try admin.query("CREATE DATABASE \(name)")
            c["s\(i + 2)"] = cluster + " dbname=\(name)"
        }
        conninfos = c
    }

    func db(_ shard: String) throws -> Database {
        if let d = held[shard] { return d }
        let d = try Database(conninfos[shard]!)
        held[shard] = d
        return d
    }

    deinit {
        held = [:]
        for cluster in clusters { try? Database(cluster + " dbname=postgres").query("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
    }

    /// `scripts/pg ACTION` on extra cluster `n` (stop, start).
    static func cluster(_ n: Int, _ action: String) throws {
        let r = try ChildProcess.run("/usr/bin/env", ["REWIND_PG_FAST=1", "REWIND_PG_SHARD=\(n)", TestDatabase.repositoryRoot + "/scripts/pg", action],
                                     timeout: 120)
        guard r.status == 0 else { throw TestFailure("scripts/pg \(action) of shard cluster \(n): \(r.err)") }
    }
}
