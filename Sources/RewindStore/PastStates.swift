import RewindCore

/// A document as it was at an earlier version, for read-only views (peek,
/// scrub, Restore This Version): the newest snapshot at or below the version,
/// then the log's events up to it — never a replay from the first event when a
/// snapshot is nearer.
extension EventStore {
    /// The document of `doc` at `version` (which must not be past the head).
    public func document(doc: String, at version: Int64, _ done: @escaping (Result<Document, RewindError>) -> Void) {
        snapshotDocument(doc: doc, atOrBelow: version) { result in
            switch result {
            case let .failure(e): done(.failure(e))
            case let .success(start):
                let from = start ?? (version: 0, document: Document())
                self.roll(doc: doc, from.document, from: from.version, to: version, done)
            }
        }
    }

    /// `document` (the state at `from`) moved forward through the log's events to `to`.
    public func roll(doc: String, _ document: Document, from: Int64, to: Int64, _ done: @escaping (Result<Document, RewindError>) -> Void) {
        guard to > from else { return done(.success(document)) }
        events(doc: doc, after: from, to: to, limit: Int(to - from)) { result in
            done(result.flatMap { events in
                guard events.count == Int(to - from) else {
                    return .failure(RewindError(.internal, "the log of \(doc) holds \(events.count) of the \(to - from) events \(from + 1)…\(to)"))
                }
                var d = document
                for e in events {
                    do throws(RewindError) { _ = try d.apply(e.ops, limits: .unbounded) } catch {
                        return .failure(RewindError(.internal, "event \(e.version) of \(doc) does not apply on replay: \(error.message)"))
                    }
                }
                return .success(d)
            })
        }
    }

    /// The newest snapshot's document at or below `version` (nil: none), checked against its digest.
    public func snapshotDocument(doc: String, atOrBelow version: Int64,
                                 _ done: @escaping (Result<(version: Int64, document: Document)?, RewindError>) -> Void)
    {
        query(.init("SELECT seq, digest, state FROM snapshots WHERE doc = $1 AND version <= $2 ORDER BY seq DESC LIMIT 1",
                    [doc, String(version)])) { result in
            done(result.flatMap { rows in
                guard rows.count == 1 else { return .success(nil) }
                guard let digest = rows[0, 1].flatMap(LogRows.bytea), let text = rows[0, 2] else {
                    return .failure(RewindError(.internal, "malformed snapshot row of \(doc)"))
                }
                // An unusable snapshot is skipped: the log alone can say the same.
                guard SHA256.hash(Array(text.utf8)) == digest, let json = try? JSONParser.parse(text, maxDepth: 256),
                      let s = try? DocumentLedger.snapshotDocument(json), s.version <= version
                else { return .success(nil) }
                return .success(s)
            })
        }
    }

    /// Versions of `doc` with a snapshot, ascending.
    public func snapshotVersions(doc: String, _ done: @escaping (Result<[Int64], RewindError>) -> Void) {
        query(.init("SELECT version FROM snapshots WHERE doc = $1 ORDER BY seq", [doc])) { result in
            done(result.map { rows in (0..<rows.count).compactMap { rows.int($0, 0) } })
        }
    }
}
