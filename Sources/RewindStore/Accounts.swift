import Glibc
import RewindCore

/// Users and their tokens (admin CLI side; the server only checks tokens).
public enum Accounts {
    /// A fresh random token: 32 bytes from the system's CSPRNG, hex.
    public static func newToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let s = String(rng.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }.joined()
    }

    /// Creates a user and returns a token for them. `conflict` if the name is taken.
    public static func addUser(_ name: String, db: Database) throws(RewindError) -> String {
        guard !name.isEmpty, name.utf8.count <= 64 else { throw .badRequest("a user name is 1 to 64 bytes") }
        let existing = try db.query("SELECT id FROM users WHERE name = $1", [name])
        if existing.count > 0 { throw .conflict("user \"\(name)\" already exists; `rewind admin user token \(name)` issues a new token") }
        let rows = try db.query("INSERT INTO users (name) VALUES ($1) RETURNING id", [name])
        return try issueToken(userID: rows[0, 0]!, db: db)
    }

    /// Issues one more token for an existing user. `not_found` if there is none.
    public static func token(for name: String, db: Database) throws(RewindError) -> String {
        let rows = try db.query("SELECT id FROM users WHERE name = $1", [name])
        guard rows.count == 1 else { throw .notFound("no user \"\(name)\"") }
        return try issueToken(userID: rows[0, 0]!, db: db)
    }

    private static func issueToken(userID: String, db: Database) throws(RewindError) -> String {
        let token = newToken()
        try db.query("INSERT INTO tokens (token_hash, user_id) VALUES (sha256(convert_to($1, 'UTF8')), $2)", [token, userID])
        return token
    }

    /// The SQL that maps a token to its user, shared by the server's async path.
    static let authenticateSQL =
        "SELECT u.id, u.name FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = sha256(convert_to($1, 'UTF8')) AND t.revoked_at IS NULL"
}
