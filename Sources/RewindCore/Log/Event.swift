/// What an event records about the change it made.
public enum EventKind: String, Sendable, CaseIterable {
    case edit, undo, redo, restore
}

/// One committed change of one document: a row of the append-only log.
public struct Event: Sendable, Equatable {
    public var doc: String
    /// 1, 2, 3, … per document, no gaps.
    public var version: Int64
    /// A uuid, chosen by the server.
    public var id: String
    /// The terminal's transaction id: unique per user and document.
    public var tx: String
    /// Fingerprint of the request's content, to tell a retry from a different request with the same `tx`.
    public var txDigest: String
    public var userID: Int64
    public var userName: String
    public var client: String
    public var group: String
    public var kind: EventKind
    public var action: String?
    /// The version the ops were made against, before rebasing.
    public var base: Int64
    /// The ops as applied (rebased, indexes clamped).
    public var ops: [Op]
    /// The ops that revert them, in the order to apply them.
    public var inverse: [Op]
    /// For undo and redo: the group undone or redone.
    public var refers: String?
    /// Milliseconds since 1970 on the server's clock.
    public var time: Int64
    /// Undo scope, open group, selection (see `EventMeta`).
    public var meta: EventMeta
    /// Position in the document's log (events and group marks): 1, 2, 3, …
    public var seq: Int64 = 0
    /// SHA-256 chaining this entry to the one before it (`LogRow`); empty until sealed.
    public var hash: [UInt8] = []
    /// Ops, inverse and meta as the text stored in the log and hashed.
    public var stored = StoredText()

    /// The exact text of the log's `ops`, `inverse` and `meta` columns
    /// (ops and inverse sealed with the document's key when it has one:
    /// `DocumentCipher`), and the ops' plain JSON for the wire.
    public struct StoredText: Sendable, Equatable {
        public var ops = ""
        public var inverse = ""
        public var meta: String?
        /// The ops as plain JSON (what `ops` holds when nothing is sealed); "" when not known.
        public var plainOps = ""
        public init(ops: String = "", inverse: String = "", meta: String? = nil, plainOps: String = "") {
            self.ops = ops; self.inverse = inverse; self.meta = meta
            self.plainOps = plainOps.isEmpty && !DocumentCipher.isSealed(ops) ? ops : plainOps
        }
    }

    public init(doc: String, version: Int64, id: String, tx: String, txDigest: String, userID: Int64, userName: String,
                client: String, group: String, kind: EventKind, action: String?, base: Int64, ops: [Op], inverse: [Op],
                refers: String?, time: Int64, meta: EventMeta = EventMeta(), seq: Int64 = 0, hash: [UInt8] = [],
                stored: StoredText = StoredText())
    {
        self.meta = meta
        self.seq = seq; self.hash = hash; self.stored = stored
        self.doc = doc; self.version = version; self.id = id; self.tx = tx; self.txDigest = txDigest
        self.userID = userID; self.userName = userName; self.client = client; self.group = group
        self.kind = kind; self.action = action; self.base = base; self.ops = ops; self.inverse = inverse
        self.refers = refers; self.time = time
    }

    /// The wire form, encoded: what `json` encodes to, written straight into
    /// bytes and with the ops as stored (the text sealed with the event), so
    /// a commit is encoded once for the log and once for every terminal.
    public var wireBytes: [UInt8] {
        var w = JSONWriter(capacity: 256 + stored.plainOps.utf8.count)
        w.write(raw: "{\"id\":" as StaticString); w.write(string: id)
        w.write(raw: ",\"version\":" as StaticString); w.write(int: version)
        w.write(raw: ",\"time\":" as StaticString); w.write(timestamp: time)
        w.write(raw: ",\"user\":" as StaticString); w.write(string: userName)
        w.write(raw: ",\"client\":" as StaticString); w.write(string: client)
        w.write(raw: ",\"kind\":" as StaticString); w.write(string: kind.rawValue)
        w.write(raw: ",\"group\":" as StaticString); w.write(string: group)
        w.write(raw: ",\"action\":" as StaticString); if let action { w.write(string: action) } else { w.write(raw: "null" as StaticString) }
        w.write(raw: ",\"ops\":" as StaticString); if stored.plainOps.isEmpty { Op.writeList(ops, into: &w) } else { w.write(raw: stored.plainOps) }
        w.write(raw: ",\"tx\":" as StaticString); w.write(string: tx)
        if let refers { w.write(raw: ",\"refers\":" as StaticString); w.write(string: refers) }
        if let scope = meta.scope { w.write(raw: ",\"scope\":" as StaticString); w.write(string: scope.string) }
        w.write(raw: "}" as StaticString)
        return w.bytes
    }

