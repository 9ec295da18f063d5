import RewindCore

/// Undo prompts kept in PostgreSQL (schema/024), so that they outlive the
/// instance that showed them and are answered once across instances. Every
/// change that ends a prompt notifies `rewind_prompts` with its id: the other
/// instances take it away from the terminals that show it.
public enum PromptRows {
    /// A prompt still open for a terminal: its id, what it is about, and how long it has left.
    public struct Open: Sendable {
        public let id: String
        public let cause: PromptCause
        public let secondsLeft: Double
    }

    /// Numbers the prompt in its document and stores it; returns its id.
    static let storeSQL = """
        WITH n AS (
            INSERT INTO prompt_counters AS c (doc, last) VALUES ($1, 1)
            ON CONFLICT (doc) DO UPDATE SET last = c.last + 1
            RETURNING last)
        INSERT INTO prompts (id, doc, user_id, client, cause, expires_at)
        SELECT $1 || ':p' || n.last, $1, $2, $3, $4::jsonb, now() + make_interval(secs => $5::float8)
        FROM n RETURNING id
        """

    /// The first answer takes the row (`$2`: the action, "cancel" for a cancel); nothing if it was taken or expired.
    static let answerSQL = """
        WITH taken AS (
            UPDATE prompts SET answered_at = now(), answered = $2, answered_by = $3
            WHERE id = $1 AND answered_at IS NULL AND expires_at > now()
            RETURNING id)
        SELECT pg_notify('rewind_prompts', id) FROM taken
        """

    /// An answer taken but not carried out (its terminal went first) is given back: the row is open
    /// again, and `+<id>` on `rewind_prompts` has the instances show it to that terminal if it is there.
    static let releaseSQL = """
        WITH back AS (
            UPDATE prompts SET answered_at = NULL, answered = NULL, answered_by = NULL
            WHERE id = $1 AND answered_by = $2 AND answered <> 'cancel' AND expires_at > now()
            RETURNING id)
        SELECT pg_notify('rewind_prompts', '+' || id) FROM back
        """

    static let openSQL = """
        SELECT id, cause::text, extract(epoch FROM expires_at - now())::float8 FROM prompts
        WHERE doc = $1 AND user_id = $2 AND client = $3 AND answered_at IS NULL AND expires_at > now()
        ORDER BY created_at, id
        """

    /// Which of the given ids (a JSON array) are over: answered, cancelled or expired.
    static let endedSQL = """
        SELECT id FROM prompts
        WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb)) AND (answered_at IS NOT NULL OR expires_at <= now())
        """

    static let sweepSQL = "DELETE FROM prompts WHERE coalesce(answered_at, expires_at) < now() - interval '1 hour'"
}

extension EventStore {
    /// Stores a prompt about `cause` for terminal `(user, client)` in `doc`, open for `ttl` seconds; answers its id.
    public func storePrompt(doc: String, user: Int64, client: String, cause: PromptCause, ttl: Double,
                            _ done: @escaping (Result<String, RewindError>) -> Void)
    {
        query(.init(PromptRows.storeSQL, [doc, String(user), client, JSONWriter.string(cause.json), String(ttl)])) { result in
            done(result.flatMap { rows in
                guard rows.count == 1, let id = rows[0, 0] else { return .failure(RewindError(.internal, "the prompt was not stored")) }
                return .success(id)
            })
        }
    }

    /// Records `action` as the answer to prompt `id` if nobody answered it yet
    /// and it has not expired: true if this answer is the one that counts.
    public func answerPrompt(_ id: String, action: String, instance: Int32, _ done: @escaping (Result<Bool, RewindError>) -> Void) {
        query(.init(PromptRows.answerSQL, [id, action, String(instance)])) { result in done(result.map { $0.count == 1 }) }
    }

    /// Gives back an answer this instance took for prompt `id` but could not carry out.
    public func releasePrompt(_ id: String, instance: Int32, _ done: @escaping (Result<Void, RewindError>) -> Void = { _ in }) {
        query(.init(PromptRows.releaseSQL, [id, String(instance)])) { result in done(result.map { _ in () }) }
    }

    /// The prompts still open for terminal `(user, client)` in `doc`, oldest first (a cause that cannot be read is skipped).
    public func openPrompts(doc: String, user: Int64, client: String, _ done: @escaping (Result<[PromptRows.Open], RewindError>) -> Void) {
        query(.init(PromptRows.openSQL, [doc, String(user), client])) { result in
            done(result.map { rows in
                (0..<rows.count).compactMap { i in
                    guard let id = rows[i, 0], let text = rows[i, 1], let json = try? JSONParser.parse(text),
                          let cause = PromptCause(json: json) else { return nil }
                    return PromptRows.Open(id: id, cause: cause, secondsLeft: rows[i, 2].flatMap(Double.init) ?? 0)
                }
            })
        }
    }

    /// Which of `ids` are over (answered, cancelled or expired).
    public func endedPrompts(_ ids: [String], _ done: @escaping (Result<[String], RewindError>) -> Void) {
        query(.init(PromptRows.endedSQL, [JSONWriter.string(.array(ids.map { .string($0) }))])) { result in
            done(result.map { rows in (0..<rows.count).compactMap { rows[$0, 0] } })
        }
    }

    /// Deletes prompts that ended (answered, cancelled or expired) over an hour ago.
    public func sweepPrompts(_ done: @escaping (Result<Void, RewindError>) -> Void = { _ in }) {
        query(.init(PromptRows.sweepSQL, [])) { result in done(result.map { _ in () }) }
    }
}
