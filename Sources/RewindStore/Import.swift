import RewindCore

/// `rewind admin import`: documents exported by `rewind admin export`
/// appended into this database, in two passes over the file.
///
/// 1. `check`: every document's chain is recomputed from the exported
///    columns and every entry replayed through `DocumentLedger` (the code the
///    server runs), with no database: a changed, cut short or unreplayable
///    file is refused before anything is written.
/// 2. `apply`: one transaction per document — its users (matched by name;
///    missing ones created without tokens), the document, its roles, then its
///    entries in batches that claim the head as the server's appends do (the
///    log's per-statement trigger checks each). A document that exists here
///    is refused; a failure rolls its transaction back, so a document is
///    imported whole or not at all.
///
/// **Re-chaining.** The hash of an entry covers `doc`, `user_id` and `id`.
/// With the same document id and the same user ids here, the rows go in as
/// exported, hashes included. Otherwise (`--as NEWID`, or a user whose id
/// differs here) every hash is computed again after the source chain was
/// checked (`Rechain`), and with a new id the entries get new ids too;
/// anchors taken on the source no longer apply to the copy.
public enum Import {
    /// What `apply` did with one document.
    public struct Imported: Sendable {
        public var source: String
        public var doc: String
        public var entries: Int64
        public var rechained: Bool
        public var createdUsers: [String]
    }

    // MARK: Pass 1

    /// Checks the whole file; its documents' headers, in order. `progress(bytes read, file size)`.
    public static func check(path: String, progress: (Int64, Int64) -> Void = { _, _ in }) throws(RewindError) -> [LogExport.Header] {
        let reader = try LineReader(path: path)
        var headers: [LogExport.Header] = []
        var current: DocumentCheck?
        func fail(_ e: RewindError) -> RewindError {
            RewindError(.conflict, "\(path) line \(reader.lineNumber): \(e.message)")
        }
        while let bytes = reader.next() {
            if bytes.isEmpty { continue }
            do throws(RewindError) {
                switch try LogExport.Line.parse(bytes) {
                case let .header(h):
                    try current?.finish()
                    guard !headers.contains(where: { $0.doc == h.doc }) else { throw RewindError.badRequest("document \"\(h.doc)\" appears twice") }
                    let names = Set(h.users.map(\.name))
                    for name in [h.owner] + h.access.map(\.user) where !names.contains(name) {
                        throw RewindError.badRequest("\"\(name)\" (owner or member) is not among the header's users")
                    }
                    headers.append(h)
                    current = DocumentCheck(h)
                case let .entry(e):
                    guard current != nil else { throw RewindError.badRequest("an entry before any document header") }
                    try current!.take(e)
                }
            } catch { throw fail(error) }
            if reader.lineNumber % 1_000 == 0 { progress(reader.bytesRead, reader.size) }
        }
        do throws(RewindError) { try current?.finish() } catch { throw fail(error) }
        guard !headers.isEmpty else { throw RewindError(.conflict, "\(path) holds no document (is it an export file?)") }
        progress(reader.size, reader.size)
        return headers
    }

    /// One document of the file being checked: its chain, and its replay.
    struct DocumentCheck {
        let header: LogExport.Header
        let names: [Int64: String]
        var ledger: DocumentLedger
        var previous: [UInt8] = []
        var count: Int64 = 0

