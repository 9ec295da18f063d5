import Foundation
import Glibc
import RewindCore
import RewindStore
import XCTest

/// PostgreSQL failing over under a running server ([SPEC](docs/spec.md)
/// section 16): a durable primary and a streaming standby on this machine
/// (`scripts/pg-pair`), the server given both hosts (`target_session_attrs=
/// read-write`), terminals writing and watching while the primary is cut off
/// as by a power failure and the standby promoted.
final class FailoverTests: XCTestCase {
    /// A primary (a) and a standby (b), made for one test and removed after it.
    final class Pair {
        let dir: String
        let ports: (a: Int, b: Int)
        let conninfo: String

        init(_ mode: String) throws {
            dir = "/tmp/rwp-\(getpid())-\(UInt32.random(in: 0..<1_000_000))"
            // Ports the kernel says are free now (a fixed range would meet clients' ephemeral ports);
            // taken again if one is gone by the time PostgreSQL binds it.
            var tries = 0
            while true {
                let p = (try Self.freePort(), try Self.freePort())
                if p.0 == p.1 { continue }
                do {
                    conninfo = try Self.script(["create", dir, String(p.0), String(p.1), mode]).trimmingCharacters(in: .whitespacesAndNewlines)
                    ports = p
                    break
                } catch {
                    tries += 1
                    _ = try? Self.script(["destroy", dir])
                    if tries == 3 { throw error }
                }
            }
        }

