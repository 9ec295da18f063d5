import RewindCore
import RewindLoop

/// The shards as the catalog lists them, read at start and on each of its
/// `shards` notices (schema/028), and each shard's connections: made when it
/// appears, checked once connected (its schema, that it is a shard, the
/// master key), and closed when it leaves the list.
extension EventStore {
    /// Reads the shards, their states, the placement policy and each shard's document count.
    public func reloadShards(_ done: @escaping (RewindError?) -> Void) {
        let sql = """
            SELECT s.name, s.conninfo, s.state, \(ShardCatalog.documentsOnShard), (SELECT policy FROM placement_policy)
            FROM shards s ORDER BY s.name
            """
        query(.init(sql, [])) { [self] result in
            let rows: Rows
            switch result {
            case let .failure(e):
                logger.warning("the shards could not be read", metadata: ["error": "\(e)"])
                return done(e)
            case let .success(r): rows = r
            }
            var listed: Set<String> = []
            for i in 0..<rows.count {
                guard let name = rows[i, 0], let conninfo = rows[i, 1], let state = rows[i, 2] else { continue }
                listed.insert(name)
                shards.states[name] = state
                shards.documents[name] = rows.int(i, 3).map { Int($0) } ?? 0
                if i == 0, let text = rows[i, 4] {
                    do throws(RewindError) { shards.policy = try PlacementPolicy(parsing: text) } catch {
                        logger.error("the catalog's placement policy does not parse; placing by least load", metadata: ["error": "\(error.message)"])
                        shards.policy = .leastLoaded
                    }
                } else if i == 0 { shards.policy = .leastLoaded }
                guard name != ShardDirectory.home else { continue }
                if let known = shards.link(named: name), known.conninfo == conninfo { continue }
                if let old = shards.remove(name) { for c in old.connections { c.stop() } }
                let link = ShardLink(name: name, conninfo: conninfo, loop: loop, writers: writersPerShard, timeouts: timeouts, logger: logger)
                shards.add(link)
                start(link)
                logger.info("shard \(name) added", metadata: ["state": "\(state)"])
            }
            for link in shards.all where !link.isHome && !listed.contains(link.name) {
                _ = shards.remove(link.name)
                for c in link.connections { c.stop() }
                logger.info("shard \(link.name) left the catalog")
            }
            onShardsChanged(Dictionary(uniqueKeysWithValues: shards.all.filter { !$0.isHome }.map { ($0.name, $0.conninfo) }))
            done(nil)
        }
    }

    /// The shards' names and states, for health and metrics: whether each serves now, and why not.
    public var shardStates: [(name: String, state: String, serving: Bool, why: String?)] {
        shards.all.map { l in
            (l.name, shards.states[l.name] ?? "accepting", l.isHome ? isAvailable : l.isServing,
             l.refusal?.message ?? (l.isServing || l.isHome ? nil : l.connections.compactMap(\.lastFailure).first ?? "connecting"))
        }
    }

    /// `done` once every shard has been checked or has failed to connect (or
    /// after `withinMs`): a server opens its listener then, so that its first
    /// documents are placed with every reachable shard counted.
    public func awaitShards(withinMs: UInt64, _ done: @escaping () -> Void) {
        let settled = { [shards] in shards.all.allSatisfy { $0.isHome || $0.checked || $0.refusal != nil || $0.connections.contains { $0.lastFailure != nil } } }
        guard !settled() else { return done() }
        let poll = Timer(loop: loop), began = loop.now
        poll.start(after: 10, repeat: 10) {
            guard settled() || self.loop.now - began >= withinMs else { return }
            poll.close()
            done()
        }
    }

    private func start(_ link: ShardLink) {
        for c in link.connections {
            c.onReady = { [unowned self] in
                guard link.connections.allSatisfy(\.isReady), !link.checked else { return }
                self.check(link)
            }
            c.onLeftPrimary = { for other in link.connections where other !== c { other.checkPrimaryNow() } }
            c.start()
        }
    }

    /// Before any of its documents is served: the shard's schema is this
    /// release's, it says it is this shard (not a catalog, nor another
    /// shard), and its data keys are wrapped with this server's master key.
    private func check(_ link: ShardLink) {
        let sql = """
            SELECT (SELECT max(version) FROM schema_migrations),
                   (SELECT name FROM shard_identity WHERE to_regclass('shard_identity') IS NOT NULL)
            """
        query(.init(sql, []), on: link.connection) { [self] result in
            func refuse(_ why: String) {
                link.refusal = RewindError(.unavailable, "shard \(link.name) is not served: \(why)")
                logger.error("shard \(link.name) is not served", metadata: ["why": "\(why)"])
            }
            switch result {
            case let .failure(e):
                // No schema_migrations at all: not a Rewind database.
                return refuse("it has no Rewind schema (\(e.message)): run `rewind admin shard add` again")
            case let .success(rows):
                if let refusal = Migrations.refusal(applied: rows[0, 0].flatMap { Int($0) }) { return refuse(refusal.message) }
                guard rows[0, 1] == link.name else {
                    return refuse("its database says it is \(rows[0, 1].map { "shard \($0)" } ?? "not a shard")")
                }
            }
            query(.init(DocumentKeys.claimMasterSQL, [keys.master.id]), on: link.connection) { [self] result in
                switch result {
                case let .failure(e): return logger.warning("shard \(link.name): master key not checked yet", metadata: ["error": "\(e)"])
                case let .success(rows):
                    if let wrong = keys.claimAnswered(rows) { return refuse(wrong.message) }
                }
                link.checked = true
                link.refusal = nil
                logger.info("shard \(link.name) served")
                onShardReady(link.name)
            }
        }
    }
}
