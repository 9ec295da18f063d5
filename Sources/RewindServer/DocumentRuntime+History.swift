import RewindCore
import RewindLoop
import RewindStore

/// Reading a document's older entries back from the log — catch-up older
/// than memory (`open` with `since`), a scrub's changes, a past state, the
/// events of an undo group older than the snapshot's tail — each
/// checked against the hash chain this runtime trusts (`ChainAnchors`),
/// whatever its position relative to the snapshot the runtime started from.
///
/// A read is widened to the anchors around it and the chain recomputed
/// across it; the first read below the snapshot first walks the log from its
/// first entry up to the one the runtime started from (once per runtime,
/// in pages, hashing only). An entry that does not chain means the log was
/// changed after it was written: the read answers `internal` and the document
/// stops, as for tampering found while loading.
extension DocumentRuntime {
    /// Entries hashed per page of the walk below the snapshot (one query each).
    static let walkPage = 5_000

    /// Events after version `after`, up to `to` (or the head) and at most
    /// `limit` of them, oldest first, each checked against the chain.
    func checkedEvents(after: Int64, to: Int64? = nil, limit: Int, _ done: @escaping (Result<[Event], RewindError>) -> Void) {
        checkedEvents(after: after, to: to, limit: limit, then: { $0 }, done)
    }

    /// The same, put through `then` where they were read (off the loop for a large read: `readChecked`).
    func checkedEvents<T: Sendable>(after: Int64, to: Int64? = nil, limit: Int, then: @escaping @Sendable ([Event]) -> T,
                                    _ done: @escaping (Result<T, RewindError>) -> Void)
    {
        let head = min(to ?? committed.version, committed.version)
        let last = after >= head - Int64(limit) ? head : after + Int64(limit)  // (never past Int64: `after` may be any count a client sends)
        guard last > after else { return done(.success(then([]))) }
        walkBelowSnapshot { [self] error in
            if let error { return done(.failure(error)) }
            store.seqs(doc: id, first: after + 1, last: last) { [self] result in
                let range: (first: Int64, last: Int64)
                switch result {
                case let .failure(e): return done(.failure(e))
                case let .success(r): range = r
                }
                guard let start = anchors.before(range.first), let end = anchors.atOrAfter(range.last) else {
                    return done(.failure(RewindError(.internal, "\(id): no checked hash around entries \(range.first)…\(range.last)")))
                }
                let doc = id
                readChecked(afterSeq: start.seq, toSeq: end.seq, check: { rows throws(RewindError) in
                    try ChainAnchors.check(rows, from: start, to: end, doc: doc)
                }, then: { entries in
                    then(entries.compactMap {
                        guard case let .event(e) = $0, e.version > after, e.version <= last else { return nil }
                        return e
                    })
                }, done)
            }
        }
    }

    /// Entries `afterSeq < seq <= toSeq`, their stored rows put through
    /// `check` (the chain recomputed across them), then through `then`; a
    /// failed check stops the document as tampering found. A large read is
    /// decoded, checked and handed to `then` on the loop's thread pool
    /// (`EventStore.entriesOffLoop`).
    func readChecked<T: Sendable>(afterSeq: Int64, toSeq: Int64, check: @escaping @Sendable ([LogRow]) throws(RewindError) -> Void,
                                  then: @escaping @Sendable ([LogEntry]) -> T, _ done: @escaping (Result<T, RewindError>) -> Void)
    {
        let doc = id
        store.entriesOffLoop(doc: doc, afterSeq: afterSeq, toSeq: toSeq, limit: Int(toSeq - afterSeq), then: { entries -> Result<T, RewindError> in
            do throws(RewindError) { try check(entries.map { $0.row(doc: doc) }) } catch { return .failure(error) }
            return .success(then(entries))
        }) { [self] (result: Result<Result<T, RewindError>, RewindError>) in
            switch result {
            case let .failure(e): done(.failure(e))  // not read, or not decoded
            case let .success(.failure(e)):
                stop(tampered: e)
                done(.failure(e))
            case let .success(.success(value)): done(.success(value))
            }
        }
    }

    /// Runs `done` once every entry below the one this runtime started from
    /// is checked (at once when it started from the log's first entry).
    func walkBelowSnapshot(_ done: @escaping (RewindError?) -> Void) {
        guard anchors.needsWalk else { return done(nil) }
        walkWaiting.append(done)
        guard walkWaiting.count == 1 else { return }  // a walk is under way
        let arrival = anchors.before(anchors.lowest + 1)!  // the first entry trusted, and its hash
        walk(from: (0, []), to: arrival, found: [])
    }

