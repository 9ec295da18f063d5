import Foundation
import Glibc
@_spi(Unbound) import RewindCore
import RewindStore
import XCTest

/// Content encrypted per document, purge, the master key, and erasing a
/// user (SPEC section 15, PROTOCOL "delete_doc"), against real PostgreSQL.
final class EncryptionTests: XCTestCase {
    /// Waits until `n` server instances hold their liveness lock on `db` (taken once
    /// a server listens for notices; let go when PostgreSQL sees its session end).
    func waitForServers(_ n: Int, _ db: TestDatabase) throws {
        let deadline = Date().addingTimeInterval(10)
        while try SealExisting.liveInstances(db: db.db) != n {
            guard Date() < deadline else { throw TestFailure("\(n) server(s) never held their liveness lock") }
            usleep(20_000)
        }
    }

    /// The files of `dir` holding `needle` (grep -r over everything, WAL included).
    func filesHolding(_ needle: String, in dir: String) throws -> [String] {
        let r = try runProgram("/bin/grep", ["-r", "-l", "-a", "-F", needle, dir])
        guard r.status == 0 || r.status == 1 else { throw TestFailure("grep failed (\(r.status)): \(r.err)") }
        return r.out.split(separator: "\n").map(String.init)
    }

    /// Text typed into a document — in an insert, a snapshot and an undo
    /// (its inverse) — is nowhere in PostgreSQL's files after a checkpoint,
    /// while the title (stored in plain text, as the control) is.
    func testTypedTextNeverReachesPostgreSQLsFilesInPlainText() throws {
        let secret = "SECRET-" + UUID().uuidString.prefix(12)
        let control = "TITLE-" + UUID().uuidString.prefix(12)
        let f = try Fixture(doc: nil, serverArguments: ["--snapshot-every", "3", "--snapshot-bytes-per-event", "0"])
        XCTAssertEqual(try f.alice.request("create_doc", [("doc", "d"), ("title", .string(control))])["ok"], true)
        var v = try f.alice.submit("d", tx: "t", base: 0, [textNode("t", "hello")])
        v = try f.alice.submit("d", tx: "typed", base: v, [["op": "insert", "node": "t", "pos": 5, "text": .string(" " + secret)]])
        for i in 0..<4 { v = try f.alice.submit("d", tx: "k\(i)", base: v, [["op": "set", "node": "root", "key": "k", "value": .int(Int64(i))]]) }
        XCTAssertEqual(try f.alice.request("open", [("doc", "d")])["ok"], true)
        let undo = try f.alice.request("undo", [("doc", "d")])
        XCTAssertEqual(undo["ok"], true, JSONWriter.string(.object(undo)))
        // The server shows the text: it is really there.
        let opened = try f.alice.request("open", [("doc", "d")])
        XCTAssertTrue(JSONWriter.string(.object(opened)).contains(secret))
        let deadline = Date().addingTimeInterval(10)
        while try f.db.db.query("SELECT count(*) FROM snapshots WHERE doc = 'd'").int(0, 0)! == 0 && Date() < deadline { usleep(50_000) }
        XCTAssertGreaterThan(try f.db.db.query("SELECT count(*) FROM snapshots WHERE doc = 'd'").int(0, 0)!, 0, "a snapshot was stored")
        XCTAssertEqual(try f.db.db.query("SELECT count(*) FROM log WHERE doc = 'd' AND entry = 'event' AND (left(ops, 1) <> '~' OR left(inverse, 1) <> '~')").int(0, 0), 0)
        XCTAssertEqual(try f.db.db.query("SELECT count(*) FROM snapshots WHERE doc = 'd' AND left(state, 1) <> '~'").int(0, 0), 0)

        try f.db.db.query("CHECKPOINT")
        let dataDirectory = try XCTUnwrap(try f.db.db.query("SHOW data_directory")[0, 0])
        XCTAssertFalse(try filesHolding(control, in: dataDirectory).isEmpty, "grep sees the data files (the plain title is found)")
        XCTAssertEqual(try filesHolding(secret, in: dataDirectory), [], "typed text in PostgreSQL's files")
    }

