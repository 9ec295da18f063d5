import Foundation
import Glibc
import Logging
import RewindCore
import RewindLoop
import RewindStore
import XCTest

/// The write path against real PostgreSQL: set-based batches, the hash chain
/// and `verify`, a committed entry that does not apply, a database that does
/// not answer, and databases from before the single log.
final class WritePathTests: XCTestCase {
    /// Sealed entries of a document, built by the core as the server builds them.
    /// Document x, one entry that will win it and `stale` entries computed on
    /// the same empty x (which can only clash once the winner is in), and a
    /// store with one writer.
    private func raceOnX(stale count: Int) throws -> (TestDatabase, [LogEntry], [LogEntry], EventLoop, EventStore) {
        let db = try TestDatabase()
        let user = try db.db.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0)!
        try db.db.query("INSERT INTO documents (id, owner) VALUES ('x', $1)", [String(user)])
        let winner = try entries("x", user: user, count: 1, tag: "winner")
        let stale = try entries("x", user: user, count: count, tag: "stale")
        let loop = EventLoop()
        let store = EventStore(loop: loop, conninfo: db.conninfo, writers: 1, masterKey: TestDatabase.masterKey, logger: Logger(label: "test"))
        return (db, winner, stale, loop, store)
    }

    private func entries(_ doc: String, user: Int64, count: Int, tag: String) throws -> [LogEntry] {
        var ledger = DocumentLedger(doc: doc)
        var out: [LogEntry] = []
        for i in 0..<count {
            let s = DocumentLedger.Submission(tx: "\(tag)\(i)", base: ledger.version, ops: [.set("root", key: "k", value: .string(tag))],
                                              action: nil, userID: user, userName: "alice", client: "c",
                                              eventID: UUID().uuidString.lowercased(), time: 1_000 + Int64(i))
            guard case let .appended(e) = try ledger.append(s) else { throw TestFailure("duplicate") }
            out.append(.event(e))
        }
        return out
    }

    /// One batch carries entries of two documents; one of them was written
    /// by someone else meanwhile (its head moved): only its entries are
    /// refused, the other document's commit.
    func testABatchWhereOneDocumentClashesCommitsTheOthers() throws {
        let db = try TestDatabase()
        let user = try db.db.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0)!
        for d in ["x", "y"] { try db.db.query("INSERT INTO documents (id, owner) VALUES ($1, $2)", [d, String(user)]) }
        let winner = try entries("x", user: user, count: 1, tag: "winner")
        let stale = try entries("x", user: user, count: 2, tag: "stale")  // computed on the same empty x
        let fine = try entries("y", user: user, count: 3, tag: "fine")

        let loop = EventLoop()
        let store = EventStore(loop: loop, conninfo: db.conninfo, writers: 1, masterKey: TestDatabase.masterKey, logger: Logger(label: "test"))
        var outcomes: [String: [EventStore.AppendOutcome]] = [:]
        var phase = 0
        store.onReady = {
            guard phase == 0 else { return }
            phase = 1
            store.append(winner[0], doc: "x", after: [], checkDuplicates: false) { o in
                outcomes["winner", default: []].append(o)
                // Now one batch: the stale x entries and y's, in the same loop turn,
                // interleaved (x y x y y): each document's rows are gathered in order.
                var prevX: [UInt8] = [], prevY: [UInt8] = []
                func appendFine(_ e: LogEntry) {
                    store.append(e, doc: "y", after: prevY, checkDuplicates: false) { o in
                        outcomes["fine", default: []].append(o)
                        if outcomes["fine"]!.count == 3 { store.stop() }
                    }
                    prevY = e.hash
                }
                for k in 0..<3 {
                    if k < stale.count {
                        store.append(stale[k], doc: "x", after: prevX, checkDuplicates: false) { outcomes["stale", default: []].append($0) }
                        prevX = stale[k].hash
                    }
                    appendFine(fine[k])
                }
            }
        }
        store.start()
        loop.run()
        func committed(_ o: EventStore.AppendOutcome) -> Bool { if case .committed = o { return true }; return false }
        XCTAssertEqual(outcomes["winner"]?.map(committed), [true])
        XCTAssertEqual(outcomes["fine"]?.map(committed), [true, true, true], "the other document commits")
        XCTAssertEqual(outcomes["stale"]?.count, 2)
        for o in outcomes["stale"] ?? [] {
            guard case .clash = o else { return XCTFail("a stale entry must clash, got \(o)") }
        }
        XCTAssertEqual(try db.db.query("SELECT seq, head FROM documents WHERE id = 'x'").values, [["1", "1"]])
        XCTAssertEqual(try db.db.query("SELECT seq, head FROM documents WHERE id = 'y'").values, [["3", "3"]])
        XCTAssertEqual(try db.db.query("SELECT tx FROM log WHERE doc = 'x'").values, [["winner0"]])
        // Both documents verify.
        XCTAssertNil(try Verify.document("x", db: db.db))
        XCTAssertNil(try Verify.document("y", db: db.db))
    }

    /// A batch PostgreSQL refuses as a whole (here: a row naming a user that
    /// does not exist, which the log's trigger refuses) is sent again one
    /// document at a time: the other documents' entries commit, and only the
    /// offending document's are answered with the failure.
    func testABatchRefusedAsAWholeIsRetriedDocumentByDocument() throws {
        let db = try TestDatabase()
        let user = try db.db.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0)!
        for d in ["y", "z"] { try db.db.query("INSERT INTO documents (id, owner) VALUES ($1, $2)", [d, String(user)]) }
        let fine = try entries("y", user: user, count: 2, tag: "fine")
        let orphan = try entries("z", user: 987_654, count: 2, tag: "orphan")  // no such user

        let loop = EventLoop()
        let store = EventStore(loop: loop, conninfo: db.conninfo, writers: 1, masterKey: TestDatabase.masterKey, logger: Logger(label: "test"))
        var outcomes: [String: [EventStore.AppendOutcome]] = [:]
        var phase = 0
        func record(_ key: String, _ o: EventStore.AppendOutcome) {
            outcomes[key, default: []].append(o)
            if outcomes.values.reduce(0, { $0 + $1.count }) == 4 { store.stop() }
        }
        store.onReady = {
            guard phase == 0 else { return }
            phase = 1
            // One loop turn: one batch holding both documents.
            for (doc, list) in [("y", fine), ("z", orphan)] {
                var prev: [UInt8] = []
                for e in list {
                    store.append(e, doc: doc, after: prev, checkDuplicates: false) { record(doc, $0) }
                    prev = e.hash
                }
            }
        }
        store.start()
        loop.run()
        func committed(_ o: EventStore.AppendOutcome) -> Bool { if case .committed = o { return true }; return false }
        XCTAssertEqual(outcomes["y"]?.map(committed), [true, true], "the other document commits")
        XCTAssertEqual(outcomes["z"]?.count, 2)
        for o in outcomes["z"] ?? [] {
            guard case let .failed(e) = o else { return XCTFail("the refused document's entries must fail, got \(o)") }
            XCTAssertEqual(e.code, .internal)
            XCTAssertTrue(e.message.contains("no user"), e.message)
        }
        XCTAssertEqual(try db.db.query("SELECT tx FROM log WHERE doc = 'y' ORDER BY seq").values, [["fine0"], ["fine1"]])
        XCTAssertEqual(try db.db.query("SELECT count(*) FROM log WHERE doc = 'z'").values, [["0"]])
        XCTAssertEqual(try db.db.query("SELECT seq FROM documents WHERE id = 'z'").values, [["0"]])
        XCTAssertNil(try Verify.document("y", db: db.db))
    }

    /// Entries of a document queued behind a batch of it that fails are
    /// never acknowledged: each claims the head the one before it would have
    /// left, so once that one is refused none after it can commit (issue 25:
    /// what must hold whatever number of a document's batches are in flight).
    /// Here the writer sends at most two entries a batch, so the four stale
    /// entries go out as two batches, the second queued while the first runs.
    func testEntriesQueuedBehindAFailedBatchAreNeverAcknowledged() throws {
        let (db, winner, stale, loop, store) = try raceOnX(stale: 4)
        store.maxBatch = 2
        var outcomes: [EventStore.AppendOutcome] = []
        var batches: [Int] = []
        store.onBatchAnswered = { entries, _ in batches.append(entries) }
        var phase = 0
        store.onReady = {
            guard phase == 0 else { return }
            phase = 1
            store.append(winner[0], doc: "x", after: [], checkDuplicates: false) { _ in
                var prev: [UInt8] = []
                for e in stale {
                    store.append(e, doc: "x", after: prev, checkDuplicates: false) { o in
                        outcomes.append(o)
                        if outcomes.count == stale.count { store.stop() }
                    }
                    prev = e.hash
                }
            }
        }
        store.start()
        loop.run()
        XCTAssertEqual(batches, [1, 2, 2], "the winner, then the stale entries as two batches")
        XCTAssertEqual(outcomes.count, 4)
        for (i, o) in outcomes.enumerated() {
            guard case .clash = o else { return XCTFail("stale entry \(i + 1) must not be acknowledged, got \(o)") }
        }
        XCTAssertEqual(try db.db.query("SELECT tx FROM log WHERE doc = 'x'").values, [["winner0"]])
        XCTAssertEqual(try db.db.query("SELECT seq FROM documents WHERE id = 'x'").values, [["1"]])
    }

    /// Batches of one document pipelined on a writer (issue 25): the second
    /// is sent while the first is in flight, each claims the head the one
    /// before leaves, and when the first is refused (another writer got
    /// there first) nothing of the second is acknowledged or stored.
    ///
    /// The first stale batch is held in PostgreSQL by a lock on `documents`
    /// (taken by the test's own connection) until the second has
    /// been sent behind it: the order does not depend on how fast the
    /// database answers (it once answered within one loop turn on a busy
    /// machine, and the second batch went out alone).
    func testAPipelinedBatchBehindARefusedOneIsNeverAcknowledged() throws {
        let (db, winner, stale, loop, store) = try raceOnX(stale: 3)
        store.maxBatchesInFlight = 2
        let run = PipelinedRun(loop: loop, store: store, db: db.db, stale: stale)
        store.onReady = { [run] in
            guard run.phase == 0 else { return }
            run.phase = 1
            store.append(winner[0], doc: "x", after: [], checkDuplicates: false) { [run] _ in run.winnerCommitted() }
        }
        store.start()
        loop.run()
        XCTAssertNil(run.lockError)
        XCTAssertEqual(run.inFlightWhenQueued, 1)
        XCTAssertEqual(run.inFlightAtAnswers, [1, 2, 1], "the winner alone, then the second stale batch sent behind the first, before its answer")
        XCTAssertEqual(run.outcomes.count, 3)
        for (i, o) in run.outcomes.enumerated() {
            guard case .clash = o else { return XCTFail("stale entry \(i + 1) must not be acknowledged, got \(o)") }
        }
        XCTAssertEqual(try db.db.query("SELECT tx FROM log WHERE doc = 'x'").values, [["winner0"]])
        XCTAssertEqual(try db.db.query("SELECT seq FROM documents WHERE id = 'x'").values, [["1"]])
    }

    /// The steps of `testAPipelinedBatchBehindARefusedOneIsNeverAcknowledged`, on one loop.
    private final class PipelinedRun {
        let store: EventStore
        let db: Database
        let stale: [LogEntry]
        var phase = 0
        var outcomes: [EventStore.AppendOutcome] = []
        var inFlightWhenQueued = -1
        /// Batches in flight when each batch's answer came (itself included).
        var inFlightAtAnswers: [Int] = []
        var lockError: RewindError?
        var everyTurn: EveryTurn?
        /// Past it the lock is let go whatever happened, so a broken run ends
        /// in failed assertions rather than a hung test.
        private var deadline = Date.distantFuture

        init(loop: EventLoop, store: EventStore, db: Database, stale: [LogEntry]) {
            self.store = store
            self.db = db
            self.stale = stale
            store.onBatchAnswered = { [unowned self] _, _ in self.inFlightAtAnswers.append(self.store.batchesInFlight) }
            everyTurn = EveryTurn(loop: loop) { [unowned self] in self.turn() }
        }

        /// The winner committed: `documents` is locked, so the first
        /// stale batch, sent before the loop next sleeps, waits in
        /// PostgreSQL; each turn then looks at what is in flight.
        func winnerCommitted() {
            do {
                try db.execute(script: "BEGIN")
                // A row lock would not do: the stale claim's WHERE fails on
                // the committed row, so its UPDATE would not wait for it.
                try db.execute(script: "LOCK TABLE documents IN EXCLUSIVE MODE")
            } catch { lockError = error }
            deadline = Date().addingTimeInterval(10)
            phase = 2
            appendStale(0)
            everyTurn?.start()
        }

        private func turn() {
            let late = Date() > deadline
            if phase == 2, store.batchesInFlight == 1 || late {
                phase = 3
                inFlightWhenQueued = store.batchesInFlight
                appendStale(1)
                appendStale(2)
            } else if phase == 3, store.batchesInFlight == 2 || late {
                phase = 4
                everyTurn?.stop()
                do { try db.execute(script: "COMMIT") } catch { lockError = error }
            }
        }

        func appendStale(_ i: Int) {
            let prev = i == 0 ? [] : stale[i - 1].hash
            store.append(stale[i], doc: "x", after: prev, checkDuplicates: false) { [unowned self] o in
                self.outcomes.append(o)
                if self.outcomes.count == self.stale.count {
                    self.everyTurn?.close()
                    self.store.stop()
                }
            }
        }
    }

    /// One busy document (issue 44) whose first three entries are held in
    /// PostgreSQL by a lock on `documents` (their batch in flight, waiting),
    /// then `steps`, one a loop turn from the turn that batch is in flight;
    /// the lock is let go in the turn of the last. `told(i)` runs as entry
    /// `i` is answered (committed). Gives the batches' sizes as answered.
    private func holdABusyDocument(entries count: Int, steps: [(_ store: EventStore, _ append: (Int) -> Void) -> Void],
                                   told: @escaping (_ entry: Int, _ store: EventStore) -> Void = { _, _ in }) throws -> (db: TestDatabase, sizes: [Int]) {
        let db = try TestDatabase()
        let user = try db.db.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0)!
        try db.db.query("INSERT INTO documents (id, owner) VALUES ('x', $1)", [String(user)])
        let chain = try entries("x", user: user, count: count, tag: "busy")
        let loop = EventLoop()
        let store = EventStore(loop: loop, conninfo: db.conninfo, writers: 1, masterKey: TestDatabase.masterKey, logger: Logger(label: "test"))
        store.maxBatchesInFlight = 2
        var acked = 0, step = -1, lockError: (any Error)?
        var sizes: [Int] = []
        var everyTurn: EveryTurn?
        store.onBatchAnswered = { entries, _ in sizes.append(entries) }
        func append(_ i: Int) {
            store.append(chain[i], doc: "x", after: i == 0 ? [] : chain[i - 1].hash, checkDuplicates: false) { o in
                guard case .committed = o else {
                    // Stop here: with an entry never acknowledged, the loop would otherwise run for ever.
                    XCTFail("entry \(i): \(o)")
                    everyTurn?.close(); store.stop()
                    return
                }
                told(i, store)
                acked += 1
                if acked == chain.count { everyTurn?.close(); store.stop() }
            }
        }
        let deadline = Date().addingTimeInterval(10)
        everyTurn = EveryTurn(loop: loop) {
            guard step >= 0, step < steps.count else { return }
            guard step > 0 || store.batchesInFlight == 1 || Date() > deadline else { return }  // the first three wait on the lock
            steps[step](store, append)
            step += 1
            if step == steps.count {
                do { try db.db.execute(script: "COMMIT") } catch { lockError = error }
            }
        }
        store.onReady = {
            guard step == -1 else { return }
            do {
                try db.db.execute(script: "BEGIN")
                try db.db.execute(script: "LOCK TABLE documents IN EXCLUSIVE MODE")
            } catch { lockError = error }
            step = 0
            for i in 0..<3 { append(i) }
            everyTurn?.start()
        }
        store.start()
        loop.run()
        XCTAssertNil(lockError)
        XCTAssertEqual(acked, count, "every entry committed")
        return (db, sizes)
    }

    /// One busy document (issue 44): a batch sent behind one in flight
    /// waits in PostgreSQL for that one's commit, so sending it early with
    /// the first stragglers gains nothing, and the terminals that come back
    /// after it then wait for a third commit of their own. It goes only
    /// once as many entries are queued as the batch in flight holds (or when
    /// that one is answered): six entries commit in two transactions, not three.
    func testABatchBehindOneInFlightWaitsUntilItIsAsBig() throws {
        var inFlightAfterStraggler = -1, inFlightAfterTheRest = -1
        let run = try holdABusyDocument(entries: 6, steps: [
            { _, append in append(3) },  // a straggler: one entry behind three
            { store, append in  // the end of the last turn decided about the straggler
                inFlightAfterStraggler = store.batchesInFlight
                append(4); append(5)
            },
            { store, _ in inFlightAfterTheRest = store.batchesInFlight },
        ])
        XCTAssertEqual(inFlightAfterStraggler, 1, "one entry is not sent behind three: it would wait for their commit anyway")
        XCTAssertEqual(inFlightAfterTheRest, 2, "three behind three are sent at once, to wait in PostgreSQL")
        XCTAssertEqual(run.sizes, [3, 3])
        XCTAssertEqual(try run.db.db.query("SELECT count(DISTINCT position >> 20) FROM log WHERE doc = 'x'").values, [["2"]],
                       "six entries in two transactions")
    }

    /// One busy document (issue 44): entries held back while a batch of
    /// their document is in flight go to PostgreSQL as soon as that batch
    /// is answered — before its appends are told, which for a busy
    /// document's terminals is ~1.4 ms of the loop's time, all of it
    /// PostgreSQL's idle time when they went at the end of that turn.
    func testEntriesHeldBehindABatchGoBeforeItsAnswerIsTold() throws {
        var inFlightWhileHeld = -1, inFlightWhenFirstTold = -1
        let run = try holdABusyDocument(entries: 4, steps: [
            { _, append in append(3) },  // one entry: held until they are answered (the test above)
            { store, _ in inFlightWhileHeld = store.batchesInFlight },
        ], told: { i, store in if i == 0 { inFlightWhenFirstTold = store.batchesInFlight } })
        XCTAssertEqual(inFlightWhileHeld, 1, "the fourth entry waited for the batch ahead of it")
        XCTAssertEqual(inFlightWhenFirstTold, 1, "the fourth entry was sent before the batch ahead's first entry was told")
        XCTAssertEqual(run.sizes, [3, 1])
        XCTAssertEqual(try run.db.db.query("SELECT seq FROM log WHERE doc = 'x' ORDER BY seq").values.map { $0[0] }, ["1", "2", "3", "4"])
    }

    /// A row changed by a superuser (triggers off) is named by `verify`, and
    /// the server refuses to serve the document rather than build on it.
    /// Re-sealing every later hash fools a check of the chain alone, not one
    /// against anchors exported before; nor does removing the newest entries.
    func testTamperingIsCaughtByVerifyTheServerAndAnchors() throws {
        let f = try Fixture()
        let (db, t) = (f.db, f.alice)
        for i in 0..<4 { try t.submit("d", tx: "s\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "k", "value": .int(Int64(i))]]) }
        XCTAssertEqual(try runAdmin(db, ["verify"]).status, 0)
        let anchors = try runAdmin(db, ["anchors"]).out
        XCTAssertTrue(anchors.contains("\"seq\":4"), anchors)
        let anchorFile = NSTemporaryDirectory() + "anchors-\(db.name).jsonl"
        try anchors.write(toFile: anchorFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: anchorFile) }

        try db.db.execute(script: """
            ALTER TABLE log DISABLE TRIGGER USER;
            UPDATE log SET ops = (SELECT ops FROM log WHERE doc = 'd' AND seq = 3) WHERE doc = 'd' AND seq = 4;
            ALTER TABLE log ENABLE TRIGGER USER;
            """)
        let tampered = try runAdmin(db, ["verify", "d"])
        XCTAssertEqual(tampered.status, 1)
        XCTAssertTrue(tampered.out.contains("d entry 4 (version 4)"), tampered.out)
        XCTAssertTrue(tampered.out.contains("hash chain"), tampered.out)
        // Replay checks the chain too (on the thread that reads the pages).
        let replayed = try runAdmin(db, ["replay", "d"])
        XCTAssertNotEqual(replayed.status, 0)
        XCTAssertTrue(replayed.err.contains("the hash chain of d breaks at entry 4"), replayed.err)

        // A restarted server will not serve (or extend) the changed log.
        f.server.kill9()
        let server = try ServerProcess(database: db)
        let a = try Terminal(port: server.port)
        try a.hello("alice", db)
        let open = try a.request("open", [("doc", "d")])
        XCTAssertEqual(open.errorCode, "internal", JSONWriter.string(.object(open)))
        XCTAssertEqual(try a.request("submit", [("doc", "d"), ("tx", "more"), ("base", 4), ("ops", [["op": "set", "node": "root", "key": "k", "value": 5]])]).errorCode, "internal")
        XCTAssertEqual(try db.eventCount("d"), 4)

        // Re-seal from the changed entry on, as a superuser who knows the encoding would.
        try db.db.execute(script: resealSQL(doc: "d", from: "4"))
        // Without the master key only the chain is checked: a re-sealed chain holds together on its own.
        let chainOnly = try withoutMasterKey { try runAdmin(db, ["verify", "d"]) }
        XCTAssertEqual(chainOnly.status, 0, chainOnly.out + chainOnly.err)
        XCTAssertTrue(chainOnly.err.contains("only the hash chains were checked"), chainOnly.err)
        // With it, the content gives the move away (sealed text is bound to its entry, and cannot be forged without the key) …
        let content = try runAdmin(db, ["verify", "d"])
        XCTAssertEqual(content.status, 1)
        XCTAssertTrue(content.out.contains("d entry 4 (version 4): the sealed ops and inverse of entry 4"), content.out)
        XCTAssertTrue(content.out.contains("do not open at their place"), content.out)
        // … and anchors taken before catch it even without the key.
        let resealed = try withoutMasterKey { try runAdmin(db, ["verify", "--anchors", anchorFile]) }
        XCTAssertEqual(resealed.status, 1)
        XCTAssertTrue(resealed.out.contains("d entry 4: differs from the anchor"), resealed.out)

        // Removing the newest entry and rolling the head back.
        try db.db.execute(script: """
            ALTER TABLE log DISABLE TRIGGER USER;
            DELETE FROM log WHERE doc = 'd' AND seq = 4;
            UPDATE documents SET seq = 3, head = 3, head_hash = (SELECT hash FROM log WHERE doc = 'd' AND seq = 3) WHERE id = 'd';
            ALTER TABLE log ENABLE TRIGGER USER;
            """)
        let rolledBack = try runAdmin(db, ["verify", "d", "--anchors", anchorFile])
        XCTAssertEqual(rolledBack.status, 1)
        XCTAssertTrue(rolledBack.out.contains("anchored entry is gone"), rolledBack.out)
        XCTAssertEqual(try runAdmin(db, ["verify", "nope"]).status, 1)
        XCTAssertEqual(try runAdmin(db, ["verify", "--no-such-flag"]).status, 2)
    }

    /// The committed ledger refusing an entry (this server and its log
    /// disagree) stops the document: the submit is not acknowledged, the
    /// terminals are told `closed`, and the document opens again from the log.
    /// Sealed text that does not open (a character of entry 7's ciphertext
    /// changed, the chain re-sealed over it) is named by its own entry and
    /// version, as `verify --help` promises (issue 44: it named entry 1, the
    /// first of the page being read, without a version).
    func testSealedTextThatDoesNotOpenIsNamedByItsEntry() throws {
        let f = try Fixture()
        for i in 0..<9 { try f.alice.submit("d", tx: "s\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "k", "value": .int(Int64(i))]]) }
        try f.db.db.execute(script: """
            ALTER TABLE log DISABLE TRIGGER USER;
            UPDATE log SET ops = overlay(ops placing CASE WHEN substr(ops, 30, 1) = 'A' THEN 'B' ELSE 'A' END from 30 for 1)
            WHERE doc = 'd' AND seq = 7;
            ALTER TABLE log ENABLE TRIGGER USER;
            """ + resealSQL(doc: "d", from: "7"))
        let r = try runAdmin(f.db, ["verify", "d"])
        XCTAssertEqual(r.status, 1, r.out + r.err)
        XCTAssertTrue(r.out.contains("d entry 7 (version 7):"), r.out)
    }

    func testACommittedEntryThatDoesNotApplyIsNotAcknowledged() throws {
        let f = try Fixture(serverArguments: ["--fault-unappliable-version", "3"])
        let (db, a) = (f.db, f.alice)
        let b = try f.terminal("bob")
        XCTAssertEqual(try a.request("open", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try b.request("open", [("doc", "d")])["ok"], true)
        for i in 0..<2 { try a.submit("d", tx: "s\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "k", "value": .int(Int64(i))]]) }
        let third = try a.request("submit", [("doc", "d"), ("tx", "s2"), ("base", 2), ("ops", [["op": "set", "node": "root", "key": "k", "value": 2]])])
        XCTAssertEqual(third["ok"], false)
        XCTAssertEqual(third.errorCode, "internal")
        let closed = try b.push("closed")
        XCTAssertEqual(closed["doc"], "d")
        XCTAssertEqual(closed["reason"], "internal")
        // It did commit (the database has it); opening again reads it from the log.
        XCTAssertEqual(try db.eventCount("d"), 3)
        let reopened = try b.request("open", [("doc", "d")])
        XCTAssertEqual(reopened["version"], 3)
        XCTAssertEqual(reopened["state"]?.objectValue?["nodes"]?.objectValue?["root"]?.objectValue?["props"]?.objectValue?["k"], 2)
    }

    /// Backends that stop answering (SIGSTOP): requests fail `unavailable`
    /// within the timeout instead of hanging, and the server comes back on
    /// new connections by itself.
    func testAPostgreSQLThatDoesNotAnswerMakesRequestsFailUnavailable() throws {
        let f = try Fixture(serverArguments: ["--db-timeout", "1"])
        let (db, a) = (f.db, f.alice)
        try a.submit("d", tx: "before", base: 0, [["op": "set", "node": "root", "key": "k", "value": 0]])
        let pids = try db.db.query("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [db.name])
            .values.compactMap { $0[0].flatMap { Int32($0) } }
        XCTAssertGreaterThanOrEqual(pids.count, 2, "the server's connections")
        for p in pids { kill(p, SIGSTOP) }
        defer { for p in pids { kill(p, SIGCONT) } }
        let start = Date()
        let stuck = try a.request("submit", [("doc", "d"), ("tx", "during"), ("base", 1), ("ops", [["op": "set", "node": "root", "key": "k", "value": 1]])])
        let waited = Date().timeIntervalSince(start)
        XCTAssertEqual(stuck.errorCode, "unavailable", JSONWriter.string(.object(stuck)))
        XCTAssertLessThan(waited, 8, "answered within the timeout (1 s to answer + 2 s grace), not left hanging")
        // New connections, new backends: the same submit goes through once the server is back.
        var ok = false
        let deadline = Date().addingTimeInterval(15)
        while !ok && Date() < deadline {
            let r = try a.request("submit", [("doc", "d"), ("tx", "during"), ("base", 1), ("ops", [["op": "set", "node": "root", "key": "k", "value": 1]])])
            ok = r["ok"] == true
            if !ok { usleep(200_000) }
        }
        XCTAssertTrue(ok, "the server reconnected by itself")
    }

    /// A database with events and group marks in the old tables (schema
    /// 001–007, appended by the old SQL functions) migrates to the single
    /// log: entries in their order, re-chained, verified, and served.
    func testAnExistingDatabaseMigratesForward() throws {
        let db = try TestDatabase(upTo: 7)
        let user = try db.db.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0)!
        try db.db.query("INSERT INTO documents (id, owner) VALUES ('m', $1)", [String(user)])
        var prev: String?
        func event(_ v: Int, _ ops: String, _ inverse: String, marks: Int, meta: String? = nil) throws {
            let id = UUID().uuidString.lowercased()
            let r = try db.db.query("""
                SELECT status FROM rewind_append('m', $1, $2::uuid, $3, 'digest', $4, 'c', 'g\(v)', 'edit', NULL, $5, $6, $7, NULL,
                                                 $8, $9::uuid, $10, $11)
                """, [String(v), id, "tx\(v)", String(user), String(v - 1), ops, inverse, String(1_700_000_000_000 + v), prev, meta, String(marks)])
            XCTAssertEqual(r[0, 0], "ok")
            prev = id
        }
        try event(1, #"[{"op":"set","node":"root","key":"k","value":1}]"#, #"[{"op":"set","node":"root","key":"k","value":null}]"#, marks: 0)
        try event(2, #"[{"op":"set","node":"root","key":"k","value":2}]"#, #"[{"op":"set","node":"root","key":"k","value":1}]"#, marks: 0,
                  meta: #"{"open":true}"#)
        let mark = try db.db.query("""
            SELECT status FROM rewind_mark('m', 1, 2, gen_random_uuid(), $1, 'c', 'close', 'g2', NULL, 'Named', NULL, NULL, 1700000000003)
            """, [String(user)])
        XCTAssertEqual(mark[0, 0], "ok")
        try event(3, #"[{"op":"set","node":"root","key":"j","value":"x"}]"#, #"[{"op":"set","node":"root","key":"j","value":null}]"#, marks: 1)
        try Migrations.apply(try Migrations.load(from: TestDatabase.repositoryRoot + "/schema"), to: db.db)

        let rows = try db.db.query("SELECT seq, version, entry, kind FROM log WHERE doc = 'm' ORDER BY seq").values
        XCTAssertEqual(rows, [["1", "1", "event", "edit"], ["2", "2", "event", "edit"], ["3", "2", "mark", "close"], ["4", "3", "event", "edit"]])
        XCTAssertNil(try Verify.document("m", db: db.db))
        let replayed = try Replay.document("m", db: db.db)
        XCTAssertEqual(replayed.version, 3)
        XCTAssertEqual(replayed.history.markCount, 1)

        let server = try ServerProcess(database: db)
        let t = try Terminal(port: server.port)
        try t.hello("alice", db)
        XCTAssertEqual(try t.request("open", [("doc", "m")])["state"], replayed.document.json)
        XCTAssertEqual(try t.submit("m", tx: "new", base: 3, [["op": "set", "node": "root", "key": "k", "value": 4]]), 4)
        XCTAssertEqual(try db.db.query("SELECT seq FROM documents WHERE id = 'm'").int(0, 0), 5)
        XCTAssertNil(try Verify.document("m", db: db.db))
    }
}

/// `verify` checks every event's inverse on its own, not only the chain: an
/// inverse that is not the event's, sealed at the event's place (by whoever
/// holds the key — a server bug, say: version 3's ops and inverse sealed
/// again at version 4's place; moved as they were, they would not open there),
/// re-chained so that the chain holds, is still caught,
/// and the check leaves the document as it was for the entries after it.
final class VerifyInverseTests: XCTestCase {
    func testAWrongInverseResealedIsCaughtAndAGoodLogPasses() throws {
        let f = try Fixture(doc: "d")
        for i in 1...6 {
            try f.alice.submit("d", tx: "t\(i)", base: Int64(i - 1), [["op": "set", "node": "root", "key": "k", "value": .int(Int64(i))]])
        }
        XCTAssertEqual(try runAdmin(f.db, ["verify", "d"]).status, 0, "a good log passes (each inverse checked in place, the state put back)")
        let cipher = try XCTUnwrap(try DocumentKeys(master: TestDatabase.masterKey).existing(doc: "d", db: f.db.db))
        let rows = try f.db.db.query("SELECT seq, id, ops FROM log WHERE doc = 'd' AND entry = 'event' AND version IN (3, 4) ORDER BY version")
        let three = try cipher.openEntry(rows[0, 2]!, seq: rows.int(0, 0)!, id: rows[0, 1]!)
        let wrong = cipher.sealEntry(ops: three.ops, inverse: three.inverse, seq: rows.int(1, 0)!, id: rows[1, 1]!)
        try f.db.db.query("ALTER TABLE log DISABLE TRIGGER USER")
        try f.db.db.query("UPDATE log SET ops = $1 WHERE doc = 'd' AND seq = $2", [wrong, rows[1, 0]!])
        try f.db.db.execute(script: """
            ALTER TABLE log ENABLE TRIGGER USER;
            DELETE FROM snapshots WHERE doc = 'd';
            """ + resealSQL(doc: "d", from: rows[1, 0]!))
        let r = try runAdmin(f.db, ["verify", "d"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.out.contains("(version 4): its inverse does not give back node \"root\" as it was"), r.out)
    }
}