    private func walk(from start: (seq: Int64, hash: [UInt8]), to arrival: (seq: Int64, hash: [UInt8]),
                      found: [(seq: Int64, hash: [UInt8])]) {
        let upTo = min(arrival.seq, start.seq + Int64(Self.walkPage))
        store.storedRows(doc: id, afterSeq: start.seq, toSeq: upTo, limit: Self.walkPage) { [self] result in
            let rows: [LogRow]
            switch result {
            case let .failure(e): return walkEnded(e)
            case let .success(r): rows = r
            }
            var found = found
            do throws(RewindError) {
                // Each page must chain on from the last; the last page must arrive at the first entry trusted.
                let end = upTo == arrival.seq ? arrival : (seq: upTo, hash: rows.last?.hash ?? [])
                found += try ChainAnchors.check(rows, from: start, to: end, doc: id)
            } catch {
                stop(tampered: error)
                return walkEnded(error)
            }
            guard upTo < arrival.seq else {
                anchors.walked(found)
                return walkEnded(nil)
            }
            walk(from: (upTo, rows.last!.hash), to: arrival, found: found)
        }
    }

    private func walkEnded(_ error: RewindError?) {
        let waiting = walkWaiting
        walkWaiting = []
        for w in waiting { w(error) }
    }
}

extension DocumentRuntime {
    /// Runs `request` once the ledgers hold the log it reads: an undo or redo
    /// of a group older than the tail the runtime was restored with reads
    /// that group's events and everything after them from the log first
    /// (checked against the chain). Other terminals' commands go on
    /// meanwhile; the terminal that asked reads nothing more until it is
    /// answered (`Server.runRevert`), so its own requests keep their order.
    func processWithOlderLog(_ request: Job) {
        guard case let .revert(r, _) = request.command, let from = speculative.olderLogNeeded(for: r) else {
            return process(request)
        }
        let upTo = max(committed.history.logBase, speculative.history.logBase) - 1
        olderLogReads += 1
        logger.info("reading the log of an old undo group", metadata: ["doc": "\(id)", "from": "\(from)", "to": "\(upTo)"])
        // Indexed for the undo history where they were read (off the loop for
        // a large read), once for both ledgers: on the loop it was ~0.4 s.
        let levels = speculative.history.levels
        eventsBelowTail(from: from, upTo: upTo, then: { UndoHistory.OlderLog($0, levels: levels, below: upTo + 1) }) { [self] result in
            olderLogReads -= 1
            do throws(RewindError) {
                let older = try result.get()
                // Another read may have put some of them back already: each ledger takes what it lacks.
                try committed.restoreOlderLog(older)
                try speculative.restoreOlderLog(older)
                // Never read the same range again for nothing: the log must have given back the events from `from` on.
                guard speculative.history.logBase <= from else {
                    throw RewindError(.internal, "the log of \(id) did not give back its events from version \(from)")
                }
            } catch {
                logger.error("could not read the log of an old undo group", metadata: ["doc": "\(id)", "error": "\(error)"])
                fail(request, error)
                return onEffect(.mayBeIdle)
            }
            whenReady { [self] error in
                if let error { return fail(request, error) }
                processWithOlderLog(request)
            }
        }
    }

    /// Events `from…upTo`, checked against the chain: when they end just
    /// below the first entry this runtime trusts (what an old group's read
    /// asks for), they are read once, from the entry before them up to that
    /// one, and the chain recomputed across them must arrive at its hash —
    /// no walk of the log below them. Otherwise, `checkedEvents`.
    private func eventsBelowTail<T: Sendable>(from: Int64, upTo: Int64, then: @escaping @Sendable ([Event]) -> T,
                                              _ done: @escaping (Result<T, RewindError>) -> Void)
    {
        guard anchors.needsWalk, let trusted = anchors.before(anchors.lowest + 1), trusted.seq == anchors.lowest else {
            return checkedEvents(after: from - 1, to: upTo, limit: Int(upTo - from + 1), then: then, done)
        }
        store.seqs(doc: id, first: from, last: from) { [self] result in
            let first: Int64
            switch result {
            case let .failure(e): return done(.failure(e))
            case let .success(r): first = r.first
            }
            guard first <= trusted.seq else { return checkedEvents(after: from - 1, to: upTo, limit: Int(upTo - from + 1), then: then, done) }
            // From the entry before `first` (its stored hash starts the chain: only arriving at the trusted hash vouches for it).
            let after = max(0, first - 2)
            let doc = id
            readChecked(afterSeq: after, toSeq: trusted.seq, check: { rows throws(RewindError) in
                if first == 1 {
                    try ChainAnchors.check(rows, from: (0, []), to: trusted, doc: doc)
                } else {
                    guard let start = rows.first, start.seq == first - 1 else {
                        throw RewindError(.internal, "the log of \(doc) lacks entry \(first - 1)")
                    }
                    try ChainAnchors.check(Array(rows.dropFirst()), from: (start.seq, start.hash), to: trusted, doc: doc)
                }
            }, then: { entries in
                then(entries.compactMap {
                    guard case let .event(e) = $0, e.version >= from, e.version <= upTo else { return nil }
                    return e
                })
            }, done)
        }
    }
}
