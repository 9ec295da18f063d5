import RewindCore

/// Where each document's statements go (SPEC section 17). Unsharded (the
/// catalog lists only `home`), everything goes to the catalog's own
/// database, at once, as before shards existed. Sharded, a document's shard
/// is looked up in `placements` the first time it is used (no row: `home`)
/// and kept while the document is loaded; accounts, tokens and placements
/// stay in the catalog.
extension EventStore {
    /// `body` with the shard `doc` lives on: at once when known, else after
    /// reading its placement. `failed` when the catalog cannot be read, or
    /// the shard is not one this instance reaches or serves now.
    func onShard(_ doc: String, failed: @escaping (RewindError) -> Void, _ body: @escaping (ShardLink) -> Void) {
        if let link = shards.placement(of: doc) { return serve(link, failed, body) }
        query(.init("SELECT shard, moving_to FROM placements WHERE doc = $1", [doc])) { [self] result in
            switch result {
            case let .failure(e): failed(e)
            case let .success(rows):
                if rows.count == 1, let to = rows[0, 1] { return failed(Self.moving(doc, to: to)) }
                let name = rows.count == 1 ? rows[0, 0] ?? ShardDirectory.home : ShardDirectory.home
                if let link = shards.link(named: name) {
                    shards.remember(doc, on: link)
                    return serve(link, failed, body)
                }
                // Added since this instance last read the shards (its notice still on its way): read them now.
                reloadShards { [self] _ in
                    guard let link = shards.link(named: name) else {
                        return failed(RewindError(.unavailable, "\(doc) is on shard \(name), which this instance does not know"))
                    }
                    shards.remember(doc, on: link)
                    serve(link, failed, body)
                }
            }
        }
    }

    private func serve(_ link: ShardLink, _ failed: (RewindError) -> Void, _ body: (ShardLink) -> Void) {
        if link.isHome { return body(link) }
        if let refusal = link.refusal { return failed(refusal) }
        guard link.isServing else {
            return failed(Self.unreachable(link, link.connections.compactMap(\.lastFailure).first))
        }
        body(link)
    }

    /// The answer while a document moves to another shard (`rewind admin shard move`; PROTOCOL: `unavailable`).
    static func moving(_ doc: String, to shard: String) -> RewindError {
        RewindError(.unavailable, "\(doc) is moving to another PostgreSQL cluster (shard \(shard)); open it again in a moment",
                    details: ["moving": .bool(true)])
    }

    /// The answer while a document's shard cannot be reached (PROTOCOL: `unavailable`).
    static func unreachable(_ link: ShardLink, _ why: String?) -> RewindError {
        RewindError(.unavailable, "shard \(link.name), which holds this document, is not reachable (\(why ?? "connecting")); retry later")
    }

    /// A statement about `doc`, on its shard.
    func query(doc: String, _ s: PipelineConnection.Statement, _ done: @escaping (Result<Rows, RewindError>) -> Void) {
        onShard(doc, failed: { done(.failure($0)) }) { [self] link in query(s, on: link.connection, done) }
    }

    /// The same, answered with the connection's outcomes (reads decoded off the loop).
    func send(_ s: PipelineConnection.Statement, doc: String, _ done: @escaping (Result<[PipelineConnection.Outcome], RewindError>) -> Void) {
        onShard(doc, failed: { done(.failure($0)) }) { link in link.connection.send([s], completion: done) }
    }

    /// The store is done with `doc` (unloaded): its placement is looked up again next time.
    public func forgetPlacement(_ doc: String) { shards.forget(doc) }
    /// Every placement looked up again (the catalog's notices may have been missed while not listening).
    public func forgetPlacements() { shards.forgetAll() }

    // MARK: Appends on a shard

    /// An append on a sharded store: queued at once when its document's
    /// shard is known and holds its user's account; otherwise it waits, in
    /// order behind any append of the same document already waiting, for
    /// the placement and the account. The order matters: each entry is
    /// claimed after the one before it.
    func appendOnShard(_ row: consuming LogRow, after: [UInt8], checkDuplicates: Bool, _ done: @escaping (AppendOutcome) -> Void) {
        let doc = row.doc, user = row.userID
        if shards.waiting[doc] == nil, let link = shards.placement(of: doc), link.isHome || link.usersCopied.contains(user) {
            return queue(row, on: link, after: after, checkDuplicates: checkDuplicates, done)
        }
        let held = RowHolder(row)
        let step = ShardDirectory.WaitingAppend(run: { [unowned self] link, next in
            self.withUser(user, on: link, failed: { e in
                done(.failed(e))
                next()
            }) {
                self.queue(held.take(), on: link, after: after, checkDuplicates: checkDuplicates, done)
                next()
            }
        }, fail: { e in done(.failed(e)) })
        if shards.waiting[doc] != nil { return shards.waiting[doc]!.append(step) }
        shards.waiting[doc] = [step]
        onShard(doc, failed: { [unowned self] e in
            let steps = self.shards.waiting.removeValue(forKey: doc) ?? []
            for s in steps { s.fail(e) }
        }) { [unowned self] link in self.runWaiting(doc, on: link) }
    }

    /// The appends that waited for `doc`'s shard or a user's copy there, one after another.
    private func runWaiting(_ doc: String, on link: ShardLink) {
        guard var steps = shards.waiting[doc], !steps.isEmpty else {
            shards.waiting[doc] = nil
            return
        }
        let first = steps.removeFirst()
        shards.waiting[doc] = steps
        first.run(link) { [unowned self] in self.runWaiting(doc, on: link) }
    }

