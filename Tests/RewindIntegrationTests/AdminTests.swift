import Foundation
import Glibc
import RewindCore
import RewindStore
import XCTest

/// The operator's commands (docs/operating.md, "Operating Rewind"): export and import,
/// tail, stats, users, and the exit codes every admin command shares.
final class AdminTests: XCTestCase {
    // MARK: Helpers

    /// alice's document `d` with a history that has every kind of entry:
    /// edits by alice and bob (unicode text included), an explicit group
    /// (its closing mark), an undo (refers to a group), a rename and a clear.
    func writeHistory(_ f: Fixture) throws {
        let a = f.alice
        let bob = try f.terminal("bob")
        var v = try a.submit("d", tx: "seed", base: 0, [
            ["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text", "frame": [0, 0, 100, 20], "focusable": true, "text": "hello"],
            ["op": "create", "node": "box", "parent": "root", "index": 1, "kind": "box", "frame": [0, 0, 10, 10]],
        ])
        for t in [a, bob] { XCTAssertEqual(try t.request("open", [("doc", "d")])["ok"], true) }
        let begun = try a.request("begin_group", [("doc", "d"), ("action", "Move")])
        XCTAssertEqual(begun["ok"], true, JSONWriter.string(.object(begun)))
        v = try a.submit("d", tx: "m1", base: v, [["op": "set", "node": "box", "key": "frame", "value": [5, 0, 10, 10]]])
        v = try a.submit("d", tx: "m2", base: v, [["op": "set", "node": "box", "key": "frame", "value": [9, 0, 10, 10]]])
        XCTAssertEqual(try a.request("end_group", [("doc", "d")])["ok"], true)
        v = try bob.submit("d", tx: "b1", base: v, [["op": "insert", "node": "t", "pos": 5, "text": " wörld 😀"]])
        XCTAssertEqual(try a.request("undo", [("doc", "d")])["ok"], true)
        v = try head(f.db)
        v = try a.submit("d", tx: "k1", base: v, [["op": "set", "node": "t", "key": "color", "value": "ré\"d\\"]])
        XCTAssertEqual(try a.request("set_action", [("doc", "d"), ("action", "Paint")])["ok"], true)
        v = try bob.submit("d", tx: "b2", base: v, [["op": "remove", "node": "t", "pos": 0, "len": 1]])
        XCTAssertEqual(try bob.request("clear_history", [("doc", "d"), ("tx", "c1")])["ok"], true)
        _ = try bob.submit("d", tx: "b3", base: v, [["op": "delete", "node": "box"]])
        let kinds = try f.db.db.query("SELECT DISTINCT kind FROM log WHERE doc = 'd' ORDER BY kind").values.compactMap { $0[0] }
        XCTAssertEqual(kinds, ["clear", "close", "edit", "rename", "undo"], "the history covers events and marks of every kind used here")
    }

    func head(_ db: TestDatabase, _ doc: String = "d") throws -> Int64 {
        try XCTUnwrap(try db.db.query("SELECT head FROM documents WHERE id = $1", [doc]).int(0, 0))
    }