    /// Purge: the log rows stay and verify (exit 0, "purged"), the content is
    /// gone for every reader (replay and export exit 1, undelete refused,
    /// not_found for the owner, the id taken); `--expired` purges what was
    /// deleted longer ago than the retention period.
    func testPurgeKeepsTheLogVerifiableAndErasesTheContent() throws {
        let f = try Fixture()
        var v = try f.alice.submit("d", tx: "t", base: 0, [textNode("t", "hello")])
        v = try f.alice.submit("d", tx: "u", base: v, [["op": "insert", "node": "t", "pos": 0, "text": "well, "]])
        XCTAssertEqual(try f.alice.request("open", [("doc", "d")])["ok"], true)
        let rows = try f.db.db.query("SELECT count(*), string_agg(encode(hash, 'hex'), '' ORDER BY seq) FROM log WHERE doc = 'd'")
        XCTAssertEqual(try runAdmin(f.db, ["replay", "d"]).status, 0)

        XCTAssertEqual(try admin(f.db, "purge", "d"), "purged d (it was not deleted: deleted now too)\n")
        XCTAssertEqual(try f.alice.push("closed")["reason"], "deleted")
        let after = try f.db.db.query("SELECT count(*), string_agg(encode(hash, 'hex'), '' ORDER BY seq) FROM log WHERE doc = 'd'")
        XCTAssertEqual(after.values, rows.values, "no log row changed or went")
        XCTAssertEqual(try f.db.db.query("SELECT count(*) FROM document_keys WHERE doc = 'd'").int(0, 0), 0)
        XCTAssertEqual(try f.db.db.query("SELECT count(*) FROM document_editors WHERE doc = 'd'").int(0, 0), 0)

        let verified = try runAdmin(f.db, ["verify", "d"])
        XCTAssertEqual(verified.status, 0, verified.out + verified.err)
        XCTAssertTrue(verified.out.contains("d: purged ("), verified.out)
        XCTAssertTrue(verified.out.contains("its chain is intact"), verified.out)
        let replayed = try runAdmin(f.db, ["replay", "d"])
        XCTAssertEqual(replayed.status, 1)
        XCTAssertTrue(replayed.err.contains("d was purged"), replayed.err)
        let exported = try runAdmin(f.db, ["export", "d"])
        XCTAssertEqual(exported.status, 1)
        XCTAssertTrue(exported.err.contains("d was purged"), exported.err)
        let undeleted = try runAdmin(f.db, ["undelete", "d"])
        XCTAssertEqual(undeleted.status, 1)
        XCTAssertTrue(undeleted.err.contains("purged"), undeleted.err)
        XCTAssertEqual(try runAdmin(f.db, ["purge", "d"]).status, 1, "already purged")
        XCTAssertEqual(try f.alice.request("open", [("doc", "d")]).errorCode, "not_found")
        XCTAssertEqual(try f.alice.request("create_doc", [("doc", "d")]).errorCode, "conflict")
        // A server started afresh serves nothing of it either.
        f.server.kill9()
        let server = try ServerProcess(database: f.db)
        let a = try Terminal(port: server.port)
        try a.hello("alice", f.db)
        XCTAssertEqual(try a.request("open", [("doc", "d")]).errorCode, "not_found")

        // --expired: only what was deleted longer ago than the retention period.
        XCTAssertEqual(try a.request("create_doc", [("doc", "e")])["ok"], true)
        try a.submit("e", tx: "e1", base: 0, [textNode("t", "bye")])
        XCTAssertEqual(try a.request("delete_doc", [("doc", "e")])["deleted"], true)
        XCTAssertEqual(try admin(f.db, "purge", "--expired"), "nothing deleted more than 30 days ago\n")
        XCTAssertEqual(try f.db.db.query("SELECT purged_at IS NULL FROM documents WHERE id = 'e'")[0, 0], "t")
        try f.db.db.query("UPDATE documents SET deleted_at = now() - interval '31 days' WHERE id = 'e'")
        XCTAssertEqual(try admin(f.db, "purge", "--expired"), "purged e\n")
        XCTAssertEqual(try runAdmin(f.db, ["verify"]).status, 0)
    }

