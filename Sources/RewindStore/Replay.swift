import RewindCore

/// Rebuilding a document from the log, for the admin CLI. It runs the same
/// `DocumentLedger.replay` as the server, so both agree by construction, and
/// checks the hash chain as it goes (on the thread that reads the pages).
public enum Replay {
    /// The document at `version` (default: the head), with the group marks
    /// that follow that version's event.
    /// `keys`: to open the sealed content (a purged document is refused).
    public static func document(_ doc: String, to version: Int64? = nil, db: Database, keys: DocumentKeys?,
                                progress: ((Int64, Int64) -> Void)? = nil) throws(RewindError) -> DocumentLedger {
        let head = try db.query("SELECT head, seq FROM documents WHERE id = $1", [doc])
        guard head.count == 1, let headVersion = head.int(0, 0), let headSeq = head.int(0, 1) else { throw .notFound("no document \"\(doc)\"") }
        let target = version ?? headVersion
        guard target >= 0 else { throw .badRequest("version must be 0 or more") }
        guard target <= headVersion else {
            throw RewindError(.version, "version \(target) is beyond the head \(headVersion)", details: ["head": .int(headVersion)])
        }
        let stop = target == headVersion
            ? headSeq
            : try db.query("SELECT coalesce(max(seq), 0) FROM log WHERE doc = $1 AND version <= $2", [doc, String(target)]).int(0, 0) ?? 0
        let cipher = try DocumentKeys.cipher(for: doc, keys: keys, db: db)
        var ledger = DocumentLedger(doc: doc)
        // Pages are read and decoded on two other threads (`LogPageReader`),
        // which also check each entry's hash against the one before it in its
        // page; here each page's first entry is checked against the page
        // before, and the entries applied. Applying is then about as much work
        // as either reader's share (perf, 1,000,000 events).
        let reader = try LogPageReader(doc: doc, db: db, toSeq: stop, cipher: cipher, checksLinks: true)
        defer { reader.finish() }
        var previous: [UInt8] = []
        var page = LogPageReader.Page()
        while ledger.seq < stop {
            page = try reader.nextPage(done: page.entries)
            for i in page.entries.indices {  // by index: each entry borrowed, not copied
                if i == page.linked, let broken = page.broken { throw broken }
                if i == 0 || i >= page.linked { try DocumentLedger.checkChain(page.entries[i], doc: doc, after: previous) }
                previous = page.entries[i].hash
                try ledger.replay(page.entries[i], verify: false)
            }
            // A break just past the page's entries: that row's sealed text did not open either.
            if page.linked == page.entries.count, let broken = page.broken { throw broken }
            // Memory follows the undo stacks, not the log's length (as on the server, at each snapshot).
            ledger.compactHistory()
            ledger.forgetOldTransactions()
            progress?(ledger.version, target)
        }
        return ledger
    }
}
