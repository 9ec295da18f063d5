import RewindCore
@testable import RewindStore
import XCTest

/// The threads that read a log's pages for replay and verify (two, each on
/// its own connection, taking turns by page) ask PostgreSQL for each next
/// page before they decode the one they hold: every entry must still come
/// once, in order, whatever the page size; a log shorter than its head is an
/// error, not a wait; and a reader stopped early leaves its connection usable.
final class LogPageReaderTests: XCTestCase {
    /// Log pages are read in place from the result (`ResultRows`: no
    /// `String` per cell); other reads go through `Rows`. Both must decode
    /// the same rows to the same entries: events with and without an action,
    /// an undo (refers, meta), marks with a scope and selection, text
    /// outside ASCII, and NULLs where a column may have them.
    func testAPageReadInPlaceDecodesAsTheSameRowsReadAsText() throws {
        let (db, server, t) = try documentWithTextNode()
        defer { withExtendedLifetime(server) {} }
        try t.request("begin_group", [("doc", "d"), ("action", "Schreiben ✍︎")])
        try t.submit("d", tx: "a", base: 1, [["op": "insert", "node": "n", "pos": 0, "text": "héllo 𝄞"]])
        try t.request("end_group", [("doc", "d")])
        try t.submit("d", tx: "b", base: 2, [["op": "set", "node": "n", "key": "colour", "value": "red"]])
        try t.request("undo", [("doc", "d")])
        try t.request("redo", [("doc", "d")])
        try t.request("clear_history", [("doc", "d")])
        let head = try db.db.query("SELECT seq FROM documents WHERE id = 'd'").int(0, 0)!
        XCTAssertGreaterThan(head, 6)
        let cipher = try DocumentKeys.cipher(for: "d", keys: DocumentKeys(master: TestDatabase.masterKey), db: db.db)
        let page = LogRows.range(doc: "d", afterSeq: 0, toSeq: head, limit: 1_000)
        try db.db.send(page)
        let asText = try LogRows.decode(doc: "d", try db.db.receive(), cipher: cipher)
        try db.db.send(page)
        var links: LogRows.Links? = LogRows.Links()
        let inPlace = try LogRows.decode(doc: "d", try db.db.receiveRows(), cipher: cipher, links: &links)
        XCTAssertEqual(asText.count, Int(head))
        XCTAssertEqual(inPlace, asText)
        XCTAssertEqual(links?.linked, Int(head), "every entry chains to the one before it, checked as it was read")
        XCTAssertNil(links?.broken)
        XCTAssertTrue(asText.contains { if case let .mark(m) = $0 { return m.kind == .clear }; return false })
        XCTAssertTrue(asText.contains { if case let .event(e) = $0 { return e.refers != nil && e.action == nil }; return false }, "an undo")

        // Numbers as PostgreSQL writes them, read from their bytes as `Int64(_:)` reads the text.
        for text in ["0", "7", "-1", "-0", "42", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                     "-9223372036854775809", "99999999999999999999", "", "-", "1-", "1 ", " 1", "0x1", "١"] {
            var bytes = Array(text.utf8)
            let read = bytes.withUnsafeMutableBufferPointer { Bytes.decimal(UnsafeBufferPointer($0)) }
            XCTAssertEqual(read, Int64(text), "\"\(text)\"")
        }
    }

