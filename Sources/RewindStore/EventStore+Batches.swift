import RewindCore

/// How a writer's batch is put together and answered: its appends grouped
/// into one claim per document (the editors due to be noted with them), and
/// each append told what the statement's rows say of its document.
extension EventStore {
    /// Documents of a batch in order of first appearance, each with its rows
    /// in order: the rows are moved out of the batch into them. Each with
    /// the users whose edits of it are due to be noted as its editors.
    static func claims(_ batch: inout [PendingAppend], noting notes: inout EditorNotes) -> [LogRows.Claim] {
        // Sized once (growing both from empty was ~600 instructions a row), and
        // a busy document's rows, which come one after another, found without hashing.
        var index: [String: Int] = [:]
        index.reserveCapacity(batch.count)
        var claims: [LogRows.Claim] = []
        claims.reserveCapacity(batch.count)
        for i in batch.indices {
            let row = batch[i].row.take()!
            let noted = batch[i].isEvent && notes.take(doc: batch[i].doc, user: row.userID, timeMs: row.time)
            let c: Int?
            if let last = claims.indices.last, claims[last].doc == batch[i].doc { c = last } else { c = index[batch[i].doc] }
            if let c {
                if noted { claims[c].editors.append((user: row.userID, timeMs: row.time)) }
                claims[c].rows.append(row)
                if batch[i].checkDuplicates { claims[c].checkDuplicates = true }
            } else {
                index[batch[i].doc] = claims.count
                claims.append(LogRows.Claim(doc: batch[i].doc, expectedSeq: batch[i].seq - 1, expectedHash: batch[i].after, rows: [row],
                                            checkDuplicates: batch[i].checkDuplicates,
                                            editors: noted ? [(user: row.userID, timeMs: row.time)] : []))
            }
        }
        return claims
    }

    static func answer(_ batch: [PendingAppend], _ o: LogRows.Outcome) {
        // Repeats first: the writer learns what the log holds before the
        // entries ahead of them (not appended either) tell it to start over.
        if !o.duplicates.isEmpty {
            for i in batch.indices where batch[i].isEvent {
                if let seen = o.duplicates[batch[i].doc]?[batch[i].seq], let digest = seen.digest {
                    batch[i].done(digest == batch[i].txDigest ? .duplicate(version: seen.version) : .txConflict(version: seen.version, digest: digest))
                }
            }
        }
        // By index: `for p in batch` copied each entry (retaining its strings and closure).
        for i in batch.indices {
            let doc = batch[i].doc
            if o.claimed.contains(doc) {
                batch[i].done(.committed)
            } else if let seen = o.duplicates[doc]?[batch[i].seq] {
                if !batch[i].isEvent || seen.digest == nil {
                    batch[i].done(.clash(head: -1))  // a mark's tx already there: catching up finds it
                }
            } else if let head = o.heads[doc], let seq = head {
                batch[i].done(.clash(head: seq))
            } else if o.duplicates[doc] != nil {
                batch[i].done(.clash(head: -1))
            } else {
                batch[i].done(.noDocument)
            }
        }
    }
}
