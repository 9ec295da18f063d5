import Foundation
import Glibc
import RewindClient
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
        // Made where its placement says: on s3 or `home`, not on the closed s2.
        let last = try catalog.db.query("SELECT doc FROM placements ORDER BY placed_at DESC LIMIT 1")[0, 0]!
        XCTAssertEqual(try (placed == "s3" ? shards.db("s3") : catalog.db).query("SELECT count(*) FROM documents WHERE id = $1", [last]).int(0, 0), 1)
        XCTAssertFalse(try documents(shards.db("s2")).contains(last))
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

    func testAMoveWhileTerminalsEditLosesAndRepeatsNothing() throws {
        let (catalog, shards) = try fleet()
        let a = try ServerProcess(database: catalog), b = try ServerProcess(database: catalog)
        let alice = try Terminal(port: a.port), bob = try Terminal(port: b.port)
        try alice.hello("alice", catalog)
        try bob.hello("bob", catalog)
        XCTAssertEqual(try alice.request("create_doc", [("doc", "a-moving")]).isOK, true)
        try alice.share("a-moving", "bob", "viewer")
        XCTAssertEqual(try alice.request("open", [("doc", "a-moving")]).isOK, true)
        var version = try alice.submit("a-moving", tx: "m-0", base: 0, [textNode("t", "moving")])
        XCTAssertEqual(try bob.request("open", [("doc", "a-moving")]).isOK, true)
        var acked: [String: Int64] = ["m-0": version]
        let mover = try ChildProcess(ServerProcess.binDirectory + "/rewind",
                                     ["admin", "shard", "move", "a-moving", "--to", "s3", "--database", catalog.conninfo])
        var i = 0, closedSeen = 0
        // Alice edits throughout, one submit at a time, as a client written from PROTOCOL.md does:
        // `closed` `moved` → open again with `since`; `unavailable` → the same tx again after a pause.
        while mover.isRunning || i < 20 || acked.count < 40 {
            i += 1
            let tx = "m-\(i)"
            while true {
                let r = try alice.request("submit", [("doc", "a-moving"), ("tx", .string(tx)), ("base", .int(version)),
                                                     ("ops", [["op": "set", "node": "t", "key": "n", "value": .int(Int64(i))]])])
                if r.isOK, let v = r["version"]?.intValue { version = v; acked[tx] = v; break }
                XCTAssertEqual(r.errorCode, "unavailable", JSONWriter.string(.object(r)))
                guard r.errorCode == "unavailable" else { return }
                usleep(20_000)
                if alice.pushes.contains(where: { $0["push"] == "closed" && $0["reason"] == "moved" }) {
                    alice.pushes.removeAll { $0["push"] == "closed" }
                    closedSeen += 1
                }
                let reopened = try alice.request("open", [("doc", "a-moving"), ("since", .int(version))])
                if reopened.isOK { version = reopened["events"]?.arrayValue?.last?.objectValue?["version"]?.intValue ?? version }
            }
            if i > 2_000 { XCTFail("the move did not end"); break }
        }
        XCTAssertEqual(try mover.finish(timeout: 60), 0)
        let moverSaid = mover.readToEnd(timeout: 5).out
        closedSeen += try alice.drainPushes().filter { $0["push"] == "closed" && $0["reason"] == "moved" }.count
        XCTAssertEqual(closedSeen, 1, "alice was told once to open it again (\(moverSaid))")
        // On s3 now, with every acknowledged transaction exactly once; s2's copy purged.
        XCTAssertEqual(try catalog.db.query("SELECT shard, moving_to FROM placements WHERE doc = 'a-moving'").values, [["s3", nil]])
        let txs = try shards.db("s3").query("SELECT tx, version FROM log WHERE doc = 'a-moving' AND entry = 'event' ORDER BY version").values
        XCTAssertEqual(txs.count, acked.count, "no acknowledged edit lost or repeated")
        for r in txs { XCTAssertEqual(acked[r[0]!], Int64(r[1]!), r[0]!) }
        XCTAssertEqual(try shards.db("s2").query("SELECT purged_at IS NOT NULL, moved_to FROM documents WHERE id = 'a-moving'").values, [["t", "s3"]])
        XCTAssertEqual(try shards.db("s2").query("SELECT count(*) FROM document_keys WHERE doc = 'a-moving'").int(0, 0), 0)
        let verified = try runRewind(["admin", "verify", "a-moving", "--database", catalog.conninfo])
        XCTAssertEqual(verified.status, 0, verified.out + verified.err)
        let verifiedSource = try runRewind(["admin", "verify", "--database", shards.conninfos["s2"]!])
        XCTAssertEqual(verifiedSource.status, 0, "the copy left behind verifies as purged: " + verifiedSource.out + verifiedSource.err)

        // Bob, on the other instance, saw every version once, in order, across the move.
        var seen: [Int64] = []
        func take(_ m: JSONObject) {
            for e in m["events"]?.arrayValue ?? [] { if let v = e.objectValue?["version"]?.intValue { seen.append(v) } }
        }
        var sawMoved = false
        let deadline = Date().addingTimeInterval(20)
        while seen.last != version, Date() < deadline {
            let m = try bob.next()
            if m["push"] == "events" { take(m) }
            if m["push"] == "closed", m["reason"] == "moved" {
                sawMoved = true
                while true {
                    let r = try bob.request("open", [("doc", "a-moving"), ("since", .int(seen.last ?? 1))])
                    if r.isOK { take(r); break }
                    XCTAssertEqual(r.errorCode, "unavailable")
                    usleep(20_000)
                }
            }
        }
        XCTAssertTrue(sawMoved)
        XCTAssertEqual(seen, Array(2...version), "gapless, no repeats")
        // And it is served from s3: a new terminal reads it whole.
        let carol = try Terminal(port: b.port)
        try carol.hello("alice", catalog)
        XCTAssertEqual(try carol.request("open", [("doc", "a-moving")])["version"]?.intValue, version)
    }

    func testAMoverStoppedAfterAnyStepResumesOrAbortsWithNothingLost() throws {
        let (catalog, shards) = try fleet()
        let server = try ServerProcess(database: catalog)
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", catalog)
        for (n, step) in ShardMove.Step.allCases.dropLast().enumerated() {
            let doc = "a-step-\(n)"
            XCTAssertEqual(try alice.request("create_doc", [("doc", .string(doc))]).isOK, true)
            XCTAssertEqual(try alice.request("open", [("doc", .string(doc))]).isOK, true)
            var v = try alice.submit(doc, tx: "\(doc)-1", base: 0, [textNode("t", doc)])
            let stopped = try runAdmin(catalog, ["shard", "move", doc, "--to", "s3", "--stop-after", step.rawValue])
            XCTAssertEqual(stopped.status, 9, step.rawValue + stopped.err)
            let open = try Terminal(port: server.port)
            try open.hello("alice", catalog)
            let r = try open.request("open", [("doc", .string(doc))])
            switch step {
            case .copied: XCTAssertTrue(r.isOK, "served from s2 until the fence: \(step)")
            case .flipped: XCTAssertTrue(r.isOK, "served from s3 after the flip")
            default: XCTAssertEqual(r.errorCode, "unavailable", "fenced, not yet flipped: \(step)")
            }
            let abort = step != .flipped && n % 2 == 1
            if abort {
                XCTAssertTrue(try admin(catalog, "shard", "move", doc, "--abort").contains("stays on shard s2"))
                XCTAssertEqual(try shards.db("s3").query("SELECT count(*) FROM documents WHERE id = $1", [doc]).int(0, 0), 0, "the copy dropped")
            } else {
                XCTAssertTrue(try admin(catalog, "shard", "move", doc, "--to", "s3").contains("moved \(doc)"), step.rawValue)
            }
            let home = abort ? "s2" : "s3"
            XCTAssertEqual(try catalog.db.query("SELECT shard FROM placements WHERE doc = $1", [doc])[0, 0], home, step.rawValue)
            XCTAssertEqual(try catalog.db.query("SELECT moving_to FROM placements WHERE doc = $1", [doc])[0, 0], nil)
            // Served where the catalog says, editable, with every entry.
            let after = try Terminal(port: server.port)
            try after.hello("alice", catalog)
            var reopened = try after.request("open", [("doc", .string(doc))])
            for _ in 0..<50 where !reopened.isOK {
                usleep(50_000)
                reopened = try after.request("open", [("doc", .string(doc))])
            }
            XCTAssertEqual(reopened["version"]?.intValue, v, step.rawValue)
            v = try after.submit(doc, tx: "\(doc)-2", base: v, [["op": "set", "node": "t", "key": "k", "value": "after"]])
            XCTAssertEqual(try shards.db(home).query("SELECT count(*) FROM log WHERE doc = $1 AND entry = 'event'", [doc]).int(0, 0), 2, step.rawValue)
            let verified = try runRewind(["admin", "verify", doc, "--database", catalog.conninfo])
            XCTAssertEqual(verified.status, 0, step.rawValue + verified.out + verified.err)
        }
    }

    func testDrainEmptiesAShardAndRebalanceEvensThemOutMovingDocumentsBack() throws {
        let (catalog, shards) = try fleet()
        let server = try ServerProcess(database: catalog)
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", catalog)
        var versions: [String: Int64] = [:]
        for n in 0..<6 {  // all on s2 (`a-`), of different lengths
            let doc = "a-d\(n)"
            XCTAssertEqual(try alice.request("create_doc", [("doc", .string(doc))]).isOK, true)
            var v = try alice.submit(doc, tx: "\(doc)-0", base: 0, [textNode("t", doc)])
            for k in 0..<(n * 4) { v = try alice.submit(doc, tx: "\(doc)-\(k + 1)", base: v, [["op": "set", "node": "t", "key": "k", "value": .int(Int64(k))]]) }
            versions[doc] = v
        }
        XCTAssertEqual(try documents(shards.db("s2")).count, 6)
        let drained = try admin(catalog, "shard", "drain", "s2")
        XCTAssertTrue(drained.contains("plan: 6 move(s)"), drained)
        XCTAssertEqual(try catalog.db.query("SELECT count(*) FROM placements WHERE shard = 's2'").int(0, 0), 0, drained)
        XCTAssertEqual(try catalog.db.query("SELECT state FROM shards WHERE name = 's2'")[0, 0], "draining")
        XCTAssertEqual(try alice.request("create_doc", [("doc", "a-new")]).isOK, true)
        XCTAssertNotEqual(try catalog.db.query("SELECT shard FROM placements WHERE doc = 'a-new'")[0, 0], "s2", "a draining shard takes none")

        // Back to accepting: the rebalance fills it again (documents moving back to where they were).
        try admin(catalog, "shard", "state", "s2", "accepting")
        let planned = try admin(catalog, "shard", "rebalance", "--dry-run")
        XCTAssertTrue(planned.contains("-> s2"), planned)
        let rebalanced = try admin(catalog, "shard", "rebalance")
        XCTAssertGreaterThan(try catalog.db.query("SELECT count(*) FROM placements WHERE shard = 's2'").int(0, 0) ?? 0, 0, rebalanced)
        for (doc, v) in versions {
            let t = try Terminal(port: server.port)
            try t.hello("alice", catalog)
            XCTAssertEqual(try t.request("open", [("doc", .string(doc))])["version"]?.intValue, v, doc)
            let verified = try runRewind(["admin", "verify", doc, "--database", catalog.conninfo])
            XCTAssertEqual(verified.status, 0, doc + verified.out + verified.err)
        }
    }

    func testRewindClientTypesThroughAMoveAndEndsWithTheServersText() throws {
        let (catalog, shards) = try fleet()
        let server = try ServerProcess(database: catalog)
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", catalog)
        XCTAssertEqual(try alice.request("create_doc", [("doc", "b-typed")]).isOK, true)
        _ = try alice.submit("b-typed", tx: "setup", base: 0, [textNode("t", "")])
        let c = RewindClient(host: "127.0.0.1", port: server.port,
                             options: .init(user: "alice", token: catalog.tokens["alice"]!, doc: "b-typed", client: "rc-move"))
        func step() {
            c.tick()
            if var d = c.descriptor, poll(&d, 1, 2) > 0 { c.handle(d.revents) }
            c.flush()
        }
        func run(_ timeout: Double, until done: () -> Bool) throws {
            let deadline = Date().addingTimeInterval(timeout)
            while !done() {
                guard Date() < deadline else { throw TestFailure("not done within \(timeout) s: \(c.session.status)") }
                step()
            }
        }
        try run(15) { c.session.status == .ready }
        let mover = try ChildProcess(ServerProcess.binDirectory + "/rewind",
                                     ["admin", "shard", "move", "b-typed", "--to", "s2", "--database", catalog.conninfo])
        var typed = 0, sawItMove = false
        while mover.isRunning || typed < 150 {
            if c.session.status == .ready, c.session.document.view["t"] != nil {
                let n = c.session.document.view["t"]!.text.count
                try c.session.edit([.insert("t", pos: n, text: Array("x".unicodeScalars))])
                typed += 1
            } else {
                sawItMove = true  // reconnecting: edits wait, as they do for a person typing
            }
            for _ in 0..<3 { step() }
            if typed > 5_000 { break }
        }
        XCTAssertEqual(try mover.finish(timeout: 60), 0)
        try run(20) { c.session.status == .ready && c.session.document.isSettled }
        XCTAssertTrue(sawItMove, "the client was told to open it again")
        XCTAssertEqual(try catalog.db.query("SELECT shard FROM placements WHERE doc = 'b-typed'")[0, 0], "s2")
        let t = try Terminal(port: server.port)
        try t.hello("alice", catalog)
        let onServer = text(try t.request("open", [("doc", "b-typed")])["state"])
        XCTAssertEqual(onServer?.count, typed, "every keystroke committed once")
        XCTAssertEqual(c.session.document.view["t"]?.textString, onServer)
        XCTAssertEqual(try documents(shards.db("s2")), ["b-typed"])
    }

    func testAMoverKilledAtRandomMomentsLeavesTheDocumentWholeAndFinishesWhenRunAgain() throws {
        let (catalog, shards) = try fleet()
        let server = try ServerProcess(database: catalog)
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", catalog)
        XCTAssertEqual(try alice.request("create_doc", [("doc", "a-killed")]).isOK, true)
        var v = try alice.submit("a-killed", tx: "k-0", base: 0, [textNode("t", "k")])
        // Enough entries that a copy takes a while: pipelined, 100 at a time.
        for batch in 0..<20 {
            let lines: [JSON] = (0..<100).map { i in
                .obj([("id", .int(Int64(10_000 + batch * 100 + i))), ("type", "submit"), ("doc", "a-killed"), ("tx", .string("k-\(batch)-\(i)")),
                      ("base", .int(v)), ("ops", [["op": "set", "node": "t", "key": "n", "value": .int(Int64(i))]])])
            }
            let replies = try alice.pipeline(lines)
            v = replies.values.compactMap { $0["version"]?.intValue }.max() ?? v
        }
        XCTAssertEqual(v, 2_001)
        for delayMs in [5, 25, 60, 120] {
            let mover = try ChildProcess(ServerProcess.binDirectory + "/rewind",
                                         ["admin", "shard", "move", "a-killed", "--to", "s3", "--database", catalog.conninfo])
            usleep(UInt32(delayMs * 1_000))
            mover.signal(SIGKILL)
            _ = mover.wait(timeout: 10)
            // Wherever it is now, every acknowledged entry is there once the move ends or is run again.
        }
        let done = try runAdmin(catalog, ["shard", "move", "a-killed", "--to", "s3"])
        XCTAssertTrue(done.status == 0 || done.err.contains("already"), done.out + done.err)
        XCTAssertEqual(try catalog.db.query("SELECT shard, moving_to FROM placements WHERE doc = 'a-killed'").values, [["s3", nil]])
        let t = try Terminal(port: server.port)
        try t.hello("alice", catalog)
        var opened = try t.request("open", [("doc", "a-killed")])
        for _ in 0..<50 where !opened.isOK {
            usleep(50_000)
            opened = try t.request("open", [("doc", "a-killed")])
        }
        XCTAssertEqual(opened["version"]?.intValue, v, JSONWriter.string(.object(opened)))
        let verified = try runRewind(["admin", "verify", "a-killed", "--database", catalog.conninfo])
        XCTAssertEqual(verified.status, 0, verified.out + verified.err)
        _ = try t.submit("a-killed", tx: "k-after", base: v, [["op": "set", "node": "t", "key": "n", "value": "after"]])
        XCTAssertEqual(try shards.db("s3").query("SELECT count(*) FROM log WHERE doc = 'a-killed' AND entry = 'event'").int(0, 0), v + 1)
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
