import RewindCore

/// Rebuilding a document from the log, for the admin CLI. It runs the same
/// `DocumentLedger.replay` as the server, so both agree by construction.
public enum Replay {
    public static func document(_ doc: String, to version: Int64? = nil, db: Database,
                                progress: ((Int64, Int64) -> Void)? = nil) throws(RewindError) -> DocumentLedger {
        let head = try db.query("SELECT head FROM documents WHERE id = $1", [doc])
        guard head.count == 1, let headVersion = head.int(0, 0) else { throw .notFound("no document \"\(doc)\"") }
        let target = version ?? headVersion
        guard target >= 0 else { throw .badRequest("version must be 0 or more") }
        guard target <= headVersion else {
            throw RewindError(.version, "version \(target) is beyond the head \(headVersion)", details: ["head": .int(headVersion)])
        }
        var ledger = DocumentLedger(doc: doc)
        while true {
            let s = EventRows.range(doc: doc, after: ledger.version, to: target, limit: 5_000)
            let events = try EventRows.decode(doc: doc, try db.query(s.sql, s.params))
            // Marks up to the last event read (and, at the target, those after it).
            let upTo = events.last?.version ?? ledger.version
            let m = MarkRows.range(doc: doc, after: ledger.history.markCount, toVersion: upTo, limit: 1_000_000)
            let marks = try MarkRows.decode(doc: doc, try db.query(m.sql, m.params))
            for entry in LogEntry.merge(events, marks) { try ledger.replay(entry) }
            progress?(ledger.version, target)
            if ledger.version >= target { break }
            guard !events.isEmpty else { throw RewindError(.internal, "log of \(doc) ends at \(ledger.version), head says \(headVersion)") }
        }
        return ledger
    }
}
