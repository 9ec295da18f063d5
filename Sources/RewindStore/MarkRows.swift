import RewindCore

/// Group marks as rows of the `group_marks` table: the one place that knows the columns.
enum MarkRows {
    static let select = """
        SELECT m.n, m.after_version, m.mark_id, m.user_id, m.client, m.kind, m.grp, m.scope, m.action, m.selection,
               m.tx, (extract(epoch FROM m.time) * 1000)::bigint
        FROM group_marks m
        """

    /// Marks of `doc` numbered after `after` that sit at or before event `toVersion`, in order.
    static func range(doc: String, after: Int64, toVersion: Int64, limit: Int) -> PipelineConnection.Statement {
        PipelineConnection.Statement(
            select + " WHERE m.doc = $1 AND m.n > $2 AND m.after_version <= $3 ORDER BY m.n LIMIT $4",
            [doc, String(after), String(toVersion), String(limit)])
    }

    static func decode(doc: String, _ rows: Rows) throws(RewindError) -> [GroupMark] {
        var out: [GroupMark] = []
        for r in rows.values {
            guard let n = r[0].flatMap({ Int64($0) }), let after = r[1].flatMap({ Int64($0) }), let id = r[2],
                  let user = r[3].flatMap({ Int64($0) }), let client = r[4],
                  let kind = r[5].flatMap({ GroupMark.Kind(rawValue: $0) }), let time = r[11].flatMap({ Int64($0) })
            else { throw RewindError(.internal, "malformed group mark row in \(doc)") }
            var selection: Selection?
            if let s = r[9] {
                do { selection = try Selection.parse(try JSONParser.parse(s, maxDepth: 4)) } catch {
                    throw RewindError(.internal, "mark \(n) of \(doc) has a selection that does not parse: \(error)")
                }
            }
            out.append(GroupMark(n: n, afterVersion: after, id: id, userID: user, client: client, kind: kind, group: r[6],
                                 scope: r[7].map { Key($0) }, action: r[8], selection: selection, tx: r[10], time: time))
        }
        return out
    }

    static func append(_ m: GroupMark, doc: String) -> PipelineConnection.Statement {
        PipelineConnection.Statement(
            "SELECT status, version FROM rewind_mark($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            [doc, String(m.n), String(m.afterVersion), m.id, String(m.userID), m.client, m.kind.rawValue, m.group,
             m.scope?.string, m.action, m.selection.map { JSONWriter.string($0.json) }, m.tx, String(m.time)])
    }
}

extension LogEntry {
    /// Events and marks read from their tables, in log order: a mark placed
    /// after version v comes after event v and before event v + 1.
    public static func merge(_ events: [Event], _ marks: [GroupMark]) -> [LogEntry] {
        var out: [LogEntry] = []
        out.reserveCapacity(events.count + marks.count)
        var i = 0
        for e in events {
            while i < marks.count, marks[i].afterVersion < e.version {
                out.append(.mark(marks[i]))
                i += 1
            }
            out.append(.event(e))
        }
        out += marks[i...].map { .mark($0) }
        return out
    }
}