    func temporaryFile(_ name: String) -> String {
        let path = NSTemporaryDirectory() + "rewind-admin-\(getpid())-\(name)"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    /// The document at every version, in both databases, is the same.
    func assertSameAtEveryVersion(_ a: TestDatabase, _ docA: String, _ b: TestDatabase, _ docB: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let top = try head(a, docA)
        XCTAssertEqual(try head(b, docB), top, file: file, line: line)
        for version in 0...top {
            let x = try Replay.document(docA, to: version, db: a.db).document.json
            let y = try Replay.document(docB, to: version, db: b.db).document.json
            XCTAssertEqual(x, y, "state at version \(version)", file: file, line: line)
        }
    }

    // MARK: Export and import

    /// Export → import into a fresh database with the same users → export
    /// gives the same bytes, the copy verifies, and it replays to the same
    /// state at every version.
    func testExportImportRoundTripIsByteIdenticalAndReplaysTheSame() throws {
        let f = try Fixture()
        try writeHistory(f)
        let first = temporaryFile("first.jsonl"), second = temporaryFile("second.jsonl")
        XCTAssertEqual(try admin(f.db, "export", "d", "--out", first), "")
        let exported = try String(contentsOfFile: first, encoding: .utf8)
        XCTAssertEqual(try admin(f.db, "export", "d"), exported, "stdout and --out hold the same lines")
        let lines = exported.split(separator: "\n")
        let entries = try XCTUnwrap(try f.db.db.query("SELECT count(*) FROM log WHERE doc = 'd'").int(0, 0))
        XCTAssertEqual(Int64(lines.count), 1 + entries, "a header, then one line per entry")
        XCTAssertTrue(lines[0].hasPrefix("{\"document\":\"d\""), String(lines[0]))
        XCTAssertTrue(lines[0].contains("\"access\":[{\"user\":\"bob\",\"role\":\"editor\"}]"), String(lines[0]))
        // The content comes out opened (the database holds it sealed), under the file's own chain.
        let sealed = try XCTUnwrap(try f.db.db.query("SELECT ops FROM log WHERE doc = 'd' AND entry = 'event' LIMIT 1")[0, 0])
        XCTAssertTrue(sealed.hasPrefix("~"), "stored sealed: \(sealed.prefix(20))")
        XCTAssertFalse(exported.contains("\"ops\":\"~"), "no sealed text in the file")
        let headerHash = try XCTUnwrap(try JSONParser.parse(String(lines[0]), maxDepth: 8).objectValue?["hash"]?.stringValue)
        XCTAssertTrue(lines.last!.hasSuffix("\"hash\":\"\(headerHash)\"}"), "the last entry carries the header's hash")

        let target = try TestDatabase()
        let imported = try runAdmin(target, ["import", first])
        XCTAssertEqual(imported.status, 0, imported.err)
        XCTAssertEqual(imported.out, "imported d: \(entries) entries (re-chained: sealed with the document's own key here, so every hash is new)\n")
        XCTAssertNotEqual(try target.db.query("SELECT ops FROM log WHERE doc = 'd' AND seq = 1")[0, 0],
                          try f.db.db.query("SELECT ops FROM log WHERE doc = 'd' AND seq = 1")[0, 0], "sealed with the copy's own key")
        XCTAssertEqual(try admin(target, "export", "d", "--out", second), "")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: second)), try Data(contentsOf: URL(fileURLWithPath: first)), "byte-identical")
        XCTAssertEqual(try runAdmin(target, ["verify", "d"]).status, 0)
        try assertSameAtEveryVersion(f.db, "d", target, "d")
        // Its editors are noted as the server's writers note them (schema/025), at their last edit.
        let editors = "SELECT u.name, e.last_edit FROM document_editors e JOIN users u ON u.id = e.user_id WHERE e.doc = 'd' ORDER BY 1"
        let lastEdits = """
            SELECT u.name, max(l.time) FROM log l JOIN users u ON u.id = l.user_id
            WHERE l.doc = 'd' AND l.entry = 'event' GROUP BY 1 ORDER BY 1
            """
        XCTAssertFalse(try target.db.query(editors).values.isEmpty)
        XCTAssertEqual(try target.db.query(editors).values, try target.db.query(lastEdits).values)

        // A server on the copy serves it: bob (an editor there too) edits on top.
        let server = try ServerProcess(database: target)
        let bob = try Terminal(port: server.port)
        try bob.hello("bob", target)
        let top = try head(target)
        XCTAssertEqual(try bob.submit("d", tx: "after-import", base: top, [["op": "set", "node": "root", "key": "k", "value": 1]]), top + 1)

        // --to: a prefix of the same lines, its header ending at that version.
        let upTo3 = try admin(f.db, "export", "d", "--to", "3")
        let partial = upTo3.split(separator: "\n")
        XCTAssertTrue(partial[0].contains("\"version\":3,"), String(partial[0]))
        XCTAssertEqual(Array(partial.dropFirst()), Array(lines.dropFirst().prefix(partial.count - 1)))
    }

    /// A document that exists is refused (and names --as); a changed or cut
    /// file is refused before anything is written.
    func testImportRefusesAnExistingDocumentAndATamperedFile() throws {
        let f = try Fixture()
        try writeHistory(f)
        let file = temporaryFile("d.jsonl")
        try admin(f.db, "export", "d", "--out", file)
        let before = try f.db.db.query("SELECT count(*) FROM log").int(0, 0)

        let exists = try runAdmin(f.db, ["import", file])
        XCTAssertEqual(exists.status, 1)
        XCTAssertTrue(exists.err.contains("document \"d\" already exists"), exists.err)
        XCTAssertTrue(exists.err.contains("--as NEWID"), exists.err)
        XCTAssertEqual(try f.db.db.query("SELECT count(*) FROM log").int(0, 0), before)

        let text = try String(contentsOfFile: file, encoding: .utf8)
        var lines = text.split(separator: "\n").map(String.init)
        let i = try XCTUnwrap(lines.firstIndex { $0.contains("\"tx\":\"m2\"") })
        lines[i] = lines[i].replacingOccurrences(of: "[9,0,10,10]", with: "[99,0,10,10]")
        let tampered = temporaryFile("tampered.jsonl")
        try (lines.joined(separator: "\n") + "\n").write(toFile: tampered, atomically: true, encoding: .utf8)
        let cut = temporaryFile("cut.jsonl")
        try (text.split(separator: "\n").dropLast().joined(separator: "\n") + "\n").write(toFile: cut, atomically: true, encoding: .utf8)

        let target = try TestDatabase(users: ["alice"])
        let refused = try runAdmin(target, ["import", tampered])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.err.contains("line \(i + 1): the hash chain of \"d\" breaks at entry"), refused.err)
        XCTAssertTrue(refused.err.contains("what to do: export the documents again"), refused.err)
        let short = try runAdmin(target, ["import", cut])
        XCTAssertEqual(short.status, 1)
        XCTAssertTrue(short.err.contains("cut short"), short.err)
        XCTAssertEqual(try target.db.query("SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM log), (SELECT count(*) FROM users)").values,
                       [["0", "0", "1"]], "nothing imported, not even bob")
    }

    /// --as copies a document beside its original (new id, new entry ids,
    /// re-chained); into a database whose user ids differ, entries are
    /// re-chained and a missing user is created without a token.
    func testImportAsANewIdAndIntoOtherUsersRechains() throws {
        let f = try Fixture()
        try writeHistory(f)
        let file = temporaryFile("d.jsonl")
        try admin(f.db, "export", "d", "--out", file)

        let copy = try runAdmin(f.db, ["import", file, "--as", "d2"])
        XCTAssertEqual(copy.status, 0, copy.err)
        XCTAssertTrue(copy.out.contains("imported d as d2:"), copy.out)
        XCTAssertTrue(copy.out.contains("re-chained"), copy.out)
        XCTAssertEqual(try runAdmin(f.db, ["verify"]).status, 0, "both documents verify")
        try assertSameAtEveryVersion(f.db, "d", f.db, "d2")
        XCTAssertEqual(try f.db.db.query("SELECT count(*) FROM log a JOIN log b ON a.id = b.id WHERE a.doc = 'd' AND b.doc = 'd2'").int(0, 0), 0)
        XCTAssertEqual(try f.db.db.query("SELECT u.name, a.role FROM access a JOIN users u ON u.id = a.user_id WHERE doc = 'd2'").values, [["bob", "editor"]])
        XCTAssertEqual(try runAdmin(f.db, ["import", file, "--as", "d2"]).status, 1, "d2 exists now")

        let other = try TestDatabase(users: ["carol", "alice"])  // alice is 2 here, bob missing
        let moved = try runAdmin(other, ["import", file])
        XCTAssertEqual(moved.status, 0, moved.err)
        XCTAssertTrue(moved.out.contains("created user bob (without a token: `rewind admin user token bob` issues one)"), moved.out)
        XCTAssertTrue(moved.out.contains("imported d: "), moved.out)
        XCTAssertTrue(moved.out.contains("re-chained"), moved.out)
        XCTAssertEqual(try other.db.query("SELECT count(*) FROM tokens t JOIN users u ON u.id = t.user_id WHERE u.name = 'bob'").int(0, 0), 0)
        XCTAssertEqual(try other.db.query("SELECT u.name FROM documents d JOIN users u ON u.id = d.owner").values, [["alice"]])
        XCTAssertEqual(try runAdmin(other, ["verify", "d"]).status, 0)
        try assertSameAtEveryVersion(f.db, "d", other, "d")
    }

    // MARK: Tail

    /// A submit through a real server reaches a running `tail` within a
    /// second, as a JSON line; the human form names time, doc, version, user, kind and ops.
    func testTailSeesANewEventWithinASecond() throws {
        let f = try Fixture()
        let v = try f.alice.submit("d", tx: "first", base: 0, [["op": "set", "node": "root", "key": "k", "value": 1]])
        let tail = try ChildProcess(ServerProcess.binDirectory + "/rewind", ["admin", "tail", "d", "--json", "--database", f.db.conninfo],
                                    stdout: .pipe, stderr: .null)
        defer { _ = try? tail.stop(timeout: 30) }
        // Ready once it has named itself (after LISTEN and reading the head).
        let deadline = Date().addingTimeInterval(10)
        while try f.db.db.query("SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = 'rewind-tail'", [f.db.name]).count == 0 {
            guard Date() < deadline else { return XCTFail("tail did not start") }
            usleep(20_000)
        }
        let sent = Date()
        try f.alice.submit("d", tx: "second", base: v, [["op": "set", "node": "root", "key": "k", "value": 2]])
        let line = try XCTUnwrap(readLine(tail.stdoutFD, timeout: 1.0), "no line within a second")
        XCTAssertLessThan(Date().timeIntervalSince(sent), 1.0)
        let o = try XCTUnwrap(try JSONParser.parse(line).objectValue)
        XCTAssertEqual(o["doc"], "d")
        XCTAssertEqual(o["version"], .int(v + 1))
        XCTAssertEqual(o["user"], "alice")
        XCTAssertEqual(o["kind"], "edit")
        XCTAssertEqual(o["ops"], [["op": "set", "node": "root", "key": "k", "value": 2]])

        // The human form, from the start (--since 0), stops where the log does.
        let human = try ChildProcess(tail.path, ["admin", "tail", "--since", "0", "--database", f.db.conninfo], stdout: .pipe, stderr: .inherit)
        defer { _ = try? human.stop(timeout: 30) }
        let first = try XCTUnwrap(readLine(human.stdoutFD, timeout: 5))
        XCTAssertTrue(first.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z  d  v1  alice  edit  set root\.k=1$"#, options: .regularExpression) != nil, first)
        XCTAssertTrue(try XCTUnwrap(readLine(human.stdoutFD, timeout: 5)).hasSuffix("d  v2  alice  edit  set root.k=2"))
    }

    /// A line from `fd` within `timeout` seconds (nil: none).
    func readLine(_ fd: Int32, timeout: Double) -> String? {
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var b: UInt8 = 0
            guard read(fd, &b, 1) == 1 else { return nil }
            if b == 0x0A { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(b)
        }
    }

    // MARK: Stats

    /// The numbers `stats` prints are the log's own counts.
    func testStatsMatchTheLog() throws {
        let f = try Fixture()
        try writeHistory(f)
        try f.alice.request("create_doc", [("doc", "e")])
        try f.alice.submit("e", tx: "e1", base: 0, [["op": "set", "node": "root", "key": "k", "value": 1]])
        let q = { (sql: String) throws -> Int64 in try XCTUnwrap(try f.db.db.query(sql).int(0, 0)) }

        let all = try XCTUnwrap(try JSONParser.parse(try admin(f.db, "stats", "--json")).objectValue)
        XCTAssertEqual(all["doc"], .null)
        XCTAssertEqual(all["documents"], .int(try q("SELECT count(*) FROM documents")))
        XCTAssertEqual(all["events"], .int(try q("SELECT count(*) FROM log WHERE entry = 'event'")))
        XCTAssertEqual(all["marks"], .int(try q("SELECT count(*) FROM log WHERE entry = 'mark'")))
        XCTAssertEqual(all["snapshots"], .int(try q("SELECT count(*) FROM snapshots")))
        XCTAssertEqual(all["log_bytes"], .int(try q("SELECT pg_total_relation_size('log')")))
        let days = try XCTUnwrap(all["events_per_day"]?.arrayValue)
        XCTAssertEqual(days.count, 14)
        XCTAssertEqual(days.last?.objectValue?["events"], all["events"], "every event was written today")
        XCTAssertEqual(days.last?.objectValue?["day"], .string(try XCTUnwrap(try f.db.db.query("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD')")[0, 0])))
        let top = try XCTUnwrap(all["top_users"]?.arrayValue?.compactMap(\.objectValue))
        XCTAssertEqual(top.map { $0["user"] }, ["alice", "bob"])
        XCTAssertEqual(top.first?["events"], .int(try q("SELECT count(*) FROM log l JOIN users u ON u.id = l.user_id WHERE entry = 'event' AND u.name = 'alice'")))

        let one = try XCTUnwrap(try JSONParser.parse(try admin(f.db, "stats", "d", "--json")).objectValue)
        XCTAssertEqual(one["documents"], 1)
        XCTAssertEqual(one["events"], .int(try q("SELECT count(*) FROM log WHERE doc = 'd' AND entry = 'event'")))
        XCTAssertEqual(one["marks"], .int(try q("SELECT count(*) FROM log WHERE doc = 'd' AND entry = 'mark'")))
        XCTAssertEqual(one["bytes_are_estimate"], true)

        let text = try admin(f.db, "stats")
        XCTAssertTrue(text.contains("  events          \(try q("SELECT count(*) FROM log WHERE entry = 'event'"))\n"), text)
        XCTAssertTrue(text.contains("top users (events)\n  alice  "), text)
    }

    // MARK: Users

    /// `user list` shows tokens; `user revoke` takes them away, and the old token no longer says hello.
    func testUserListAndRevoke() throws {
        let f = try Fixture()
        try admin(f.db, "user", "token", "bob")
        let listed = try admin(f.db, "user", "list", "--json").split(separator: "\n").compactMap { try? JSONParser.parse(String($0)).objectValue }
        XCTAssertEqual(listed.map { $0["user"] }, ["alice", "bob"])
        XCTAssertEqual(listed.map { $0["tokens"] }, [1, 2])
        XCTAssertEqual(listed.map { $0["owns"] }, [1, 0])
        XCTAssertEqual(listed.map { $0["shared"] }, [0, 1])

        XCTAssertEqual(try admin(f.db, "user", "revoke", "bob"), "revoked 2 token(s) of bob\n")
        let table = try admin(f.db, "user", "list")
        XCTAssertTrue(table.contains("USER"), table)
        XCTAssertNotNil(table.range(of: #"\nbob +\S+ +0 +2 +0 +1\n"#, options: .regularExpression), table)
        let bob = try Terminal(port: f.server.port)
        let hello = try bob.request("hello", [("user", "bob"), ("token", .string(f.db.tokens["bob"]!))])
        XCTAssertEqual(hello.errorCode, "unauthorized")

        let nobody = try runAdmin(f.db, ["user", "revoke", "nobody"])
        XCTAssertEqual(nobody.status, 1)
        XCTAssertTrue(nobody.err.contains("no user \"nobody\""), nobody.err)
        XCTAssertTrue(nobody.err.contains("what to do: "), nobody.err)
        XCTAssertEqual(try runAdmin(f.db, ["user", "add", "alice"]).status, 1, "a name taken is refused")
    }

    /// `rewind admin statement` (hidden, for scripts/bench/pgwork) prints the
    /// statements the writers prepare, so that the benchmark runs what the
    /// server runs: each parses and claims as the server's does; the one for
    /// a batch that notes no editors (pgwork's) has no upsert of
    /// `document_editors`, the other (`--noting`) has it.
    func testStatementPrintsTheWritersAppendStatement() throws {
        let db = try TestDatabase()
        let quiet = try runRewind(["admin", "statement"])
        XCTAssertEqual(quiet.status, 0, quiet.err)
        XCTAssertTrue(quiet.out.contains("rewind_claim_heads(") && !quiet.out.contains("INSERT INTO document_editors"), quiet.out)
        try db.db.query("PREPARE quiet AS " + quiet.out)
        let noting = try runRewind(["admin", "statement", "--noting"])
        XCTAssertEqual(noting.status, 0, noting.err)
        XCTAssertTrue(noting.out.contains("rewind_claim_heads(") && noting.out.contains("INSERT INTO document_editors"), noting.out)
        try db.db.query("PREPARE noting AS " + noting.out)
        XCTAssertFalse(try runRewind(["admin", "--help"]).out.contains("statement"), "hidden from the admin's help")
    }

    // MARK: Exit codes

    /// 3 when the database cannot be reached, 2 on a usage error, 1 when
    /// refused; each failure says what to do.
    func testExitCodesOfEveryAdminCommand() throws {
        let db = try TestDatabase()
        try db.db.query("INSERT INTO documents (id, owner) VALUES ('d', 1), ('e', 2)")
        let file = temporaryFile("d.jsonl")
        try admin(db, "export", "d", "--out", file)
        let nowhere = ["--database", "host=/nonexistent"]
        for args in [["migrate"], ["replay", "d"], ["verify"], ["anchors"], ["export", "--all"], ["import", file], ["tail"], ["stats"],
                     ["user", "add", "x"], ["user", "token", "x"], ["user", "list"], ["user", "revoke", "x"], ["grant", "d", "x", "editor"],
                     ["revoke", "d", "x"]] {
            let r = try runRewind(["admin"] + args + nowhere)
            XCTAssertEqual(r.status, 3, "\(args): \(r.err)")
            XCTAssertTrue(r.err.contains("what to do: check that PostgreSQL is running"), "\(args): \(r.err)")
        }
        for args in [["export"], ["export", "d", "--all"], ["import"], ["tail", "--since", "-1"], ["stats", "a", "b"], ["replay"],
                     ["verify", "--no-such-flag"], ["grant", "d", "bob", "owner"], ["user", "add", ""]] {
            let r = try runAdmin(db, args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.err)")
        }
        for args in [["export", "nope"], ["stats", "nope"], ["tail", "nope"], ["replay", "nope"], ["verify", "nope"],
                     ["import", "/nonexistent/file"], ["import", file]] {
            let r = try runAdmin(db, args)
            XCTAssertEqual(r.status, 1, "\(args): \(r.err)")
        }
        // Each failure names the mistake and the command's own usage, not the top level's.
        let grant = try runAdmin(db, ["grant", "d", "bob", "admin"])
        XCTAssertEqual(grant.status, 2)
        XCTAssertTrue(grant.err.contains("'editor'") && grant.err.contains("'viewer'"), grant.err)
        XCTAssertTrue(grant.err.contains("rewind admin grant"), "the grant command's usage: \(grant.err)")
        for args in [["replay", "d", "--to", "-1"], ["export", "d", "--to", "-1"], ["tail", "--since", "-1"]] {
            let r = try runAdmin(db, args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.err)")
            XCTAssertTrue(r.err.contains("must be 0 or more"), "\(args): a negative number is the value, refused as one: \(r.err)")
        }
        let beyond = try runAdmin(db, ["replay", "d", "--to", "99"])
        XCTAssertEqual(beyond.status, 1)
        XCTAssertTrue(beyond.err.contains("what to do: give --to between 0 and the document's head"), beyond.err)
        // A typo in a document's name is a typo, not a broken chain.
        let typo = try runAdmin(db, ["verify", "d", "nosuch"])
        XCTAssertEqual(typo.status, 1)
        XCTAssertTrue(typo.err.contains("what to do: nosuch is not in this database: check the name"), typo.err)
        XCTAssertFalse(typo.err.contains("restore the document"), typo.err)
        let anchorsFile = try runAdmin(db, ["verify", "--anchors", "/nonexistent/anchors"])
        XCTAssertEqual(anchorsFile.status, 2)
        XCTAssertTrue(anchorsFile.err.contains("cannot read the anchors file"), anchorsFile.err)
        XCTAssertFalse(anchorsFile.err.contains("Usage: rewind <subcommand>"), anchorsFile.err)
        let two = temporaryFile("two.jsonl")
        try admin(db, "export", "--all", "--out", two)
        let renameTwo = try runAdmin(db, ["import", two, "--as", "x"])
        XCTAssertEqual(renameTwo.status, 2, "--as renames a file's only document: \(renameTwo.err)")
        let top = try runRewind(["--help"])
        for line in ["admin", "connect", "rewind admin --help", "Exit status: 0 ok"] {
            XCTAssertTrue(top.out.contains(line), "rewind --help names \(line): \(top.out)")
        }
        let help = try runRewind(["admin", "--help"])
        // Generated by argument-parser from the commands themselves: none can be missing from it.
        for command in ["migrate", "replay", "verify", "anchors", "export", "import", "tail", "stats", "user", "grant", "revoke",
                        "undelete", "purge", "master-key", "rotate-master-key"] {
            XCTAssertTrue(help.out.contains("  \(command) "), "admin --help lists \(command): \(help.out)")
        }
    }
}