    /// A new master key re-wraps every data key: the old key file then opens
    /// nothing (admin commands and a server refuse it), the new one opens
    /// everything, and a running server whose key file is replaced in place
    /// goes on opening documents it had not loaded.
    func testRotatingTheMasterKeyRetiresTheOldFile() throws {
        let dir = NSTemporaryDirectory() + "rewind-rotate-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let live = dir + "/master.key", old = dir + "/old.key", new = dir + "/new.key"
        _ = try MasterKey.create(live)
        XCTAssertEqual(link(live, old), 0)

        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--master-key-file", live])
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", db)
        for doc in ["d", "e"] {
            XCTAssertEqual(try alice.request("create_doc", [("doc", .string(doc))])["ok"], true)
            try alice.submit(doc, tx: "t", base: 0, [textNode("t", "text of \(doc)")])
        }
        let before = try runAdmin(db, ["replay", "e", "--master-key-file", old])
        XCTAssertEqual(before.status, 0, before.err)

        let rotated = try runAdmin(db, ["rotate-master-key", "--master-key-file", old, "--new-key-file", new])
        XCTAssertEqual(rotated.status, 0, rotated.err)
        XCTAssertTrue(rotated.out.contains("re-wrapped 2 document key(s)"), rotated.out)
        let refused = try runAdmin(db, ["replay", "e", "--master-key-file", old])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.err.contains("is not this database's"), refused.err)
        let withNew = try runAdmin(db, ["replay", "e", "--master-key-file", new])
        XCTAssertEqual(withNew.out, before.out)

        // The running server: its file replaced in place, it opens `e` (not loaded since the restart below) with the new key.
        XCTAssertEqual(rename(new, live), 0)
        server.kill9()
        let again = try ServerProcess(database: db, arguments: ["--master-key-file", live])
        let bob = try Terminal(port: again.port)
        try bob.hello("alice", db)
        XCTAssertTrue(JSONWriter.string(.object(try bob.request("open", [("doc", "e")]))).contains("text of e"))

