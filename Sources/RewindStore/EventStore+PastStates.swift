import RewindCore

/// Where a read-only view of an earlier version (peek, scrub, Restore This
/// Version) starts: the newest snapshot at or below it — never a replay from
/// the first event when a snapshot is nearer. The events after it are read
/// and checked by the document's runtime (`Server.document(_:at:head:)`).
extension EventStore {
    /// The newest snapshot's document at or below `version` (nil: none), checked against its digest.
    public func snapshotDocument(doc: String, atOrBelow version: Int64,
                                 _ done: @escaping (Result<(version: Int64, document: Document)?, RewindError>) -> Void)
    {
        query(doc: doc, .init("SELECT seq, digest, state FROM snapshots WHERE doc = $1 AND version <= $2 ORDER BY seq DESC LIMIT 1",
                    [doc, String(version)])) { result in
            done(result.flatMap { rows in
                guard rows.count == 1 else { return .success(nil) }
                guard let digest = rows[0, 1].flatMap(LogRows.bytea), let text = rows[0, 2] else {
                    return .failure(RewindError(.internal, "malformed snapshot row of \(doc)"))
                }
                // An unusable snapshot is skipped: the log alone can say the same.
                // A sealed one is vouched for by its AES-GCM tag, which covers
                // every byte under the document's key; hashing the ~250 KB again
                // for the digest was a sixth of a scrub step (perf). `rewind admin
                // verify` and a cold open still check the digest.
                guard DocumentCipher.isSealed(text) || LogRows.matches(text, digest: digest),
                      let plain = try? LogRows.openSnapshotBytes(text, doc: doc, cipher: self.keys.cached(doc)),
                      let s = try? plain.withUnsafeBufferPointer({ p throws(RewindError) in try DocumentLedger.snapshotDocument(text: p, maxDepth: 256) }),
                      s.version <= version
                else { return .success(nil) }
                return .success(s)
            })
        }
    }

    /// Versions of `doc` with a snapshot, ascending.
    public func snapshotVersions(doc: String, _ done: @escaping (Result<[Int64], RewindError>) -> Void) {
        query(doc: doc, .init("SELECT version FROM snapshots WHERE doc = $1 ORDER BY seq", [doc])) { result in
            done(result.map { rows in (0..<rows.count).compactMap { rows.int($0, 0) } })
        }
    }
}
