/// The lines of `rewind admin export` and `import`: a document as JSON lines.
///
/// Each document is one header line, then one line per log entry (event or
/// group mark) in log order:
///
///     {"document":"d","title":null,"owner":"alice","created_us":…,"access":[{"user":"bob","role":"editor"}],
///      "users":[{"id":1,"name":"alice"},…],"entries":2,"seq":2,"version":1,"hash":"9f…"}
///     {"doc":"d","seq":1,"version":1,"entry":"event","id":"…","user_id":1,"client":"c","kind":"edit",…,"hash":"…"}
///     {"doc":"d","seq":2,"version":1,"entry":"mark",…}
///
/// An entry line holds every column of the `log` table, by its name and in
/// its order, nulls written out: `ops`, `inverse` and `meta` as the exact
/// text stored (and hashed), `time_us` the stored time in microseconds since
/// 1970 (the hash covers it in milliseconds), `hash` in hex. The header
/// names users (ids are the source database's; names match them elsewhere)
/// and ends with how many entries follow and the last one's seq, version
/// and hash, so a truncated file is caught. Writing is deterministic: the
/// same rows give the same bytes.
public enum LogExport {
    public struct Member: Sendable, Equatable {
        public var user: String
        public var role: String
        public init(user: String, role: String) { self.user = user; self.role = role }
    }

    public struct UserName: Sendable, Equatable {
        public var id: Int64
        public var name: String
        public init(id: Int64, name: String) { self.id = id; self.name = name }
    }

    public struct Header: Sendable, Equatable {
        public var doc: String
        public var title: String?
        /// The owner's user name.
        public var owner: String
        public var createdMicros: Int64
        public var access: [Member]
        /// Every user the document involves (entries, owner, members), by id in the source database.
        public var users: [UserName]
        /// How many entry lines follow.
        public var entries: Int64
        /// The last entry exported: its seq, version and hash (0, 0, empty: none).
        public var seq: Int64
        public var version: Int64
        public var hash: [UInt8]

        public init(doc: String, title: String?, owner: String, createdMicros: Int64, access: [Member], users: [UserName],
                    entries: Int64, seq: Int64, version: Int64, hash: [UInt8]) {
            self.doc = doc; self.title = title; self.owner = owner; self.createdMicros = createdMicros; self.access = access
            self.users = users; self.entries = entries; self.seq = seq; self.version = version; self.hash = hash
        }

        public var json: JSON {
            .obj([("document", .string(doc)), ("title", title.map { .string($0) } ?? .null), ("owner", .string(owner)),
                  ("created_us", .int(createdMicros)),
                  ("access", .array(access.map { .obj([("user", .string($0.user)), ("role", .string($0.role))]) })),
                  ("users", .array(users.map { .obj([("id", .int($0.id)), ("name", .string($0.name))]) })),
                  ("entries", .int(entries)), ("seq", .int(seq)), ("version", .int(version)), ("hash", .string(Hex.string(hash)))])
        }

        public init(json o: JSONObject) throws(RewindError) {
            doc = try field(o, "document").string()
            title = try field(o, "title").optionalString()
            owner = try field(o, "owner").string()
            createdMicros = try field(o, "created_us").int()
            guard let a = o["access"]?.arrayValue, let u = o["users"]?.arrayValue else { throw .badRequest("access and users must be arrays") }
            access = try a.map { (m: JSON) throws(RewindError) -> Member in
                guard let m = m.objectValue else { throw .badRequest("an access member must be an object") }
                return Member(user: try field(m, "user").string(), role: try field(m, "role").string())
            }
            users = try u.map { (m: JSON) throws(RewindError) -> UserName in
                guard let m = m.objectValue else { throw .badRequest("a user must be an object") }
                return UserName(id: try field(m, "id").int(), name: try field(m, "name").string())
            }
            entries = try field(o, "entries").int()
            seq = try field(o, "seq").int()
            version = try field(o, "version").int()
            hash = try field(o, "hash").hex()
        }
    }

    /// An entry as stored: the row (its `time` in milliseconds, as hashed) and the stored time in microseconds.
    public struct Entry: Sendable, Equatable {
        public var row: LogRow
        public var timeMicros: Int64

        public init(row: LogRow, timeMicros: Int64) { self.row = row; self.timeMicros = timeMicros }

        public var json: JSON {
            func text(_ s: String?) -> JSON { s.map { .string($0) } ?? .null }
            return .obj([("doc", .string(row.doc)), ("seq", .int(row.seq)), ("version", .int(row.version)), ("entry", .string(row.entry)),
                         ("id", .string(row.id)), ("user_id", .int(row.userID)), ("client", .string(row.client)), ("kind", .string(row.kind)),
                         ("grp", text(row.group)), ("action", text(row.action)), ("tx", text(row.tx)), ("tx_digest", text(row.txDigest)),
                         ("base", row.base.map { .int($0) } ?? .null), ("ops", text(row.ops)), ("inverse", text(row.inverse)),
                         ("refers", text(row.refers)), ("meta", text(row.meta)), ("time_us", .int(timeMicros)),
                         ("hash", .string(Hex.string(row.hash)))])
        }