    /// `body` once `user`'s account is in `link`'s shard (copied from the catalog the first time).
    func withUser(_ user: Int64, on link: ShardLink, failed: @escaping (RewindError) -> Void, _ body: @escaping () -> Void) {
        if link.isHome || link.usersCopied.contains(user) { return body() }
        query(.init("SELECT name, display_name FROM users WHERE id = $1", [String(user)])) { [self] result in
            switch result {
            case let .failure(e): return failed(e)
            case let .success(rows):
                guard rows.count == 1, let name = rows[0, 0] else { return failed(RewindError(.notFound, "no user \(user) in the catalog")) }
                query(.init("SELECT rewind_user_copy($1, $2, $3)", [String(user), name, rows[0, 1]]), on: link.connection) { result in
                    switch result {
                    case let .failure(e): failed(e)
                    case .success:
                        link.usersCopied.insert(user)
                        body()
                    }
                }
            }
        }
    }
}

/// A log row handed from one closure to another exactly once.
private final class RowHolder {
    private var row: LogRow?
    init(_ row: consuming LogRow) { self.row = row }
    func take() -> LogRow {
        defer { row = nil }
        return row!
    }
}

extension EventStore {
    /// A new document on a sharded store: placed by the policy (a shard that
    /// is closed, draining or unreachable takes none), its placement written
    /// in the catalog first — the key that keeps ids unique over all shards —
    /// then the document made on its shard. If that fails, the placement is
    /// taken back, so the id is free again.
    func createPlaced(_ doc: String, title: String?, owner: Int64, _ done: @escaping (Result<Bool, RewindError>) -> Void) {
        guard let link = shards.shardForNew(doc) else {
            return done(.failure(RewindError(.unavailable, "no shard takes new documents now (all closed, draining or unreachable)")))
        }
        // Counted at once, not when made: many documents made together would all find the same shard least loaded.
        shards.documents[link.name, default: 0] += 1
        let done: (Result<Bool, RewindError>) -> Void = { [shards] result in
            if case .success(true) = result {} else { shards.documents[link.name, default: 1] -= 1 }
            done(result)
        }
        let place = """
            INSERT INTO placements (doc, shard) SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM documents WHERE id = $1)
            ON CONFLICT (doc) DO NOTHING RETURNING doc
            """
        if link.isHome {
            return query(.init("WITH p AS (\(place)) INSERT INTO documents (id, title, owner) SELECT $1, $3, $4 FROM p RETURNING id",
                               [doc, link.name, title, String(owner)])) { [self] result in
                if case .success(let rows) = result, rows.count == 1 { placed(doc, on: link) }
                done(result.map { $0.count == 1 })
            }
        }
        query(.init(place, [doc, link.name])) { [self] result in
            switch result {
            case let .failure(e): return done(.failure(e))
            case let .success(rows) where rows.count == 0: return done(.success(false))
            case .success: break
            }
            func takeBack(_ outcome: Result<Bool, RewindError>) {
                query(.init("DELETE FROM placements WHERE doc = $1 AND shard = $2", [doc, link.name])) { [logger] result in
                    if case let .failure(e) = result {
                        logger.error("a placement of a document not made stays in the catalog", metadata: ["doc": "\(doc)", "shard": "\(link.name)", "error": "\(e)"])
                    }
                    done(outcome)
                }
            }
            withUser(owner, on: link, failed: { takeBack(.failure($0)) }) { [self] in
                query(.init("INSERT INTO documents (id, title, owner) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING RETURNING id",
                            [doc, title, String(owner)]), on: link.connection) { [self] result in
                    switch result {
                    case let .failure(e): takeBack(.failure(e))
                    case let .success(rows) where rows.count == 0:
                        logger.warning("a document placed on a shard was already there; its placement is taken back", metadata: ["doc": "\(doc)", "shard": "\(link.name)"])
                        takeBack(.success(false))
                    case .success:
                        placed(doc, on: link)
                        done(.success(true))
                    }
                }
            }
        }
    }

    private func placed(_ doc: String, on link: ShardLink) { shards.remember(doc, on: link) }
}

extension EventStore {
    /// `s` on every shard (unsharded: the catalog alone), each shard's rows
    /// decoded, gathered. A shard other than `home` that is not served now,
    /// or fails, is left out and named in `missed`; the catalog failing fails it all.
    func onEveryShard<T>(_ s: PipelineConnection.Statement, decode: @escaping (Rows) -> [T],
                         _ done: @escaping (Result<(items: [T], missed: [String]), RewindError>) -> Void)
    {
        guard shards.isSharded else { return query(s) { done($0.map { (decode($0), []) }) } }
        let links = shards.all.filter { $0.isHome || $0.isServing }
        var items: [T] = [], missed = shards.all.filter { !($0.isHome || $0.isServing) }.map(\.name)
        var left = links.count, failure: RewindError?
        for link in links {
            query(s, on: link.connection) { result in
                switch result {
                case let .success(rows): items += decode(rows)
                case let .failure(e): if link.isHome { failure = e } else { missed.append(link.name) }
                }
                left -= 1
                guard left == 0 else { return }
                if let failure { return done(.failure(failure)) }
                done(.success((items, missed.sorted())))
            }
        }
    }
}