    /// The wire form inside an `events` push (PROTOCOL.md).
    public var json: JSON {
        .obj([
            ("id", .string(id)),
            ("version", .int(version)),
            ("time", .string(Timestamp.iso8601(millis: time))),
            ("user", .string(userName)),
            ("client", .string(client)),
            ("kind", .string(kind.rawValue)),
            ("group", .string(group)),
            ("action", action.map { .string($0) } ?? .null),
            ("ops", Op.encodeList(ops)),
            ("tx", .string(tx)),
            ("refers", refers.map { .string($0) }),
            ("scope", meta.scope.map { .string($0.string) }),
        ])
    }
}

public enum Timestamp {
    /// `2026-11-22T22:54:52.123Z` from milliseconds since 1970 (proleptic Gregorian, UTC).
    public static func iso8601(millis: Int64) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(iso8601Millis: millis, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The same text appended to `out` (each event's wire form carries one: no `String` made on the way).
    public static func append(iso8601Millis millis: Int64, to out: inout [UInt8]) {
        let ms = Int(((millis % 1000) + 1000) % 1000)
        let secs = (millis - Int64(ms)) / 1000
        var days = Int(secs.quotientRoundingDown(86_400))
        let daySecs = Int(secs - Int64(days) * 86_400)
        // Howard Hinnant's civil_from_days.
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let doe = days - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        if y >= 0 && y < 10_000 {
            // Every date a server writes: 24 bytes of fixed width, written
            // where they go (digit by digit, with an append each, it was
            // ~1,400 instructions an event's wire form).
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { b in
                let p = b.baseAddress!
                func put(_ v: Int, _ width: Int, at i: Int) {
                    var v = v
                    for k in stride(from: width - 1, through: 0, by: -1) {
                        p[i + k] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
                        v /= 10
                    }
                }
                put(y, 4, at: 0); p[4] = UInt8(ascii: "-")
                put(m, 2, at: 5); p[7] = UInt8(ascii: "-")
                put(d, 2, at: 8); p[10] = UInt8(ascii: "T")
                put(daySecs / 3600, 2, at: 11); p[13] = UInt8(ascii: ":")
                put(daySecs / 60 % 60, 2, at: 14); p[16] = UInt8(ascii: ":")
                put(daySecs % 60, 2, at: 17); p[19] = UInt8(ascii: ".")
                put(ms, 3, at: 20); p[23] = UInt8(ascii: "Z")
                out.append(contentsOf: UnsafeBufferPointer(b))
            }
            return
        }
        func pad(_ v: Int, _ w: Int, then separator: UInt8?) {
            if v < 0 || v >= 10_000 {
                // Outside the four-digit years: as many digits as it takes.
                let s = String(v)
                out += Array(repeating: UInt8(ascii: "0"), count: max(0, w - s.utf8.count))
                out += s.utf8
            } else {
                for _ in 0..<max(0, w - digitsOf(v)) { out.append(UInt8(ascii: "0")) }
                var p = 1
                while p * 10 <= v { p *= 10 }
                var v = v
                while p > 0 {
                    out.append(UInt8(ascii: "0") + UInt8(v / p))
                    v %= p
                    p /= 10
                }
            }
            if let separator { out.append(separator) }
        }
        pad(y, 4, then: UInt8(ascii: "-"))
        pad(m, 2, then: UInt8(ascii: "-"))
        pad(d, 2, then: UInt8(ascii: "T"))
        pad(daySecs / 3600, 2, then: UInt8(ascii: ":"))
        pad(daySecs / 60 % 60, 2, then: UInt8(ascii: ":"))
        pad(daySecs % 60, 2, then: UInt8(ascii: "."))
        pad(ms, 3, then: UInt8(ascii: "Z"))
    }

    private static func digitsOf(_ v: Int) -> Int {
        var n = 1, v = v
        while v >= 10 { v /= 10; n += 1 }
        return n
    }
}

extension Int64 {
    fileprivate func quotientRoundingDown(_ d: Int64) -> Int64 {
        let q = self / d
        return (self % d != 0 && (self < 0) != (d < 0)) ? q - 1 : q
    }
}

/// FNV-1a, 64 bits: a stable (unseeded) fingerprint, the same in every process.
public enum Fingerprint {
    public static func hex(_ bytes: [UInt8]) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        let s = String(h, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}