        static func freePort() throws -> Int {
            let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(s) }
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, len) == 0 && getsockname(s, $0, &len) == 0 }
            }
            guard ok else { throw TestFailure("no free port") }
            return Int(UInt16(bigEndian: a.sin_port))
        }

        /// One node alone (no failover between hosts).
        func node(_ port: Int) throws -> Database { try Database("host=\(dir)/sock port=\(port) dbname=postgres user=rewind") }

        /// The hosts in the other order: the standby first.
        var standbyFirst: String {
            conninfo.replacingOccurrences(of: "port=\(ports.a),\(ports.b)", with: "port=\(ports.b),\(ports.a)")
        }

        func run(_ args: String...) throws { _ = try Self.script(args.first.map { [$0, dir] + args.dropFirst() } ?? []) }

        @discardableResult
        static func script(_ args: [String]) throws -> String {
            let r = try runProgram(TestDatabase.repositoryRoot + "/scripts/pg-pair", args)
            guard r.status == 0 else { throw TestFailure("scripts/pg-pair \(args.joined(separator: " ")): \(r.err)") }
            return r.out
        }

        deinit { _ = try? Self.script(["destroy", dir]) }
    }

    /// The database of a pair: schema, alice and bob, document `f` shared with bob.
    private func prepare(_ pair: Pair) throws -> [String: String] {
        let migrate = try runRewind(["admin", "migrate", "--database", pair.conninfo])
        guard migrate.status == 0 else { throw TestFailure("migrate: \(migrate.err)") }
        var tokens: [String: String] = [:]
        for user in ["alice", "bob"] {
            let r = try runRewind(["admin", "user", "add", user, "--database", pair.conninfo])
            guard r.status == 0 else { throw TestFailure("user add: \(r.err)") }
            tokens[user] = r.out.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return tokens
    }

    private func startServer(_ conninfo: String, _ more: [String] = []) throws -> ServerProcess {
        // The harness's database is only a holder here: the server is given the pair.
        try ServerProcess(database: TestDatabase(), arguments: ["--database", conninfo, "--db-timeout", "5"] + more)
    }

    /// A terminal that comes back: hello and open again after a drop, and
    /// `open since` the last version it saw (as every client must).
    final class Client {
        let port: Int, user: String, token: String, doc: String
        var t: Terminal?
        var seen: [Int64] = []
        var reconnects = 0

        init(port: Int, user: String, token: String, doc: String) {
            (self.port, self.user, self.token, self.doc) = (port, user, token, doc)
        }

        func terminal() throws -> Terminal {
            if let t { return t }
            let deadline = Date().addingTimeInterval(60)
            while true {
                do {
                    let t = try Terminal(port: port, timeout: 15)
                    let h = try t.request("hello", [("user", .string(user)), ("token", .string(token)), ("client", .string("\(user)-\(port)"))])
                    guard h["ok"] == true else { throw TestFailure("hello: \(JSONWriter.string(.object(h)))") }
                    var fields: [(String, JSON)] = [("doc", .string(doc))]
                    if let last = seen.last { fields.append(("since", .int(last))) }
                    let o = try t.request("open", fields)
                    guard o["ok"] == true else { throw TestFailure("open: \(JSONWriter.string(.object(o)))") }
                    for e in o["events"]?.arrayValue ?? [] { note(e) }
                    if seen.isEmpty, let v = o["version"]?.intValue, v > 0 { seen = [v] }  // opened with a state: start there
                    self.t = t
                    return t
                } catch {
                    if Date() > deadline { throw error }
                    usleep(100_000)
                }
            }
        }

        func note(_ event: JSON) {
            if let v = event.objectValue?["version"]?.intValue { seen.append(v) }
        }

        func drop() { t = nil; reconnects += 1 }

        /// Reads pushes until version `v` has been seen (reconnecting if dropped).
        func watch(until v: Int64, seconds: Double = 30) throws {
            let deadline = Date().addingTimeInterval(seconds)
            while (seen.last ?? 0) < v {
                guard Date() < deadline else { throw TestFailure("\(user) saw up to \(seen.last ?? 0), not \(v)") }
                do {
                    let t = try terminal()
                    for p in t.pushes where p["push"] == "events" { for e in p["events"]?.arrayValue ?? [] { note(e) } }
                    t.pushes.removeAll()
                    if (seen.last ?? 0) >= v { break }
                    let p = try t.push("events")
                    for e in p["events"]?.arrayValue ?? [] { note(e) }
                } catch { drop() }
            }
        }
    }

    /// Submits `count` single-op transactions one after the other, each with
    /// its own `tx`, sending the same `tx` again after `unavailable` or a
    /// dropped connection. `before(i)` runs before the i-th.
    private func write(_ w: Client, count: Int, from first: Int = 0, before: (Int) throws -> Void = { _ in })
        throws -> [(tx: String, version: Int64, at: Date)]
    {
        var acks: [(tx: String, version: Int64, at: Date)] = []
        var base = w.seen.last ?? 0
        for i in first..<(first + count) {
            try before(i)
            let tx = "w\(i)"
            let deadline = Date().addingTimeInterval(60)
            while true {
                guard Date() < deadline else { throw TestFailure("\(tx) not acknowledged within 60 s") }
                do {
                    let t = try w.terminal()
                    t.pushes.removeAll()
                    let r = try t.request("submit", [("doc", .string(w.doc)), ("tx", .string(tx)), ("base", .int(base)),
                                                     ("ops", [["op": "set", "node": "root", "key": "k", "value": .int(Int64(i))]])])
                    if r["ok"] == true, let v = r["version"]?.intValue {
                        acks.append((tx, v, Date()))
                        base = v
                        break
                    }
                    let code = r["error"]?.objectValue?["code"]?.stringValue
                    guard code == "unavailable" || code == "conflict" else { throw TestFailure("\(tx): \(JSONWriter.string(.object(r)))") }
                    if code == "conflict", let head = r["error"]?.objectValue?["details"]?.objectValue?["head"]?.intValue { base = head }
                    usleep(50_000)
                } catch let e as TestFailure where e.description.contains("not acknowledged") || e.description.hasPrefix("w") {
                    throw e
                } catch {
                    w.drop()
                }
            }
        }
        return acks
    }

    private func loggedTx(_ conninfo: String, doc: String) throws -> Set<String> {
        let db = try Database(conninfo)
        return Set(try db.query("SELECT tx FROM log WHERE doc = $1 AND entry = 'event'", [doc]).values.compactMap { $0[0] })
    }

    private func setUpDocument(_ server: ServerProcess, _ tokens: [String: String]) throws -> (writer: Client, watcher: Client) {
        let owner = try Terminal(port: server.port)
        XCTAssertEqual(try owner.request("hello", [("user", "alice"), ("token", .string(tokens["alice"]!))])["ok"], true)
        XCTAssertEqual(try owner.request("create_doc", [("doc", "f")])["ok"], true)
        try owner.share("f", "bob")
        let writer = Client(port: server.port, user: "alice", token: tokens["alice"]!, doc: "f")
        let watcher = Client(port: server.port, user: "bob", token: tokens["bob"]!, doc: "f")
        _ = try writer.terminal()
        _ = try watcher.terminal()
        return (writer, watcher)
    }

    /// Synchronous replication: the primary is cut off after 100 of 300
    /// transactions and the standby promoted. Every transaction is
    /// acknowledged exactly once, every acknowledged one is in the new
    /// primary's log, and a watching terminal sees versions 1…300 once each,
    /// in order.
    func testSynchronousStandbyPromotedLosesNothingAndWatchersStayGapless() throws {
        let pair = try Pair("sync")
        let tokens = try prepare(pair)
        let server = try startServer(pair.conninfo, ["--metrics", "127.0.0.1:0"])
        let http = try XCTUnwrap(server.metricsPort)
        let (writer, watcher) = try setUpDocument(server, tokens)
        var cut = Date()
        let acks = try write(writer, count: 300) { i in
            guard i == 100 else { return }
            try watcher.watch(until: 100)
            cut = Date()
            try pair.run("crash", "a")
            // No primary: the health check says so (a balancer takes the instance out).
            try waitUntil("/health is 503 without a primary", seconds: 15) { try HTTP.get(port: http, "/health").status == 503 }
            XCTAssertTrue(try HTTP.get(port: http, "/health").body.hasPrefix("database unreachable: "))
            try pair.run("promote", "b")
        }
        try waitUntil("/health is 200 again", seconds: 15) { try HTTP.get(port: http, "/health").status == 200 }
        XCTAssertEqual(acks.map(\.version), Array(1...300), "one version per transaction, none twice")
        let logged = try loggedTx(pair.conninfo, doc: "f")
        XCTAssertEqual(logged.count, 300)
        XCTAssertEqual(Set(acks.map(\.tx)).subtracting(logged), [], "acknowledged but not in the new primary's log")
        try watcher.watch(until: 300)
        XCTAssertEqual(watcher.seen, Array(1...300), "the watcher saw every version once, in order (reconnects: \(watcher.reconnects))")
        // The operator's tools take the same multi-host conninfo, and find the new primary.
        let verify = try runRewind(["admin", "verify", "f", "--database", pair.conninfo])
        XCTAssertEqual(verify.status, 0, verify.out + verify.err)
        let replay = try runRewind(["admin", "replay", "f", "--database", pair.conninfo])
        XCTAssertEqual(replay.status, 0, replay.err)
        XCTAssertEqual(try JSONParser.parse(replay.out).objectValue?["version"]?.intValue, 300)
        let metrics = try Scrape(port: http)
        XCTAssertGreaterThanOrEqual(metrics["rewind_pg_outages_total"] ?? 0, 1, "the failover is counted")
        XCTAssertGreaterThan(metrics["rewind_pg_unavailable_seconds_total"] ?? 0, 0, "and the time without a primary")
        let resumed = acks[100].at.timeIntervalSince(cut)
        print("failover (sync, promotion): first acknowledgement \(String(format: "%.2f", resumed)) s after the primary was cut off; "
              + "writer reconnects \(writer.reconnects), watcher reconnects \(watcher.reconnects)")
    }

    /// An instance started with the standby listed first connects to the
    /// primary (libpq skips a read-only server under read-write), and writes;
    /// one started while the first host is down connects to the second.
    func testAServerGivenTheStandbyFirstWritesToThePrimary() throws {
        let pair = try Pair("sync")
        let tokens = try prepare(pair)
        let server = try startServer(pair.standbyFirst)
        let (writer, _) = try setUpDocument(server, tokens)
        let acks = try write(writer, count: 5)
        XCTAssertEqual(acks.map(\.version), [1, 2, 3, 4, 5])
        XCTAssertEqual(try loggedTx(pair.conninfo, doc: "f").count, 5)

        // And one started while the first host is down: it goes on to the second.
        try pair.run("crash", "a")
        try pair.run("promote", "b")
        let late = try startServer(pair.conninfo)
        let lateWriter = Client(port: late.port, user: "alice", token: tokens["alice"]!, doc: "f")
        let more = try write(lateWriter, count: 3, from: 5)
        XCTAssertEqual(more.map(\.version), [6, 7, 8])
    }

    /// Asynchronous replication can lose what was acknowledged: here the
    /// standby stops receiving after 50 transactions, 20 more are
    /// acknowledged by the primary alone, then it is cut off and the standby
    /// promoted. Those 20 are counted missing, exactly; the server then
    /// serves the document as the new primary's log holds it (never its own
    /// memory of the lost versions), and writing goes on from there.
    func testAsynchronousFailoverLosesWhatTheStandbyNeverReceivedAndSaysSo() throws {
        let pair = try Pair("async")
        let tokens = try prepare(pair)
        let server = try startServer(pair.conninfo)
        let (writer, _) = try setUpDocument(server, tokens)
        let before = try write(writer, count: 50)
        try pair.run("detach", "b")
        let unreplicated = try write(writer, count: 20, from: 50)
        XCTAssertEqual(unreplicated.last?.version, 70)
        try pair.run("crash", "a")
        try pair.run("promote", "b")

        let logged = try loggedTx(pair.conninfo, doc: "f")
        let lost = Set((before + unreplicated).map(\.tx)).subtracting(logged)
        XCTAssertEqual(lost, Set(unreplicated.map(\.tx)), "exactly what the standby never received is lost")
        print("failover (async, standby 20 transactions behind): \(lost.count) of \(before.count + unreplicated.count) acknowledged transactions lost")

        // A terminal opening now gets the log's state, version 50, not the 70 the server had in memory.
        let fresh = Client(port: server.port, user: "bob", token: tokens["bob"]!, doc: "f")
        let deadline = Date().addingTimeInterval(30)
        var version: Int64 = -1
        while Date() < deadline {
            fresh.drop()
            if let v = try? fresh.terminal().request("open", [("doc", "f")])["version"]?.intValue { version = v }
            if version == 50 { break }
            usleep(200_000)
        }
        XCTAssertEqual(version, 50, "after the failover the document is what the log holds")
        writer.seen = [50]
        writer.drop()
        let after = try write(writer, count: 3, from: 70)
        XCTAssertEqual(after.map(\.version), [51, 52, 53], "writing goes on from the log's head")
        XCTAssertEqual(try loggedTx(pair.conninfo, doc: "f").count, 53)
    }

    /// Two instances on the pair, a writer and a watcher on each. The primary
    /// does not go away: it turns read-only (as a demoted primary does) and
    /// the standby is promoted. Every connection of both servers must leave
    /// it (writes refused with SQLSTATE 25006, the others by asking every
    /// 2 s) and find the new primary, listening included: each watcher then
    /// sees every version, once, in order, whichever instance wrote it; the
    /// liveness locks are held on the new primary and presence crosses
    /// instances again.
    func testTwoInstancesLeaveAPrimaryThatTurnedReadOnlyAndWatchersStayGapless() throws {
        let pair = try Pair("sync")
        let tokens = try prepare(pair)
        let one = try startServer(pair.conninfo, ["--metrics", "127.0.0.1:0", "--log-level", "info"])
        let two = try startServer(pair.conninfo, ["--log-level", "info"])
        let (writerOne, watcherOne) = try setUpDocument(one, tokens)
        let writerTwo = Client(port: two.port, user: "alice", token: tokens["alice"]!, doc: "f")
        let watcherTwo = Client(port: two.port, user: "bob", token: tokens["bob"]!, doc: "f")
        _ = try watcherTwo.terminal()

        // Each writer writes on top of what its own instance has shown (its watcher saw it).
        func writeBoth(_ rounds: Int, from: Int) throws {
            for i in 0..<rounds {
                for (w, watcher, tag) in [(writerOne, watcherOne, 0), (writerTwo, watcherTwo, 1)] {
                    let head = Int64(try loggedTx(pair.conninfo, doc: "f").count)
                    try watcher.watch(until: head)
                    w.seen = [head]
                    _ = try write(w, count: 1, from: (from + i) * 2 + tag)
                }
            }
        }
        try writeBoth(5, from: 0)

        let a = try pair.node(pair.ports.a)
        try a.query("ALTER SYSTEM SET default_transaction_read_only = on")
        try a.query("SELECT pg_reload_conf()")
        try pair.run("promote", "b")
        try writeBoth(5, from: 5)

        XCTAssertEqual(try loggedTx(pair.conninfo, doc: "f").count, 20)
        for w in [watcherOne, watcherTwo] {
            try w.watch(until: 20)
            XCTAssertEqual(w.seen, Array(1...20), "\(w.user) on port \(w.port) saw every version once, in order")
        }
        // Both instances' liveness locks are held on the new primary (the listening connections moved)…
        let b = try pair.node(pair.ports.b)
        try waitUntil("both listening connections, with their liveness locks, on the new primary", seconds: 10) {
            try b.query("""
                SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                WHERE l.locktype = 'advisory' AND a.application_name = 'rewind-notify'
                """).int(0, 0) == 2
        }
        // …and presence crosses instances again: bob focusing on instance two is seen on instance one.
        var step = "alice's terminal"
        do {
            let alice = try writerOne.terminal()
            step = "the focusable node"
            let node = JSON.obj([("op", "create"), ("node", "n"), ("parent", "root"), ("kind", "text"), ("frame", [0, 0, 10, 10]), ("focusable", true)])
            let made = try alice.request("submit", [("doc", "f"), ("tx", "node"), ("base", 20), ("ops", [node])])
            XCTAssertEqual(made["version"], 21, JSONWriter.string(.object(made)))
            step = "instance two showing it"
            try watcherTwo.watch(until: 21)
            step = "bob's focus"
            XCTAssertTrue(try watcherTwo.terminal().request("focus", [("doc", "f"), ("node", "n")]).isOK)
            step = "bob's presence on instance one"
            let seen = try alice.push("presence")
            XCTAssertEqual(seen["user"], "bob", JSONWriter.string(.object(seen)))
        } catch {
            XCTFail("\(step): \(error)\ninstance one:\n\(one.log.suffix(2500))\ninstance two:\n\(two.log.suffix(2500))")
        }

        let metrics = try Scrape(port: XCTUnwrap(one.metricsPort))
        XCTAssertGreaterThanOrEqual(metrics["rewind_pg_left_read_only_total"] ?? 0, 1, "connections left the read-only server")
        XCTAssertGreaterThanOrEqual(metrics["rewind_pg_outages_total"] ?? 0, 1)
        XCTAssertGreaterThan(metrics["rewind_pg_unavailable_seconds_total"] ?? 0, 0)
    }

    /// Host names in the host list are resolved off the loop, before each
    /// connect (`ConnInfo.resolvingHost`, run on libuv's pool), entry for
    /// entry; and a server given names follows a failover like one given paths.
    func testHostNamesInTheListAreResolvedAndFollowAFailover() throws {
        XCTAssertFalse(ConnInfo.namesHosts("host=/tmp/x,127.0.0.1 port=1,2"))
        XCTAssertTrue(ConnInfo.namesHosts("host=/tmp/x,localhost port=1,2"))
        let resolved = try ConnInfo.resolvingHost("host=/tmp/x,localhost,127.0.0.1 port=1,2,3")
        let addrs = try XCTUnwrap(ConnInfo.value("hostaddr", in: resolved)).split(separator: ",", omittingEmptySubsequences: false)
        XCTAssertEqual(addrs.count, 3, resolved)
        XCTAssertEqual(addrs[0], "", "a socket path has no address")
        XCTAssertTrue(addrs[1] == "127.0.0.1" || addrs[1] == "::1", resolved)
        XCTAssertEqual(addrs[2], "127.0.0.1")
        XCTAssertEqual(ConnInfo.value("host", in: resolved), "/tmp/x,localhost,127.0.0.1", "the names stay, for TLS and messages")
        XCTAssertThrowsError(try ConnInfo.resolvingHost("host=no-such-host.invalid port=5432"))

        let pair = try Pair("sync")
        let tokens = try prepare(pair)
        let named = "host=localhost,localhost port=\(pair.ports.a),\(pair.ports.b) dbname=rewind user=rewind"
        let server = try startServer(named)
        let (writer, watcher) = try setUpDocument(server, tokens)
        let acks = try write(writer, count: 40) { i in
            guard i == 20 else { return }
            try pair.run("crash", "a")
            try pair.run("promote", "b")
        }
        XCTAssertEqual(acks.map(\.version), Array(1...40))
        try watcher.watch(until: 40)
        XCTAssertEqual(watcher.seen, Array(1...40))
    }
}
