import RewindCore

/// The server API's keys (schema/020), as SQL: made, listed and revoked by
/// the admin CLI, looked up by the server for each API request.
public enum APIKeys {
    /// What a key may do.
    public enum Scope: String, Sendable, CaseIterable {
        case docsRead = "docs:read", docsWrite = "docs:write", accessWrite = "access:write", eventsRead = "events:read"
    }

    /// A key that authenticates: its name, scopes and service user.
    public struct Key: Sendable, Equatable {
        public let id: Int64
        public let name: String
        public let scopes: Set<Scope>
        public let serviceUser: (id: Int64, name: String)

        public static func == (a: Key, b: Key) -> Bool { a.id == b.id && a.scopes == b.scopes }
    }

    public struct Listed: Sendable {
        public var name: String
        public var scopes: [String]
        public var serviceUser: String
        public var created: String
        public var revoked: String?
    }

    /// Makes key `name` with `scopes` and its service user (`api:<name>`); answers the key, shown once.
    public static func create(_ name: String, scopes: [Scope], db: Database) throws(RewindError) -> String {
        guard name.utf8.count <= 60, !name.isEmpty, name.utf8.allSatisfy({ c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F || c == 0x2D
        }) else { throw .badRequest("a key's name is 1 to 60 letters, digits, `.`, `_` or `-`") }
        guard !scopes.isEmpty else { throw .badRequest("give at least one --scope (\(Scope.allCases.map(\.rawValue).joined(separator: ", ")))") }
        let key = "rwk_" + Accounts.newToken()
        let scopeList = "{" + Set(scopes).map(\.rawValue).sorted().joined(separator: ",") + "}"
        do {
            try db.query("""
                WITH u AS (INSERT INTO users (name, display_name) VALUES ('api:' || $1, $1) RETURNING id)
                INSERT INTO api_keys (name, key_hash, scopes, service_user)
                SELECT $1, sha256(convert_to($2, 'UTF8')), $3::text[], u.id FROM u
                """, [name, key, scopeList])
        } catch where Database.sqlstate(of: error) == "23505" {
            throw .conflict("there is already a key named \"\(name)\", or a user named \"api:\(name)\"")
        }
        return key
    }

    /// Every key, newest first (revoked ones too).
    public static func list(db: Database) throws(RewindError) -> [Listed] {
        let iso = "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'"
        let rows = try db.query("""
            SELECT k.name, array_to_string(k.scopes, ','), u.name, to_char(k.created_at AT TIME ZONE 'UTC', \(iso)),
                   to_char(k.revoked_at AT TIME ZONE 'UTC', \(iso))
            FROM api_keys k JOIN users u ON u.id = k.service_user ORDER BY k.id DESC
            """)
        return (0..<rows.count).map { i in
            Listed(name: rows[i, 0] ?? "", scopes: (rows[i, 1] ?? "").split(separator: ",").map(String.init), serviceUser: rows[i, 2] ?? "",
                   created: rows[i, 3] ?? "", revoked: rows[i, 4])
        }
    }

    /// Revokes key `name`: from now on its requests are `401`.
    public static func revoke(_ name: String, db: Database) throws(RewindError) {
        guard try db.query("UPDATE api_keys SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL RETURNING 1", [name]).count == 1 else {
            throw .notFound("no key named \"\(name)\" that is not revoked (`rewind admin api-key list`)")
        }
    }

    /// Whether key `id` is still good (a stream it opened ends once it is revoked).
    public static func isLive(_ id: Int64, db: Database) throws(RewindError) -> Bool {
        try db.query("SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL", [String(id)]).count == 1
    }

    /// The key a request's bearer token is, if it authenticates (the server's async path).
    static let lookupSQL = """
        SELECT k.id, k.name, array_to_string(k.scopes, ','), u.id, u.name FROM api_keys k JOIN users u ON u.id = k.service_user
        WHERE k.key_hash = sha256(convert_to($1, 'UTF8')) AND k.revoked_at IS NULL
        """

    static func decode(_ rows: Rows) -> Key? {
        guard rows.count == 1, let id = rows.int(0, 0), let name = rows[0, 1], let user = rows.int(0, 3), let userName = rows[0, 4] else { return nil }
        let scopes = Set((rows[0, 2] ?? "").split(separator: ",").compactMap { Scope(rawValue: String($0)) })
        return Key(id: id, name: name, scopes: scopes, serviceUser: (id: user, name: userName))
    }
}