    func testPagesAskedAheadHoldEveryEntryOnceInOrder() throws {
        let (db, server, t) = try documentWithTextNode()
        defer { withExtendedLifetime(server) {} }
        for i in 1..<23 { try t.submit("d", tx: "t\(i)", base: Int64(i), [["op": "insert", "node": "n", "pos": 0, "text": "x"]]) }
        try t.request("begin_group", [("doc", "d")])
        try t.submit("d", tx: "t23", base: 23, [["op": "insert", "node": "n", "pos": 0, "text": "y"]])
        try t.request("end_group", [("doc", "d")])
        let head = try db.db.query("SELECT seq FROM documents WHERE id = 'd'").int(0, 0)!
        XCTAssertEqual(head, 25, "24 events and a mark")
        let cipher = try DocumentKeys.cipher(for: "d", keys: DocumentKeys(master: TestDatabase.masterKey), db: db.db)

        for (pageSize, stop, endsAtEmptyPage) in [(5, head, false), (4, head, false), (25, head, false), (7, Int64.max, true), (1, 10, false)] {
            let reader = try LogPageReader(doc: "d", db: db.db, toSeq: stop, cipher: cipher, pageSize: pageSize, endsAtEmptyPage: endsAtEmptyPage)
            var seqs: [Int64] = [], page: [LogEntry] = []
            while seqs.last ?? 0 < min(stop, head) {
                page = try reader.next(done: page)
                XCTAssertLessThanOrEqual(page.count, pageSize)
                seqs += page.map(\.seq)
            }
            if endsAtEmptyPage { XCTAssertEqual(try reader.next(done: page).count, 0, "the page after the end is empty") }
            reader.finish()
            XCTAssertEqual(seqs, Array(1...min(stop, head)), "page size \(pageSize)")
        }

        // Told of a head past the log's end: every entry, then an error — not a wait on a worker that is done.
        let beyond = try LogPageReader(doc: "d", db: db.db, toSeq: head + 2, cipher: cipher, pageSize: 10)
        var got: [Int64] = [], last: [LogEntry] = [], failure: RewindError?
        do {
            while true {
                last = try beyond.next(done: last)
                got += last.map(\.seq)
            }
        } catch { failure = error }
        beyond.finish()
        XCTAssertEqual(got, Array(1...head))
        XCTAssertTrue(failure?.message.contains("ends before entry \(head + 2)") ?? false, "\(String(describing: failure))")

        // Stopped after its first page, with the next one asked for: the connection answers the next query.
        let early = try LogPageReader(doc: "d", db: db.db, toSeq: head, cipher: cipher, pageSize: 3)
        XCTAssertEqual(try early.next().map(\.seq), [1, 2, 3])
        early.finish()
        XCTAssertEqual(try db.db.query("SELECT count(*) FROM log WHERE doc = 'd'").int(0, 0), head)
        XCTAssertEqual(try Replay.document("d", db: db.db).document["n"]?.text.count, 23)
        XCTAssertNil(try Verify.document("d", db: db.db))

        // The chain is checked by the thread that applies the pages: a changed entry is named.
        try db.db.execute(script: """
            ALTER TABLE log DISABLE TRIGGER USER;
            UPDATE log SET ops = (SELECT ops FROM log WHERE doc = 'd' AND seq = 11) WHERE doc = 'd' AND seq = 12;
            ALTER TABLE log ENABLE TRIGGER USER;
            """)
        // Replay's readers check each entry against the one before it in its page: up to the break, then the break.
        let linking = try LogPageReader(doc: "d", db: db.db, toSeq: head, cipher: cipher, pageSize: 5, checksLinks: true)
        var pages: [LogPageReader.Page] = []
        for _ in 0..<3 { pages.append(try linking.nextPage()) }
        linking.finish()
        XCTAssertEqual(pages.map(\.linked), [5, 5, 1], "pages 1–5 and 6–10 whole; 11–15 checked up to entry 12")
        XCTAssertNil(pages[0].broken)
        XCTAssertTrue(pages[2].broken?.message.contains("breaks at entry 12") ?? false, "\(String(describing: pages[2].broken))")
        let replayed = runReplay(db)
        XCTAssertTrue(replayed.contains("breaks at entry 12"), replayed)
        let problem = try Verify.document("d", db: db.db)
        XCTAssertTrue(problem?.hasPrefix("d entry 12 (version 12): the hash chain of d breaks at entry 12") ?? false, problem ?? "no problem found")

        // A gap: the reader hands over what is there, and verify names the gap.
        try db.db.execute(script: """
            ALTER TABLE log DISABLE TRIGGER USER;
            DELETE FROM log WHERE doc = 'd' AND seq = 12;
            ALTER TABLE log ENABLE TRIGGER USER;
            """)
        let gapped = try LogPageReader(doc: "d", db: db.db, toSeq: head, cipher: cipher, pageSize: 5)
        var seqs: [Int64] = []
        var page: [LogEntry] = []
        while seqs.last ?? 0 < head {
            page = try gapped.next(done: page)
            seqs += page.map(\.seq)
        }
        gapped.finish()
        XCTAssertEqual(seqs, Array(1...11) + Array(13...head))
        let skipping = try LogPageReader(doc: "d", db: db.db, toSeq: head, cipher: cipher, pageSize: 5, checksLinks: true)
        _ = try skipping.nextPage(); _ = try skipping.nextPage()
        let gapPage = try skipping.nextPage()
        skipping.finish()
        XCTAssertEqual(gapPage.entries.map(\.seq), [11, 13, 14, 15])
        XCTAssertEqual(gapPage.linked, 1, "checked up to the gap, which is the caller's to name")
        XCTAssertNil(gapPage.broken)
        let gap = try Verify.document("d", db: db.db)
        XCTAssertTrue(gap?.contains("the log jumps from entry 11 to 13") ?? false, gap ?? "no problem found")
    }

    /// What `Replay.document` throws for `d`, as text ("" if it replays).
    private func runReplay(_ db: TestDatabase) -> String {
        do {
            _ = try Replay.document("d", db: db.db)
            return ""
        } catch {
            return "\(error)"
        }
    }

    /// A server, alice's terminal with document `d` open, and a text node `n` in it (version 1).
    private func documentWithTextNode() throws -> (TestDatabase, ServerProcess, Terminal) {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let t = try Terminal(port: server.port)
        try t.hello("alice", db)
        try t.request("create_doc", [("doc", "d")])
        try t.request("open", [("doc", "d")])
        try t.submit("d", tx: "seed", base: 0, [["op": "create", "node": "n", "parent": "root", "kind": "text", "text": ""]])
        return (db, server, t)
    }
}
