import Foundation
import XCTest
@testable import RewindCore
@testable import RewindStore

/// Webhooks (issue 47; docs/api.md, "Webhooks"): every entry POSTed to a
/// receiver, signed as Standard Webhooks says and verified by the receiver
/// (scripts/lib/webhook_receiver.py), in order per document, through
/// failures, a receiver that hangs or cuts its answer, restarts, and two
/// instances — each entry delivered, and by one instance at a time.
final class WebhookTests: XCTestCase {
    /// Quick enough for a test: a 4 s lease, 1 s posts, retries from 0.2 s.
    static let fast = ["--webhook-lease", "4", "--webhook-timeout", "1", "--webhook-retry-base", "0.2"]

    func addWebhook(_ db: TestDatabase, _ receiver: WebhookReceiver, _ extra: [String] = ["--after", "0"]) throws -> Int64 {
        try receiver.add(to: db, extra)
    }

    func listed(_ db: TestDatabase) throws -> [JSONObject] { try WebhookReceiver.listed(db) }

    func logPositions(_ db: TestDatabase, prefix: String? = nil) throws -> [Int64] { try WebhookReceiver.logPositions(db, prefix: prefix) }

    func assertInOrderPerDocument(_ got: [WebhookReceiver.Request], file: StaticString = #filePath, line: UInt = #line) {
        var last: [String: Int64] = [:]
        var seen = Set<String>()
        for r in got where r.delivered {
            guard let doc = r.doc, let v = r.body["version"]?.intValue else { continue }
            // A post again after a kill -9 (posted, not yet recorded) has the same webhook-id:
            // receivers deduplicate by it (docs/api.md), so order is of first deliveries.
            guard seen.insert(r.id).inserted else { continue }
            XCTAssertGreaterThanOrEqual(v, last[doc] ?? 0, "\(doc): version \(v) delivered after \(last[doc] ?? 0)", file: file, line: line)
            last[doc] = v
        }
    }