        public init(json o: JSONObject) throws(RewindError) {
            let id = try field(o, "id").string()
            guard LogExport.isCanonicalUUID(id) else { throw .badRequest("id \"\(id)\" is not a lowercase uuid") }
            let micros = try field(o, "time_us").int()
            row = LogRow(doc: try field(o, "doc").string(), seq: try field(o, "seq").int(), version: try field(o, "version").int(),
                         entry: try field(o, "entry").string(), id: id, userID: try field(o, "user_id").int(),
                         client: try field(o, "client").string(), kind: try field(o, "kind").string(),
                         group: try field(o, "grp").optionalString(), action: try field(o, "action").optionalString(),
                         tx: try field(o, "tx").optionalString(), txDigest: try field(o, "tx_digest").optionalString(),
                         base: try field(o, "base").optionalInt(), ops: try field(o, "ops").optionalString(),
                         inverse: try field(o, "inverse").optionalString(), refers: try field(o, "refers").optionalString(),
                         meta: try field(o, "meta").optionalString(), time: LogExport.millis(micros: micros), hash: try field(o, "hash").hex())
            timeMicros = micros
        }
    }

    /// One line of a file: a header or an entry.
    public enum Line: Sendable, Equatable {
        case header(Header)
        case entry(Entry)

        public static func parse(_ bytes: [UInt8]) throws(RewindError) -> Line {
            let json: JSON
            do { json = try JSONParser.parse(bytes, maxDepth: 8) } catch { throw .badRequest("not JSON: \(error.message)") }
            guard let o = json.objectValue else { throw .badRequest("not a JSON object") }
            return o["document"] != nil ? .header(try Header(json: o)) : .entry(try Entry(json: o))
        }
    }

    /// The stored time in milliseconds, as PostgreSQL computes it for the
    /// hash (`(extract(epoch FROM time) * 1000)::bigint`: numeric, rounded half away from zero).
    public static func millis(micros: Int64) -> Int64 {
        micros >= 0 ? (micros + 500) / 1000 : -((-micros + 500) / 1000)
    }

    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lowercase: PostgreSQL's text of a uuid, which the hash covers.
    public static func isCanonicalUUID(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count == 36 else { return false }
        for (i, c) in u.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 { if c != 45 { return false } } else if !((48...57).contains(c) || (97...102).contains(c)) { return false }
        }
        return true
    }
}

// MARK: Reading fields strictly

private struct Field {
    let name: String
    let value: JSON?

    func string() throws(RewindError) -> String {
        guard let s = value?.stringValue else { throw .badRequest("\"\(name)\" must be a string") }
        return s
    }
    func optionalString() throws(RewindError) -> String? {
        guard let v = value, !v.isNull else { return nil }
        return try string()
    }
    func int() throws(RewindError) -> Int64 {
        guard let i = value?.intValue else { throw .badRequest("\"\(name)\" must be an integer") }
        return i
    }
    func optionalInt() throws(RewindError) -> Int64? {
        guard let v = value, !v.isNull else { return nil }
        return try int()
    }
    func hex() throws(RewindError) -> [UInt8] {
        guard let b = Hex.bytes(try string()), b.isEmpty || b.count == 32 else { throw .badRequest("\"\(name)\" must be 32 bytes in hex") }
        return b
    }
}

private func field(_ o: JSONObject, _ name: String) throws(RewindError) -> Field {
    guard let value = o[name] else { throw .badRequest("\"\(name)\" is missing") }
    return Field(name: name, value: value)
}

/// Entries of a document moved under another id or other user ids: every
/// hash is computed again, since the hash covers `doc`, `user_id` and `id`
/// (`LogRow.chained`). The source chain must have been checked first: a
/// re-chained log proves only that nothing changed after the import.
///
/// Entry ids are renewed when the document gets a new id (`renewIDs`), as
/// the log's ids are unique across documents and the original may sit in
/// the same database. A new id is derived from the new document id and the
/// old entry id (SHA-256, as a version-8 uuid), so the same import gives the
/// same ids.
public struct Rechain: Sendable {
    public let doc: String
    public let users: [Int64: Int64]
    public let renewIDs: Bool
    /// Seals plain ops and inverses with the target document's key, bound to their new place.
    public let cipher: DocumentCipher?
    public private(set) var previous: [UInt8] = []

    public init(doc: String, users: [Int64: Int64], renewIDs: Bool, sealingWith cipher: DocumentCipher? = nil) {
        self.doc = doc
        self.users = users
        self.renewIDs = renewIDs
        self.cipher = cipher
    }

    /// The row as it is stored in the target, chained after the one before.
    public mutating func next(_ source: LogRow) -> LogRow {
        var row = source
        row.doc = doc
        row.userID = users[source.userID] ?? source.userID
        if renewIDs { row.id = Self.derivedID(doc: doc, from: source.id) }
        if let cipher {
            if let ops = row.ops, let inverse = row.inverse {
                (row.ops, row.inverse) = cipher.sealed(ops: ops, inverse: inverse, seq: row.seq, id: row.id)
            }
        }
        row.hash = row.chained(after: previous)
        previous = row.hash
        return row
    }

    static func derivedID(doc: String, from id: String) -> String {
        var b = Array(SHA256.hash(Array((doc + "\n" + id).utf8)).prefix(16))
        b[6] = (b[6] & 0x0F) | 0x80
        b[8] = (b[8] & 0x3F) | 0x80
        let h = Hex.string(b)
        let c = Array(h)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-" + String(c[20..<32])
    }
}
