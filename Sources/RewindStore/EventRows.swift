import RewindCore

/// Events as rows of the `events` table: the one place that knows the columns.
enum EventRows {
    static let select = """
        SELECT e.version, e.event_id, e.tx, e.tx_digest, e.user_id, u.name, e.client, e.grp, e.kind,
               e.action, e.base, e.ops, e.inverse, e.refers, (extract(epoch FROM e.time) * 1000)::bigint, e.meta
        FROM events e JOIN users u ON u.id = e.user_id
        """

    /// Events of `doc` after `after`, oldest first, at most `limit` (up to `to` when given).
    static func range(doc: String, after: Int64, to: Int64? = nil, limit: Int) -> PipelineConnection.Statement {
        PipelineConnection.Statement(
            select + " WHERE e.doc = $1 AND e.version > $2 AND e.version <= $3 ORDER BY e.version LIMIT $4",
            [doc, String(after), String(to ?? Int64.max), String(limit)])
    }

    static func decode(doc: String, _ rows: Rows) throws(RewindError) -> [Event] {
        var out: [Event] = []
        out.reserveCapacity(rows.count)
        for r in rows.values {
            guard let version = r[0].flatMap({ Int64($0) }), let id = r[1], let tx = r[2], let digest = r[3],
                  let user = r[4].flatMap({ Int64($0) }), let name = r[5], let client = r[6], let grp = r[7],
                  let kind = r[8].flatMap({ EventKind(rawValue: $0) }), let base = r[10].flatMap({ Int64($0) }),
                  let opsText = r[11], let invText = r[12], let time = r[14].flatMap({ Int64($0) })
            else { throw RewindError(.internal, "malformed event row in \(doc)") }
            let ops = try parseOps(opsText, doc: doc, version: version)
            let inverse = try parseOps(invText, doc: doc, version: version)
            var meta = EventMeta()
            if let m = r[15] {
                do { meta = try EventMeta.parse(try JSONParser.parse(m, maxDepth: 8)) } catch {
                    throw RewindError(.internal, "event \(version) of \(doc) has meta that does not parse: \(error)")
                }
            }
            out.append(Event(doc: doc, version: version, id: id, tx: tx, txDigest: digest, userID: user, userName: name,
                             client: client, group: grp, kind: kind, action: r[9], base: base, ops: ops,
                             inverse: inverse, refers: r[13], time: time, meta: meta))
        }
        return out
    }

    private static func parseOps(_ text: String, doc: String, version: Int64) throws(RewindError) -> [Op] {
        do {
            let json = try JSONParser.parse(text, maxDepth: Limits.unbounded.maxJSONDepth)
            return try Op.parseList(json, limits: .unbounded)
        } catch {
            throw RewindError(.internal, "event \(version) of \(doc) holds ops that do not parse: \(error)")
        }
    }

    /// The `rewind_append` call for one event that must follow the event
    /// `prevID`, written by a server that has seen `marks` group marks.
    static func append(_ e: Event, prevID: String?, marks: Int64) -> PipelineConnection.Statement {
        PipelineConnection.Statement(
            "SELECT status, version FROM rewind_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
            [e.doc, String(e.version), e.id, e.tx, e.txDigest, String(e.userID), e.client, e.group, e.kind.rawValue,
             e.action, String(e.base), JSONWriter.string(Op.encodeList(e.ops)), JSONWriter.string(Op.encodeList(e.inverse)),
             e.refers, String(e.time), prevID, e.meta.isEmpty ? nil : JSONWriter.string(e.meta.json), String(marks)])
    }
}