    func testDeliveriesAreSignedInOrderThroughFailuresAndRestarts() throws {
        let db = try TestDatabase(users: ["alice"])
        let receiver = try WebhookReceiver()
        let hook = try addWebhook(db, receiver)
        let narrow = try WebhookReceiver()
        _ = try addWebhook(db, narrow, ["--after", "0", "--doc-prefix", "b", "--events", "undo", "--without-ops"])
        var server: ServerProcess? = try ServerProcess(database: db, arguments: Self.fast)
        var t = try Terminal(port: server!.port)
        _ = try t.hello("alice", db)
        for d in ["a", "b"] {
            XCTAssertEqual(try t.request("create_doc", [("doc", .string(d))])["ok"], true)
            XCTAssertEqual(try t.request("open", [("doc", .string(d))])["ok"], true)
        }
        for i in 0..<5 {
            for d in ["a", "b"] { _ = try t.submit(d, tx: "\(d)\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "n", "value": .int(Int64(i))]]) }
        }
        _ = try t.request("undo", [("doc", "b")])
        var expected = try logPositions(db)
        XCTAssertEqual(expected.count, 11)
        var got = receiver.wait { Set($0.filter(\.delivered).compactMap(\.position)) == Set(expected) }
        XCTAssertEqual(got.filter(\.delivered).compactMap(\.position).sorted(), expected, "each entry once")
        XCTAssertTrue(got.allSatisfy(\.verified), "every signature verifies")
        XCTAssertTrue(got.allSatisfy { $0.id == "evt_\($0.position ?? -1)" }, "webhook-id is the entry's position")
        XCTAssertEqual(got.first { $0.doc == "a" }?.body["ops"]?.arrayValue?.first?.objectValue?["key"], "n", "ops opened")
        assertInOrderPerDocument(got)
        // The narrow endpoint: b's undo only, no ops.
        let undo = narrow.wait { $0.contains(where: \.delivered) }
        XCTAssertEqual(undo.filter(\.delivered).map(\.doc), ["b"])
        XCTAssertEqual(undo.first?.body["kind"], "undo")
        XCTAssertNil(undo.first?.body["ops"])

        // The receiver fails: retried, then delivered in order once it is back.
        receiver.control("mode fail")
        for i in 5..<8 { _ = try t.submit("a", tx: "a\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "n", "value": .int(Int64(i))]]) }
        let failing = receiver.wait { $0.filter { $0.answered == "500" }.count >= 3 }
        XCTAssertGreaterThanOrEqual(failing.filter { $0.answered == "500" }.count, 3, "failed posts are tried again")
        XCTAssertEqual(Set(failing.filter { $0.answered == "500" }.compactMap(\.position)).count, 1,
                       "only a's first undelivered entry is tried: the next wait for it")
        var row = try XCTUnwrap(try listed(db).first { $0["id"]?.intValue == hook })
        XCTAssertNotNil(row["last_error"]?.stringValue, "the failure is shown: \(row)")
        receiver.control("mode ok")
        expected = try logPositions(db)
        got = receiver.wait { Set($0.filter(\.delivered).compactMap(\.position)) == Set(expected) }
        XCTAssertEqual(got.filter(\.delivered).compactMap(\.position).sorted(), expected)
        assertInOrderPerDocument(got)

        // A graceful restart: the position is kept, nothing is posted twice, what comes next arrives.
        XCTAssertEqual(server!.terminate(), 0)
        server = nil
        row = try XCTUnwrap(try listed(db).first { $0["id"]?.intValue == hook })
        XCTAssertGreaterThanOrEqual(row["position"]?.intValue ?? 0, expected.last!, "the position stored at shutdown")
        XCTAssertEqual(row["delivered_by"], .null, "the lease let go")
        server = try ServerProcess(database: db, arguments: Self.fast)
        t = try Terminal(port: server!.port)
        _ = try t.hello("alice", db)
        XCTAssertEqual(try t.request("open", [("doc", "a")])["ok"], true)
        _ = try t.submit("a", tx: "a8", base: 8, [["op": "set", "node": "root", "key": "n", "value": 8]])
        expected = try logPositions(db)
        got = receiver.wait { Set($0.filter(\.delivered).compactMap(\.position)) == Set(expected) }
        XCTAssertEqual(got.filter(\.delivered).compactMap(\.position).sorted(), expected, "no entry twice across a restart")

        // Killed: entries committed meanwhile are delivered once another server holds the lease (after it runs out).
        server!.kill9()
        server = try ServerProcess(database: db, arguments: Self.fast)
        t = try Terminal(port: server!.port)
        _ = try t.hello("alice", db)
        XCTAssertEqual(try t.request("open", [("doc", "b")])["ok"], true)
        _ = try t.submit("b", tx: "b-after-kill", base: 6, [["op": "set", "node": "root", "key": "n", "value": 9]])
        expected = try logPositions(db)
        got = receiver.wait(within: 20) { Set($0.filter(\.delivered).compactMap(\.position)) == Set(expected) }
        XCTAssertEqual(Set(got.filter(\.delivered).compactMap(\.position)), Set(expected), "every entry, after a kill -9")
        assertInOrderPerDocument(got)
    }

    func testTwoInstancesNeverBothDeliverAndOneTakesOver() throws {
        let db = try TestDatabase(users: ["alice"])
        let receiver = try WebhookReceiver()
        _ = try addWebhook(db, receiver)
        let one = try ServerProcess(database: db, arguments: Self.fast)
        let two = try ServerProcess(database: db, arguments: Self.fast)
        var terminals: [Terminal] = []
        for (i, s) in [one, two].enumerated() {
            let t = try Terminal(port: s.port)
            _ = try t.hello("alice", db, client: "c\(i)")
            XCTAssertEqual(try t.request("create_doc", [("doc", .string("d\(i)"))])["ok"], true)
            XCTAssertEqual(try t.request("open", [("doc", .string("d\(i)"))])["ok"], true)
            terminals.append(t)
        }
        for v in 0..<20 {
            for (i, t) in terminals.enumerated() {
                _ = try t.submit("d\(i)", tx: "t\(v)", base: Int64(v), [["op": "set", "node": "root", "key": "v", "value": .int(Int64(v))]])
            }
            Thread.sleep(forTimeInterval: 0.05)  // spread over several lease renewals
        }
        var expected = try logPositions(db)
        var got = receiver.wait { Set($0.filter(\.delivered).compactMap(\.position)) == Set(expected) }
        XCTAssertEqual(got.filter(\.delivered).compactMap(\.position).sorted(), expected, "each entry once, though two instances run")
        let owner = try XCTUnwrap(try listed(db).first?["delivered_by"]?.stringValue)
        XCTAssertTrue(owner.contains(":\(one.pid):") || owner.contains(":\(two.pid):"), owner)

        // The instance delivering dies: the other takes over once the lease runs out.
        let (dead, alive, aliveIndex) = owner.contains(":\(one.pid):") ? (one, two, 1) : (two, one, 0)
        dead.kill9()
        _ = alive
        for v in 20..<25 {
            _ = try terminals[aliveIndex].submit("d\(aliveIndex)", tx: "t\(v)", base: Int64(v), [["op": "set", "node": "root", "key": "v", "value": .int(Int64(v))]])
        }
        expected = try logPositions(db)
        got = receiver.wait(within: 20) { Set($0.filter(\.delivered).compactMap(\.position)) == Set(expected) }
        XCTAssertEqual(Set(got.filter(\.delivered).compactMap(\.position)), Set(expected), "the survivor delivered the rest")
        let survivor = try XCTUnwrap(try listed(db).first?["delivered_by"]?.stringValue)
        XCTAssertTrue(survivor.contains(":\(alive.pid):"), survivor)
        assertInOrderPerDocument(got)
    }

    /// Out-of-range delivery settings stop the start with a message naming the option (not a crash on a huge number).
    func testWebhookOptionsOutOfRangeAreRefusedAtStart() throws {
        for (args, mentions) in [(["--webhook-give-up-after", "1e30"], "--webhook-give-up-after"), (["--webhook-retry-base", "0"], "--webhook-retry-base"),
                                 (["--webhook-retry-base", "1e300"], "--webhook-retry-base"), (["--webhook-lease", "5"], "--webhook-lease"),
                                 (["--webhook-concurrency", "0"], "--webhook-concurrency"), (["--webhook-timeout", "-1"], "--webhook-timeout")] {
            let r = try runProgram(ServerProcess.binDirectory + "/rewind-server", ["--listen", "127.0.0.1:0"] + args)
            XCTAssertEqual(r.status, 64, "\(args): \(r.err)")
            XCTAssertTrue(r.err.contains(mentions), "\(args): \(r.err)")
        }
    }

    func testAnEndpointThatKeepsFailingIsDisabledUntilReplayed() throws {
        let db = try TestDatabase(users: ["alice"])
        let receiver = try WebhookReceiver()
        receiver.control("mode fail")
        let hook = try addWebhook(db, receiver)
        let s = try ServerProcess(database: db, arguments: Self.fast + ["--webhook-give-up-after", "2"])
        let t = try Terminal(port: s.port)
        _ = try t.hello("alice", db)
        XCTAssertEqual(try t.request("create_doc", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try t.request("open", [("doc", "d")])["ok"], true)
        _ = try t.submit("d", tx: "one", base: 0, [textNode("t", "one")])
        var row = JSONObject()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            row = try XCTUnwrap(try listed(db).first)
            if row["enabled"] == false { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        XCTAssertEqual(row["enabled"], false, "disabled after failing for the whole retry window: \(row)")
        XCTAssertTrue(row["disabled_reason"]?.stringValue?.contains("HTTP 500") == true, "\(row)")
        XCTAssertLessThan(row["position"]?.intValue ?? .max, try logPositions(db)[0], "the failed entry is still ahead")
        let attempts = receiver.requests.count
        XCTAssertGreaterThanOrEqual(attempts, 3, "retried with backoff before giving up")
        Thread.sleep(forTimeInterval: 1)
        XCTAssertEqual(receiver.requests.count, attempts, "nothing posted once disabled")

        receiver.control("mode ok")
        _ = try admin(db, "webhook", "replay", String(hook))
        let got = receiver.wait { $0.contains(where: \.delivered) }
        XCTAssertEqual(got.filter(\.delivered).compactMap(\.position), try logPositions(db))
        // From a position: everything after it again.
        _ = try admin(db, "webhook", "replay", String(hook), "--from", "0")
        let again = receiver.wait { $0.filter(\.delivered).count >= 2 }
        XCTAssertEqual(again.filter(\.delivered).count, 2, "replayed from 0: the entry once more")
        XCTAssertTrue(again.allSatisfy(\.verified))
    }

    func testAReceiverThatHangsOrCutsItsAnswerCostsCommitsNothing() throws {
        let db = try TestDatabase(users: ["alice"])
        let receiver = try WebhookReceiver()
        receiver.control("mode hang")
        _ = try addWebhook(db, receiver)
        let s = try ServerProcess(database: db, arguments: Self.fast)
        let t = try Terminal(port: s.port)
        _ = try t.hello("alice", db)
        XCTAssertEqual(try t.request("create_doc", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try t.request("open", [("doc", "d")])["ok"], true)
        let started = Date()
        for i in 0..<100 { _ = try t.submit("d", tx: "h\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "n", "value": .int(Int64(i))]]) }
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "100 commits acknowledged while the receiver hangs")
        XCTAssertGreaterThanOrEqual(receiver.wait { $0.count >= 2 }.count, 2, "the hanging post timed out and was tried again")
        var row = try XCTUnwrap(try listed(db).first)
        XCTAssertTrue(row["last_error"]?.stringValue?.lowercased().contains("timeout") == true, "\(row)")

        receiver.control("mode cut")
        let cut = receiver.wait { $0.contains { $0.answered == "cut" } && $0.count >= 4 }
        XCTAssertTrue(cut.contains { $0.answered == "cut" })
        Thread.sleep(forTimeInterval: 1)
        row = try XCTUnwrap(try listed(db).first)
        XCTAssertLessThan(row["position"]?.intValue ?? .max, try logPositions(db)[0], "a cut answer is not a delivery: \(row)")

        receiver.control("mode ok")
        let expected = try logPositions(db)
        let got = receiver.wait(within: 20) { Set($0.filter(\.delivered).compactMap(\.position)) == Set(expected) }
        XCTAssertEqual(got.filter(\.delivered).compactMap(\.position), expected, "all, in order, once it answers")
        XCTAssertEqual(try t.request("ping")["ok"], true, "the server is fine")
    }
}