        // A server given the old key refuses to start, and says why.
        let r = try runProgram(ServerProcess.binDirectory + "/rewind-server",
                               ["--listen", "127.0.0.1:0", "--database", db.conninfo, "--master-key-file", old])
        XCTAssertEqual(r.status, 1, r.out + r.err)
        XCTAssertTrue(r.err.contains("is not this database's"), r.err)
        XCTAssertFalse(r.out.contains("listening"), r.out)
    }

    /// The key's line may end as an editor on any system saves it: LF, CRLF
    /// (a file written on Windows was refused: "does not hold a key"), CR,
    /// or with spaces around; anything else is still refused.
    func testAKeyFileReadsTheSameWhateverItsLineEnding() throws {
        let path = NSTemporaryDirectory() + "rewind-crlf-\(getpid()).key"
        unlink(path)
        defer { unlink(path) }
        let key = try MasterKey.create(path)
        let line = try XCTUnwrap(String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").first).trimmingCharacters(in: .whitespaces)
        for (ending, text) in [("LF", line + "\n"), ("CRLF", line + "\r\n"), ("CR", line + "\r"), ("none", line), ("spaces", "  " + line + " \r\n\r\n")] {
            unlink(path)
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
            XCTAssertEqual(try MasterKey.read(path).id, key.id, "a key file whose line ends with \(ending)")
        }
        unlink(path)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("not a key\r\n".utf8), attributes: [.posixPermissions: 0o600]))
        XCTAssertThrowsError(try MasterKey.read(path)) { XCTAssertTrue("\($0)".contains("does not hold a key"), "\($0)") }
    }

    /// A key file others can read, or none at all, stops the server before it serves anything.
    func testAServerWithoutAUsableKeyFileDoesNotStart() throws {
        let db = try TestDatabase()
        let path = NSTemporaryDirectory() + "rewind-open-key-\(getpid()).key"
        unlink(path)
        defer { unlink(path) }
        _ = try MasterKey.create(path)
        chmod(path, 0o644)
        let open = try runProgram(ServerProcess.binDirectory + "/rewind-server",
                                  ["--listen", "127.0.0.1:0", "--database", db.conninfo, "--master-key-file", path])
        XCTAssertEqual(open.status, 2)
        XCTAssertTrue(open.err.contains("can be read by others") && open.err.contains("chmod 600"), open.err)
        let missing = try runProgram(ServerProcess.binDirectory + "/rewind-server",
                                     ["--listen", "127.0.0.1:0", "--database", db.conninfo, "--master-key-file", path + ".none"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.err.contains("no master key file at"), missing.err)

        // The same file handed over by systemd (LoadCredential=: readable by the
        // service's user only, often through an ACL that shows in the group bits) is used.
        let credentials = NSTemporaryDirectory() + "rewind-credentials-\(getpid())"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: credentials) }
        XCTAssertEqual(rename(path, credentials + "/master.key"), 0)
        setenv("CREDENTIALS_DIRECTORY", credentials, 1)
        defer { unsetenv("CREDENTIALS_DIRECTORY") }
        let server = try ServerProcess(database: db, arguments: ["--master-key-file", credentials + "/master.key"])
        let t = try Terminal(port: server.port)
        try t.hello("alice", db)
    }

    /// Erasing bob: his connections end, his token fails `hello`, and his
    /// name is nowhere alice looks — events since 0, presence, quick actions,
    /// `user list`, an export — while his edits stay in her document.
    func testErasingAUserRemovesTheNameEverywhereAndKeepsTheEdits() throws {
        let f = try Fixture()
        let bob = try f.terminal("bob")
        var v = try f.alice.submit("d", tx: "t", base: 0, [textNode("t", "hello")])
        v = try bob.submit("d", tx: "b", base: v, [["op": "insert", "node": "t", "pos": 5, "text": " (typed by B)"]])
        XCTAssertEqual(try bob.request("open", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try bob.request("focus", [("doc", "d"), ("node", "t")])["ok"], true)
        let seen = try f.alice.request("open", [("doc", "d"), ("since", 0)])
        XCTAssertTrue(JSONWriter.string(.object(seen)).contains("\"user\":\"bob\""), "before: bob is shown")
        XCTAssertTrue(try admin(f.db, "user", "list").contains("bob"))

        let out = try admin(f.db, "user", "erase", "bob")
        XCTAssertTrue(out.hasPrefix("erased bob: now erased-"), out)
        XCTAssertTrue(out.contains("1 running server(s) applied it"), "it returned once the server had: \(out)")
        let pseudonym = String(out.split(separator: " ")[3].dropLast())
        // What his leaving told alice (his focus ended) is under the pseudonym too.
        var left: [JSONObject] = []
        while left.isEmpty {
            left = try f.alice.drainPushes().filter { $0["push"] == "presence" && $0["node"] == .null }
        }
        for p in left { XCTAssertEqual(p["user"], .string(pseudonym), "\(p)") }
        let bye = try bob.push("bye")
        XCTAssertEqual(bye["reason"], "unauthorized")
        let again = try Terminal(port: f.server.port)
        XCTAssertEqual(try again.request("hello", [("user", "bob"), ("token", .string(f.db.tokens["bob"]!))]).errorCode, "unauthorized")

        let watcher = try Terminal(port: f.server.port)
        let hello = try watcher.request("hello", [("user", "alice"), ("token", .string(f.db.tokens["alice"]!))])
        let events = try watcher.request("open", [("doc", "d"), ("since", 0)])
        let everything = [JSONWriter.string(.object(hello)), JSONWriter.string(.object(events)),
                          try watcher.drainPushes().map { JSONWriter.string(.object($0)) }.joined(),
                          try admin(f.db, "user", "list"), try admin(f.db, "export", "d")].joined(separator: "\n")
        XCTAssertFalse(everything.contains("bob\""), everything)
        XCTAssertFalse(try admin(f.db, "user", "list").contains("bob "))
        XCTAssertTrue(JSONWriter.string(.object(events)).contains("\"user\":\"\(pseudonym)\""), "his edit, under the pseudonym")
        XCTAssertTrue(JSONWriter.string(.object(events)).contains("(typed by B)"), "the text he typed stays")
        XCTAssertEqual(try runAdmin(f.db, ["verify", "d"]).status, 0, "the log's chain is unchanged")
        XCTAssertEqual(try runAdmin(f.db, ["user", "erase", "bob"]).status, 1, "no user bob any more")
    }

    /// A superuser without the key swaps two entries' sealed ops within one
    /// document and re-seals the (unkeyed) chain: each event still applies
    /// and its inverse still undoes it (the entries set different keys), so
    /// only the sealing can tell. Sealed text is bound to its place
    /// (document, seq, entry id): `verify` with the key names the first
    /// moved entry, and a server refuses to open the document.
    func testSealedOpsSwappedBetweenEntriesAreCaughtByVerifyWithTheKey() throws {
        let f = try Fixture()
        for i in 0..<4 { try f.alice.submit("d", tx: "s\(i)", base: Int64(i), [["op": "set", "node": "root", "key": .string("k\(i)"), "value": .int(Int64(i))]]) }
        XCTAssertEqual(try runAdmin(f.db, ["verify", "d"]).status, 0)
        try f.db.db.execute(script: """
            ALTER TABLE log DISABLE TRIGGER USER;
            UPDATE log l SET ops = o.ops FROM (SELECT seq, ops FROM log WHERE doc = 'd' AND seq IN (2, 3)) o
            WHERE l.doc = 'd' AND l.seq IN (2, 3) AND o.seq = 5 - l.seq;
            ALTER TABLE log ENABLE TRIGGER USER;
            DELETE FROM snapshots WHERE doc = 'd';
            """ + resealSQL(doc: "d", from: "2"))
        XCTAssertEqual(try withoutMasterKey { try runAdmin(f.db, ["verify", "d"]) }.status, 0, "the re-sealed chain holds on its own")
        let swapped = try runAdmin(f.db, ["verify", "d"])
        XCTAssertEqual(swapped.status, 1, swapped.out + swapped.err)
        XCTAssertTrue(swapped.out.contains("d entry 2 (version 2): "), swapped.out)
        XCTAssertTrue(swapped.out.contains("of d do not open at their place"), swapped.out)

        f.server.kill9()
        let server = try ServerProcess(database: f.db)
        let a = try Terminal(port: server.port)
        try a.hello("alice", f.db)
        let open = try a.request("open", [("doc", "d")])
        XCTAssertEqual(open.errorCode, "internal", JSONWriter.string(.object(open)))
    }

    /// A database sealed before entries were bound to their place (each
    /// event's ops sealed for its document only, as releases before wrote
    /// them): verify passes with a note counting them; `migrate` without the
    /// key, or with a server running, warns and binds nothing (exit 0); with
    /// the key and the servers stopped it seals them again bound to their
    /// entry and re-chains the document, once. Then a swap of two entries'
    /// sealed ops, re-chained, fails verify with the key.
    func testMigrateBindsEntriesSealedBeforeToTheirPlace() throws {
        let f = try Fixture()
        for i in 0..<5 { try f.alice.submit("d", tx: "s\(i)", base: Int64(i), [["op": "set", "node": "root", "key": .string("k\(i)"), "value": .int(Int64(i))]]) }
        XCTAssertEqual(try f.alice.request("create_doc", [("doc", "e")])["ok"], true)
        try f.alice.submit("e", tx: "e0", base: 0, [["op": "set", "node": "root", "key": "k", "value": "bound already"]])
        // d's entries as a release before sealed them: opened, sealed again for the document only, the chain re-sealed.
        let cipher = try XCTUnwrap(try DocumentKeys(master: TestDatabase.masterKey).existing(doc: "d", db: f.db.db))
        try f.db.db.query("ALTER TABLE log DISABLE TRIGGER USER")
        for r in try f.db.db.query("SELECT seq, id, ops FROM log WHERE doc = 'd' AND entry = 'event' ORDER BY seq").values {
            let plain = try cipher.openEntry(r[2]!, seq: Int64(r[0]!)!, id: r[1]!)
            try f.db.db.query("UPDATE log SET ops = $1 WHERE doc = 'd' AND seq = $2", [cipher.sealEntryUnbound(ops: plain.ops, inverse: plain.inverse), r[0]!])
        }
        try f.db.db.execute(script: "ALTER TABLE log ENABLE TRIGGER USER; DELETE FROM snapshots WHERE doc = 'd';" + resealSQL(doc: "d", from: "1"))
        let unboundRows = "SELECT count(*) FROM log WHERE doc = 'd' AND entry = 'event' AND ops LIKE '~' || $1 || ':%'"
        XCTAssertEqual(try f.db.db.query(unboundRows, [cipher.keyID]).int(0, 0), 5)
        let state = try admin(f.db, "replay", "d")

        let noted = try runAdmin(f.db, ["verify"])
        XCTAssertEqual(noted.status, 0, noted.out + noted.err)
        XCTAssertTrue(noted.err.contains("note: 5 entries of 1 document(s) are sealed in the old form"), noted.err)
        XCTAssertTrue(noted.err.contains("rewind admin migrate --master-key-file FILE"), noted.err)
        try waitForServers(1, f.db)
        let noKey = try withoutMasterKey { try runAdmin(f.db, ["migrate"]) }
        XCTAssertEqual(noKey.status, 0, noKey.out + noKey.err)
        XCTAssertTrue(noKey.err.contains("warning: 1 document(s) hold entries sealed before entries were bound to their place"), noKey.err)
        XCTAssertTrue(noKey.err.contains(": d. Give the master key"), noKey.err)
        let running = try runAdmin(f.db, ["migrate"])
        XCTAssertEqual(running.status, 0, running.out + running.err)
        XCTAssertTrue(running.err.contains("1 server instance(s) are running on this database: stop them"), running.err)
        XCTAssertEqual(try f.db.db.query(unboundRows, [cipher.keyID]).int(0, 0), 5, "nothing bound under a running server")

        f.server.kill9()
        try waitForServers(0, f.db)
        let migrated = try admin(f.db, "migrate")
        XCTAssertEqual(migrated, """
            schema up to date
            bound d: 5 entries sealed again at their place, 5 re-chained
            bound 1 document(s); anchors taken before are superseded (take new ones: `rewind admin anchors`)

            """)
        XCTAssertEqual(try f.db.db.query(unboundRows, [cipher.keyID]).int(0, 0), 0)
        XCTAssertEqual(try f.db.db.query("SELECT count(*) FROM log WHERE doc = 'd' AND entry = 'event' AND ops LIKE '~' || $1 || '.2:%'",
                                         [cipher.keyID]).int(0, 0), 5)
        let verified = try runAdmin(f.db, ["verify"])
        XCTAssertEqual(verified.status, 0, verified.out + verified.err)
        XCTAssertFalse(verified.err.contains("old form"), verified.err)
        XCTAssertEqual(try admin(f.db, "replay", "d"), state, "the same document")
        XCTAssertEqual(try admin(f.db, "migrate"), "schema up to date\n", "nothing left to bind")
        let server = try ServerProcess(database: f.db)
        let a = try Terminal(port: server.port)
        try a.hello("alice", f.db)
        XCTAssertEqual(try a.request("open", [("doc", "d")])["version"], 5)

        // Bound now: the swap that went unseen before is caught with the key.
        try f.db.db.execute(script: """
            ALTER TABLE log DISABLE TRIGGER USER;
            UPDATE log l SET ops = o.ops FROM (SELECT seq, ops FROM log WHERE doc = 'd' AND seq IN (2, 3)) o
            WHERE l.doc = 'd' AND l.seq IN (2, 3) AND o.seq = 5 - l.seq;
            ALTER TABLE log ENABLE TRIGGER USER;
            """ + resealSQL(doc: "d", from: "2"))
        let swapped = try runAdmin(f.db, ["verify", "d"])
        XCTAssertEqual(swapped.status, 1, swapped.out + swapped.err)
        XCTAssertTrue(swapped.out.contains("d entry 2 (version 2): the sealed ops and inverse of entry 2"), swapped.out)
    }

    /// A database from before encryption: `rewind admin migrate` with the
    /// master key seals every document's content, re-chains it, and the
    /// document replays and verifies as before; without the key it says
    /// which documents are still plain (exit 1), and with a server running
    /// it refuses (exit 1).
    func testMigrateSealsADatabaseFromBeforeEncryption() throws {
        let db = try TestDatabase()
        let user = try db.db.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0)!
        try db.db.query("INSERT INTO documents (id, owner) VALUES ('old', $1)", [String(user)])
        // Entries as a server before encryption wrote them: a ledger without a key.
        var ledger = DocumentLedger(doc: "old")
        var rows: [LogRow] = []
        for (i, text) in ["PLAIN-ONE", "PLAIN-TWO", "PLAIN-THREE"].enumerated() {
            let s = DocumentLedger.Submission(tx: "p\(i)", base: ledger.version,
                                              ops: [.set("root", key: "k\(i)", value: .string(text))], action: nil, userID: user,
                                              userName: "alice", client: "c", eventID: UUID().uuidString.lowercased(), time: 1_000 + Int64(i))
            guard case let .appended(e) = try ledger.append(s) else { throw TestFailure("duplicate") }
            rows.append(e.row)
        }
        for r in rows {
            try db.db.query("""
                WITH c AS (UPDATE documents SET seq = $1::bigint, head = $2::bigint, head_hash = decode($11, 'hex') WHERE id = 'old' RETURNING 1)
                INSERT INTO log (doc, seq, version, entry, id, user_id, client, kind, grp, tx, tx_digest, base, ops, inverse, time, hash)
                SELECT 'old', $1::bigint, $2::bigint, 'event', $3::uuid, $4::bigint, 'c', 'edit', $5, $6, $7, $8::bigint, $9, $10, now(),
                       decode($11, 'hex') FROM c
                """, [String(r.seq), String(r.version), r.id, String(user), r.group, r.tx, r.txDigest,
                      String(r.base!), r.ops, r.inverse, Hex.string(r.hash)])
        }
        // The rows' time was stored as now(): chain them as stored before migrating.
        try db.db.execute(script: resealSQL(doc: "old", from: "1"))
        XCTAssertEqual(try runAdmin(db, ["verify", "old"]).status, 0)
        let state = try admin(db, "replay", "old")
        XCTAssertTrue(state.contains("PLAIN-TWO"))

        let withoutKey = try runProgram(ServerProcess.binDirectory + "/rewind",
                                        ["admin", "migrate", "--database", db.conninfo, "--master-key-file", "/nonexistent/key"])
        XCTAssertEqual(withoutKey.status, 1, withoutKey.out + withoutKey.err)

        let plain = try withoutMasterKey { try runAdmin(db, ["migrate"]) }
        XCTAssertEqual(plain.status, 1, plain.out + plain.err)
        XCTAssertTrue(plain.err.contains("1 document(s) hold plain text"), plain.err)

        // Never under a running server: it would append after a head hash that is gone.
        let early = try ServerProcess(database: db)
        try waitForServers(1, db)
        let refused = try runAdmin(db, ["migrate"])
        XCTAssertEqual(refused.status, 1, refused.out + refused.err)
        XCTAssertTrue(refused.err.contains("1 document(s) hold plain text from before encryption, and 1 server instance(s) are running"), refused.err)
        XCTAssertEqual(try db.db.query("SELECT count(*) FROM log WHERE ops LIKE '%PLAIN-%'").int(0, 0), 3, "nothing sealed")
        early.kill9()
        try waitForServers(0, db)

        let migrated = try admin(db, "migrate")
        XCTAssertTrue(migrated.contains("sealed old: 3 entries re-chained"), migrated)
        XCTAssertEqual(try db.db.query("SELECT count(*) FROM log WHERE ops LIKE '%PLAIN-%' OR inverse LIKE '%PLAIN-%'").int(0, 0), 0)
        XCTAssertEqual(try db.db.query("SELECT count(*) FROM log WHERE left(ops, 1) <> '~'").int(0, 0), 0)
        XCTAssertEqual(try runAdmin(db, ["verify", "old"]).status, 0)
        XCTAssertEqual(try admin(db, "replay", "old"), state, "the same document")
        XCTAssertEqual(try admin(db, "migrate"), "schema up to date\n", "nothing left to seal")
        let server = try ServerProcess(database: db)
        let a = try Terminal(port: server.port)
        try a.hello("alice", db)
        XCTAssertTrue(JSONWriter.string(.object(try a.request("open", [("doc", "old")]))).contains("PLAIN-THREE"))
    }
}
