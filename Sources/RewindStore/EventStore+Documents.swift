import RewindCore

/// The documents table, access and accounts as the server reads and
/// changes them: heads, creation and deletion, members and roles, tokens.
extension EventStore {
    public struct Head: Sendable, Equatable {
        public var version: Int64
        public var seq: Int64
        /// The hash of the entry at `seq` (nil: not read).
        public var hash: [UInt8]?
        public init(version: Int64, seq: Int64, hash: [UInt8]? = nil) { self.version = version; self.seq = seq; self.hash = hash }
    }

    /// The head (event version and stream position) of `doc`, or nil when there is no such document.
    /// Read only from a writable primary: a head from a server that is no
    /// longer one (a demoted primary, for the moment before the connection
    /// notices) could be behind what was committed; then `unavailable`, and
    /// the connection goes to find the primary.
    public func head(doc: String, _ done: @escaping (Result<Head?, RewindError>) -> Void) {
        let sql = """
            SELECT d.head, d.seq, d.head_hash, p.stale, d.moved_to
            FROM (SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS stale) p
            LEFT JOIN documents d ON d.id = $1
            """
        onShard(doc, failed: { done(.failure($0)) }) { [self] link in
            query(.init(sql, [doc]), on: link.connection) { [self] result in
                if case let .success(rows) = result, rows.count == 1, rows[0, 3] == "t" {
                    link.connection.notPrimary("a head was read from a server that is no longer a writable primary (a failover?)")
                    return done(.failure(.storage("the database is failing over: no writable primary yet")))
                }
                // Fenced by a move (schema/028): its head here is no longer the document's.
                if case let .success(rows) = result, rows.count == 1, let to = rows[0, 4] {
                    self.shards.forget(doc)  // a placement kept from before the move (its notice missed): looked up again
                    return done(.failure(Self.moving(doc, to: to)))
                }
                done(result.map { rows in
                    guard rows.count == 1, let v = rows.int(0, 0), let s = rows.int(0, 1) else { return nil }
                    return Head(version: v, seq: s, hash: rows[0, 2].flatMap(LogRows.bytea))
                })
            }
        }
    }

    /// Creates a document owned by `owner`; false when the id is taken.
    /// Sharded, it is placed first (`createPlaced`).
    public func createDocument(_ doc: String, title: String?, owner: Int64, _ done: @escaping (Result<Bool, RewindError>) -> Void) {
        if shards.isSharded { return createPlaced(doc, title: title, owner: owner, done) }
        // Not while a placement holds the id (a shard added a moment ago, its notice not here yet).
        query(.init("""
            INSERT INTO documents (id, title, owner) SELECT $1, $2, $3
            WHERE NOT EXISTS (SELECT 1 FROM placements WHERE doc = $1) ON CONFLICT (id) DO NOTHING RETURNING id
            """, [doc, title, String(owner)])) { result in
            done(result.map { $0.count == 1 })
        }
    }

    /// Marks `doc` deleted if `owner` owns it and it is not deleted yet; false otherwise.
    public func deleteDocument(_ doc: String, owner: Int64, _ done: @escaping (Result<Bool, RewindError>) -> Void) {
        query(doc: doc, .init("UPDATE documents SET deleted_at = now() WHERE id = $1 AND owner = $2 AND deleted_at IS NULL RETURNING id",
                    [doc, String(owner)])) { result in
            done(result.map { $0.count == 1 })
        }
    }

    /// The owner and members of `doc`, or nil when there is no such document.
    public func access(doc: String, _ done: @escaping (Result<DocumentAccess?, RewindError>) -> Void) {
        query(doc: doc, .init(AccessRows.loadSQL, [doc])) { result in done(result.flatMap { rows in Result { () throws(RewindError) in try AccessRows.decode(rows) } }) }
    }

    /// Gives `user` (a name) `role` on `doc`, or takes it away (nil), as `by`.
    public func share(doc: String, user: String, role: Role?, by: Int64,
                      _ done: @escaping (Result<AccessRows.Shared, RewindError>) -> Void)
    {
        let statement = PipelineConnection.Statement(AccessRows.share, AccessRows.shareParams(doc: doc, user: user, role: role, by: by))
        func answer(_ result: Result<Rows, RewindError>) {
            done(result.flatMap { rows in Result { () throws(RewindError) in try AccessRows.shared(rows, doc: doc, user: user, role: role) } })
        }
        guard shards.isSharded else { return query(statement, answer) }
        // On a shard, the member and the one sharing must have their accounts there first.
        onShard(doc, failed: { done(.failure($0)) }) { [self] link in
            guard !link.isHome else { return query(statement, on: link.connection, answer) }
            query(.init("SELECT id FROM users WHERE name = $1", [user])) { [self] found in
                guard case let .success(rows) = found, rows.count == 1, let member = rows.int(0, 0) else {
                    return query(statement, on: link.connection, answer)  // answered as for an unknown name
                }
                withUser(by, on: link, failed: { done(.failure($0)) }) { [self] in
                    withUser(member, on: link, failed: { done(.failure($0)) }) { [self] in query(statement, on: link.connection, answer) }
                }
            }
        }
    }

    /// The user a token belongs to, or nil for an unknown token.
    public func authenticate(token: String, _ done: @escaping (Result<(id: Int64, name: String)?, RewindError>) -> Void) {
        query(.init(Accounts.authenticateSQL, [token])) { result in
            done(result.map { rows in
                guard rows.count == 1, let id = rows.int(0, 0), let name = rows[0, 1] else { return nil }
                return (id: id, name: name)
            })
        }
    }

    /// Whether an operator denied the token of (`issuer`, `subject`, `id`) (schema/019, `rewind admin token deny`).
    public func tokenDenied(issuer: String, subject: String, id: String?, _ done: @escaping (Result<Bool, RewindError>) -> Void) {
        query(.init("SELECT rewind_token_denied($1, $2, $3)", [issuer, subject, id])) { result in
            done(result.map { $0.count == 1 && $0[0, 0] == "t" })
        }
    }

    /// The user a signed token names — (`issuer`, `subject`) — made on first
    /// sight, its display name updated to the token's (schema/018).
    public func userForIdentity(issuer: String, subject: String, displayName: String?,
                                _ done: @escaping (Result<(id: Int64, name: String, displayName: String?, made: Bool), RewindError>) -> Void) {
        query(.init("SELECT id, name, display_name, made FROM rewind_user_for_identity($1, $2, $3)", [issuer, subject, displayName])) { result in
            done(result.flatMap { rows in
                guard rows.count == 1, let id = rows.int(0, 0), let name = rows[0, 1] else {
                    return .failure(RewindError(.internal, "rewind_user_for_identity answered no user"))
                }
                return .success((id: id, name: name, displayName: rows[0, 2], made: rows[0, 3] == "t"))
            })
        }
    }
}
