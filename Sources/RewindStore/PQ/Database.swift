import CLibPQ
import RewindCore

/// A blocking connection, for the admin CLI, migrations and tests. The server
/// never uses it: its queries go through `PipelineConnection` on the loop.
public final class Database {
    let conn: OpaquePointer
    /// What it was opened with: `another()` opens a second connection the same way.
    let conninfo: String
    /// Names prepared on this connection (`query` of a statement with `prepared`).
    private var prepared: Set<String> = []

    /// `conninfo` as libpq takes it ("" reads the standard PG* variables).
    public init(_ conninfo: String) throws(RewindError) {
        self.conninfo = conninfo
        guard let c = PQconnectdb(conninfo) else { throw .storage("out of memory") }
        guard PQstatus(c) == CONNECTION_OK else {
            let m = PQ.string(PQerrorMessage(c)).trimmingSpace
            PQfinish(c)
            throw .storage("cannot connect to PostgreSQL: \(m)")
        }
        conn = c
        _ = try? query("SET client_min_messages = warning")
    }

    deinit { PQfinish(conn) }

    /// A second connection to the same database (for queries while this one is busy on another thread).
    public func another() throws(RewindError) -> Database { try Database(conninfo) }

    /// Runs one parameterized statement and returns its rows.
    @discardableResult
    public func query(_ sql: String, _ params: [String?] = []) throws(RewindError) -> Rows {
        try query(PipelineConnection.Statement(sql, params))
    }

    /// Runs one statement whose parameters may be binary (arrays of a batch, as `BinaryArray` builds them).
    @discardableResult
    /// A statement with a `prepared` name is run as the server's pipelines
    /// run it: prepared on this connection the first time (its plan then
    /// cached by PostgreSQL as for a writer), executed by name after.
    public func query(_ statement: PipelineConnection.Statement) throws(RewindError) -> Rows {
        if let name = statement.prepared, !prepared.contains(name) {
            let p = PQprepare(conn, name, statement.sql, 0, nil)
            defer { PQclear(p) }
            guard PQresultStatus(p) == PGRES_COMMAND_OK else {
                let f = PQ.failure(p, conn: conn)
                throw RewindError(.internal, "SQL failed: \(f)", details: ["sqlstate": .string(f.sqlstate)])
            }
            prepared.insert(name)
        }
        let r = PQ.withParams(statement.params) { v, l, f in
            if let name = statement.prepared { return PQexecPrepared(conn, name, Int32(statement.params.count), v, l, f, 0) }
            return PQexecParams(conn, statement.sql, Int32(statement.params.count), nil, v, l, f, 0)
        }
        defer { PQclear(r) }
        switch PQresultStatus(r) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK: return PQ.rows(r!)
        default:
            let f = PQ.failure(r, conn: conn)
            if PQstatus(conn) != CONNECTION_OK { throw .storage(f.message) }
            var details: [(String, JSON?)] = [("sqlstate", .string(f.sqlstate)), ("message", .string(f.message))]
            if let constraint = f.constraint { details.append(("constraint", .string(constraint))) }
            throw RewindError(.internal, "SQL failed: \(f)", details: .obj(details))
        }
    }

    /// PostgreSQL's refusal behind an error `query` threw (nil for any other error).
    public static func failure(of error: Error) -> SQLFailure? {
        guard let e = error as? RewindError, let o = e.details?.objectValue, let state = o["sqlstate"]?.stringValue else { return nil }
        return SQLFailure(sqlstate: state, message: o["message"]?.stringValue ?? e.message, constraint: o["constraint"]?.stringValue)
    }

    /// Sends one statement without waiting for it: PostgreSQL runs it and
    /// sends its rows while the caller works; `receive` collects them. One
    /// statement at a time, and nothing else on the connection meanwhile.
    public func send(_ statement: PipelineConnection.Statement) throws(RewindError) {
        let sent = PQ.withParams(statement.params) { v, l, f in PQsendQueryParams(conn, statement.sql, Int32(statement.params.count), nil, v, l, f, 0) }
        guard sent == 1 else { throw .storage("cannot send a query: \(PQ.string(PQerrorMessage(conn)).trimmingSpace)") }
    }

    /// The rows of the statement `send` sent (its error, if it failed).
    public func receive() throws(RewindError) -> Rows {
        try receiveRows().text
    }

    /// `receive`, with the rows read in place (`ResultRows`).
    func receiveRows() throws(RewindError) -> ResultRows {
        var outcome: Result<ResultRows, RewindError> = .failure(.storage("no result: \(PQ.string(PQerrorMessage(conn)).trimmingSpace)"))
        while let r = PQgetResult(conn) {
            switch PQresultStatus(r) {
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK: outcome = .success(ResultRows(r))  // it frees the result
            default:
                defer { PQclear(r) }
                let f = PQ.failure(r, conn: conn)
                outcome = .failure(PQstatus(conn) != CONNECTION_OK ? .storage(f.message)
                    : RewindError(.internal, "SQL failed: \(f)", details: ["sqlstate": .string(f.sqlstate)]))
            }
        }
        return try outcome.get()
    }

    /// Runs a script of several statements (a migration file).
    public func execute(script: String) throws(RewindError) {
        let r = PQexec(conn, script)
        defer { PQclear(r) }
        switch PQresultStatus(r) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY: return
        default:
            let f = PQ.failure(r, conn: conn)
            throw RewindError(.internal, "SQL failed: \(f)", details: ["sqlstate": .string(f.sqlstate)])
        }
    }

    /// The SQLSTATE of a failure, to tell expected refusals from bugs in tests.
    public static func sqlstate(of e: RewindError) -> String? { e.details?.objectValue?["sqlstate"]?.stringValue }
}