        init(_ h: LogExport.Header) {
            header = h
            names = Dictionary(h.users.map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
            ledger = DocumentLedger(doc: h.doc, limits: .unbounded)
        }

        mutating func take(_ e: LogExport.Entry) throws(RewindError) {
            let r = e.row
            guard r.doc == header.doc else { throw .badRequest("an entry of \"\(r.doc)\" under the header of \"\(header.doc)\"") }
            guard r.seq == count + 1 else { throw .badRequest("entry \(r.seq) follows entry \(count) of \"\(r.doc)\": entries are missing") }
            guard let name = names[r.userID] else { throw .badRequest("user id \(r.userID) is not among the header's users") }
            guard r.chained(after: previous) == r.hash else {
                throw .badRequest("the hash chain of \"\(r.doc)\" breaks at entry \(r.seq) (version \(r.version)): the file was changed after it was exported; export it again from the source")
            }
            let row: [String?] = [String(r.seq), String(r.version), r.entry, r.id, String(r.userID), name, r.client, r.kind, r.group,
                                  r.action, r.tx, r.txDigest, r.base.map { String($0) }, r.ops, r.inverse, r.refers, r.meta,
                                  String(r.time), "\\x" + Hex.string(r.hash)]
            do {
                // The chain was just checked on the exact columns: the ledger need not hash again.
                for entry in try LogRows.decode(doc: r.doc, Rows(columns: [], values: [row]), cipher: nil) { try ledger.replay(entry, verify: false) }
            } catch {
                throw .badRequest("entry \(r.seq) of \"\(r.doc)\" does not replay: \(error.message)")
            }
            previous = r.hash
            count += 1
        }

        func finish() throws(RewindError) {
            guard count == header.entries else {
                throw .badRequest("\"\(header.doc)\" has \(count) entries where its header says \(header.entries): the file was cut short or changed")
            }
            guard ledger.seq == header.seq, ledger.version == header.version, previous == header.hash else {
                throw .badRequest("\"\(header.doc)\" ends at entry \(ledger.seq), version \(ledger.version), not where its header says (entry \(header.seq), version \(header.version), hash \(Hex.string(header.hash)))")
            }
        }
    }

    // MARK: Pass 2

    /// Appends the checked file's documents (`headers`, from `check`) to the
    /// database; `as` gives the file's only document another id.
    /// `progress(entries done, entries in all)`; `imported` is told of each
    /// document once committed.
    public static func apply(path: String, headers: [LogExport.Header], as newID: String?, db: Database, keys: DocumentKeys,
                             progress: (Int64, Int64) -> Void = { _, _ in },
                             imported: (Imported) -> Void = { _ in }) throws(RewindError) {
        if let newID {
            guard headers.count == 1 else {
                throw .badRequest("--as renames one document; \(path) holds \(headers.count): export the one to rename on its own")
            }
            guard !newID.isEmpty, newID.utf8.count <= 256 else { throw .badRequest("a document id is 1 to 256 bytes") }
        }
        let targets = headers.map { newID ?? $0.doc }
        let existing = try db.query("SELECT id FROM documents WHERE id = ANY($1::text[])", [textArray(targets)]).values.compactMap { $0[0] }
        if let taken = existing.first {
            throw .conflict("document \"\(taken)\" already exists in this database; nothing was imported. "
                + (headers.count == 1 ? "Import it under another id: rewind admin import \(path) --as NEWID"
                                      : "Export the other documents without it, or import it on its own with --as NEWID"))
        }
        let total = headers.reduce(0) { $0 + $1.entries }
        var done: Int64 = 0
        let reader = try LineReader(path: path)
        var batch: DocumentBatch?
        func commit() throws(RewindError) {
            guard var b = batch else { return }
            batch = nil
            try b.flush(db: db)
            guard b.count == b.header.entries else { throw .conflict("\(path) changed while it was being imported") }
            try db.query("COMMIT")
            imported(Imported(source: b.header.doc, doc: b.doc, entries: b.count, rechained: b.rechains, createdUsers: b.createdUsers))
        }
        do throws(RewindError) {
            while let bytes = reader.next() {
                if bytes.isEmpty { continue }
                switch try LogExport.Line.parse(bytes) {
                case let .header(h):
                    try commit()
                    try db.query("BEGIN")
                    batch = try DocumentBatch(h, as: newID ?? h.doc, db: db, keys: keys)
                case let .entry(e):
                    guard batch != nil else { throw RewindError.conflict("\(path) changed while it was being imported") }
                    try batch!.add(e, db: db)
                    done += 1
                    if done % 1_000 == 0 { progress(done, total) }
                }
            }
            try commit()
        } catch {
            _ = try? db.query("ROLLBACK")
            if let b = batch { throw RewindError(error.code, "\"\(b.header.doc)\" was not imported (nothing of it is in the database): \(error.message)") }
            throw error
        }
        progress(total, total)
    }

    /// One document being written, inside its transaction.
    struct DocumentBatch {
        let header: LogExport.Header
        let doc: String
        var rechain: Rechain
        let rechains: Bool
        var createdUsers: [String] = []
        var pending: [LogExport.Entry] = []
        var previousSource: [UInt8] = []
        var count: Int64 = 0
        /// The head as this transaction has claimed it so far.
        var seq: Int64 = 0
        var hash: [UInt8] = []

        init(_ h: LogExport.Header, as doc: String, db: Database, keys: DocumentKeys) throws(RewindError) {
            header = h
            self.doc = doc
            var ids: [String: Int64] = [:]
            var created: [String] = []
            for u in h.users where ids[u.name] == nil {
                let found = try db.query("SELECT id FROM users WHERE name = $1", [u.name])
                if found.count == 1, let id = found.int(0, 0) {
                    ids[u.name] = id
                } else {
                    ids[u.name] = try db.query("INSERT INTO users (name) VALUES ($1) RETURNING id", [u.name]).int(0, 0)
                    created.append(u.name)
                }
            }
            createdUsers = created
            guard let owner = ids[h.owner] else { throw .badRequest("the owner \"\(h.owner)\" is not among the header's users") }
            let inserted = try db.query("""
                INSERT INTO documents (id, title, owner, created_at)
                VALUES ($1, $2, $3, 'epoch'::timestamptz + $4::bigint * interval '1 microsecond')
                ON CONFLICT (id) DO NOTHING RETURNING id
                """, [doc, h.title, String(owner), String(h.createdMicros)])
            guard inserted.count == 1 else { throw .conflict("document \"\(doc)\" was created here meanwhile; import it under another id with --as NEWID") }
            for m in h.access {
                guard let user = ids[m.user] else { throw .badRequest("the member \"\(m.user)\" is not among the header's users") }
                try db.query("INSERT INTO access (doc, user_id, role) VALUES ($1, $2, $3)", [doc, String(user), m.role])
            }
            var users: [Int64: Int64] = [:]
            for u in h.users { users[u.id] = ids[u.name] }
            // The file holds plain text (an export opens it); here it is sealed
            // with the new document's own key, so every hash is computed again.
            guard case let .key(cipher) = try keys.lookup(doc: doc, db: db) else { throw .conflict("document \"\(doc)\" has no key") }
            rechains = true
            rechain = Rechain(doc: doc, users: users, renewIDs: doc != h.doc, sealingWith: cipher)
        }

        mutating func add(_ e: LogExport.Entry, db: Database) throws(RewindError) {
            // The file was checked in pass 1; this catches it changing since.
            guard e.row.chained(after: previousSource) == e.row.hash else { throw .conflict("the file changed while it was being imported") }
            previousSource = e.row.hash
            pending.append(LogExport.Entry(row: rechain.next(e.row), timeMicros: e.timeMicros))
            if pending.count == 1_000 { try flush(db: db) }
        }

        /// Appends the pending entries with one statement that claims the head first.
        mutating func flush(db: Database) throws(RewindError) {
            guard let last = pending.last?.row else { return }
            let r = try db.query(ImportRows.append(doc: doc, expectedSeq: seq, expectedHash: hash, pending))
            guard r.int(0, 0) == 1, r.int(0, 1) == Int64(pending.count) else {
                throw .conflict("the head of \"\(doc)\" moved while importing (something else writes it)")
            }
            count += Int64(pending.count)
            seq = last.seq
            hash = last.hash
            pending.removeAll(keepingCapacity: true)
        }
    }

    /// A text[] literal for a parameter.
    static func textArray(_ items: [String]) -> String {
        "{" + items.map { "\"" + $0.replacingBackslashesAndQuotes() + "\"" }.joined(separator: ",") + "}"
    }
}

extension String {
    fileprivate func replacingBackslashesAndQuotes() -> String {
        var out = ""
        for c in self {
            if c == "\\" || c == "\"" { out.append("\\") }
            out.append(c)
        }
        return out
    }
}
