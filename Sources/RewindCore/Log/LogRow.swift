/// An entry of a document's log as it is stored: every field as the text
/// (or number) the `log` table holds, and the hash that chains it to the
/// entry before it.
///
/// The hash is SHA-256 over the previous entry's hash (no bytes for the
/// first) followed by every field below, in this order, each encoded as its
/// length in bytes (8 bytes, big-endian; −1 for null) and then its UTF-8
/// bytes. Numbers are written in decimal, the id as the usual lowercase uuid
/// text, the time as milliseconds since 1970:
///
///     doc, seq, version, entry, id, user_id, client, kind, grp, action,
///     tx, tx_digest, base, ops, inverse, refers, meta, time_ms
///
/// No field can run into the next, so two different rows never hash alike.
/// `schema/008_log.sql` defines the same function (`rewind_entry_hash`), so
/// anyone can check the chain with SQL alone.
public struct LogRow: Sendable, Equatable {
    public var doc: String
    /// Position in the document's stream: 1, 2, 3, … over events and marks.
    public var seq: Int64
    /// Events at or before this entry: an event's own version (1, 2, 3, …),
    /// a mark's the version of the event it follows.
    public var version: Int64
    /// "event" or "mark".
    public var entry: String
    public var id: String
    public var userID: Int64
    public var client: String
    public var kind: String
    public var group: String?
    public var action: String?
    public var tx: String?
    public var txDigest: String?
    public var base: Int64?
    public var ops: String?
    public var inverse: String?
    public var refers: String?
    public var meta: String?
    public var time: Int64
    public var hash: [UInt8]

    public init(doc: String, seq: Int64, version: Int64, entry: String, id: String, userID: Int64, client: String, kind: String,
                group: String?, action: String?, tx: String?, txDigest: String?, base: Int64?, ops: String?, inverse: String?,
                refers: String?, meta: String?, time: Int64, hash: [UInt8]) {
        self.doc = doc; self.seq = seq; self.version = version; self.entry = entry; self.id = id; self.userID = userID
        self.client = client; self.kind = kind; self.group = group; self.action = action; self.tx = tx; self.txDigest = txDigest
        self.base = base; self.ops = ops; self.inverse = inverse; self.refers = refers; self.meta = meta; self.time = time
        self.hash = hash
    }

    /// The hash of this row after the entry whose hash is `previous`.
    public func chained(after previous: [UInt8]) -> [UInt8] {
        Self.chainHash(after: previous, doc: doc, seq: seq, version: version, entry: entry, id: id, userID: userID, client: client,
                       kind: kind, group: group, action: action, tx: tx, txDigest: txDigest, base: base, ops: ops, inverse: inverse,
                       refers: refers, meta: meta, time: time)
    }

    /// The chain's hash of a row given field by field: what an entry in
    /// memory is hashed with, without the copy of each of its strings a
    /// `LogRow` made of it would be (replay checks one per entry).
    static func chainHash(after previous: [UInt8], doc: String, seq: Int64, version: Int64, entry: String, id: String, userID: Int64,
                          client: String, kind: String, group: String?, action: String?, tx: String?, txDigest: String?, base: Int64?,
                          ops: String?, inverse: String?, refers: String?, meta: String?, time: Int64) -> [UInt8] {
        // One buffer on the stack, written with plain copies and hashed at
        // once: the row's fields are short, and feeding SHA-256 eighteen
        // small pieces, or appending each to an array, cost more than the
        // copies (callgrind: ~5,000 instructions a row went to building it).
        let strings = doc.utf8.count + id.utf8.count + client.utf8.count + entry.utf8.count + kind.utf8.count
            + (group?.utf8.count ?? 0) + (action?.utf8.count ?? 0) + (tx?.utf8.count ?? 0) + (txDigest?.utf8.count ?? 0)
            + (ops?.utf8.count ?? 0) + (inverse?.utf8.count ?? 0) + (refers?.utf8.count ?? 0) + (meta?.utf8.count ?? 0)
        let capacity = previous.count + 18 * 8 + 6 * 20 + strings  // 18 lengths, 6 numbers of 20 digits at most
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buf in
            var w = HashInput(base: buf.baseAddress!)
            previous.withUnsafeBytes { w.copy($0) }
            w.field(doc)
            w.field(seq)
            w.field(version)
            w.field(entry)
            w.field(id)
            w.field(userID)
            w.field(client)
            w.field(kind)
            w.field(group)
            w.field(action)
            w.field(tx)
            w.field(txDigest)
            if let base { w.field(base) } else { w.field(nil as String?) }
            w.field(ops)
            w.field(inverse)
            w.field(refers)
            w.field(meta)
            w.field(time)
            return SHA256.hash(UnsafeRawBufferPointer(start: buf.baseAddress, count: w.at))
        }
    }

    /// Writes the fields of the hash input (see the type's comment) into a buffer sized for them.
    private struct HashInput {
        let base: UnsafeMutablePointer<UInt8>
        var at = 0

        init(base: UnsafeMutablePointer<UInt8>) { self.base = base }

        mutating func copy(_ bytes: UnsafeRawBufferPointer) {
            guard let from = bytes.baseAddress, !bytes.isEmpty else { return }
            (base + at).update(from: from.assumingMemoryBound(to: UInt8.self), count: bytes.count)
            at += bytes.count
        }

        mutating func length(_ n: Int64) {
            UnsafeMutableRawPointer(base + at).storeBytes(of: UInt64(bitPattern: n).bigEndian, as: UInt64.self)
            at += 8
        }

        mutating func field(_ s: String?) {
            guard let s else { return length(-1) }
            length(Int64(s.utf8.count))
            if s.utf8.withContiguousStorageIfAvailable({ copy(UnsafeRawBufferPointer($0)) }) == nil {
                for c in s.utf8 { base[at] = c; at += 1 }
            }
        }

        /// A number as its decimal text would be (what the SQL side hashes), without making the text.
        mutating func field(_ n: Int64) {
            JSONWriter.withDecimal(n) { digits in
                length(Int64(digits.count))
                copy(digits)
            }
        }
    }
}

extension Event {
    /// The stored row: ops, inverse and meta as the text that was (or will be) stored and hashed.
    public var row: LogRow {
        LogRow(doc: doc, seq: seq, version: version, entry: "event", id: id, userID: userID, client: client, kind: kind.rawValue,
               group: group, action: action, tx: tx, txDigest: txDigest, base: base, ops: stored.ops, inverse: stored.inverse,
               refers: refers, meta: stored.meta, time: time, hash: hash)
    }
}

extension Event.StoredText {
    /// The text the log stores for `e` (and hashes): encoded once, when the
    /// event is sealed, and with `cipher` the ops and inverse sealed with the
    /// document's key, bound to the event's place (its `seq` and `id`, set before).
    /// `plainOps`: the ops' JSON text when the caller has it already.
    public init(_ e: Event, cipher: DocumentCipher? = nil, plainOps known: String? = nil) {
        self.init(ops: e.ops, inverse: e.inverse, meta: e.meta, cipher: cipher, plainOps: known, seq: e.seq, id: e.id)
    }

    /// The same from the parts of the event it reads (sealing an event in
    /// place: passing the event itself while setting its `stored` copied it whole).
    init(ops eventOps: [Op], inverse eventInverse: [Op], meta eventMeta: EventMeta, cipher: DocumentCipher?, plainOps known: String?,
         seq: Int64, id: String) {
        let plainOps = known ?? String(decoding: Op.encodedList(eventOps), as: UTF8.self)
        self.plainOps = plainOps
        let plainInverse = String(decoding: Op.encodedList(eventInverse), as: UTF8.self)
        if let cipher {
            ops = cipher.sealEntry(ops: plainOps, inverse: plainInverse, seq: seq, id: id)
            inverse = DocumentCipher.inverseInOps
        } else {
            ops = plainOps
            inverse = plainInverse
        }
        meta = eventMeta.isEmpty ? nil : JSONWriter.string(eventMeta.json)
    }
}

extension GroupMark {
    public func row(doc: String) -> LogRow {
        LogRow(doc: doc, seq: seq, version: afterVersion, entry: "mark", id: id, userID: userID, client: client, kind: kind.rawValue,
               group: group, action: action, tx: tx, txDigest: nil, base: nil, ops: nil, inverse: nil, refers: nil,
               meta: storedMeta, time: time, hash: hash)
    }

    /// Scope and selection, as the `meta` text of the mark's row.
    public var metaJSON: JSON? {
        guard scope != nil || selection != nil else { return nil }
        return .obj([("scope", scope.map { .string($0.string) }), ("selection", selection?.json)])
    }
}

extension Event {
    /// `row.chained(after:)`, without making the row.
    public func chainHash(after previous: [UInt8]) -> [UInt8] {
        LogRow.chainHash(after: previous, doc: doc, seq: seq, version: version, entry: "event", id: id, userID: userID, client: client,
                         kind: kind.rawValue, group: group, action: action, tx: tx, txDigest: txDigest, base: base, ops: stored.ops,
                         inverse: stored.inverse, refers: refers, meta: stored.meta, time: time)
    }
}

extension LogEntry {
    /// The hash this entry must carry after the entry whose hash is `previous` (`row(doc:).chained(after:)`, without making the row).
    public func chainHash(doc: String, after previous: [UInt8]) -> [UInt8] {
        switch self {
        case let .event(e): return e.chainHash(after: previous)
        case let .mark(m): return m.row(doc: doc).chained(after: previous)
        }
    }

    public func row(doc: String) -> LogRow {
        switch self {
        case let .event(e): return e.row
        case let .mark(m): return m.row(doc: doc)
        }
    }


    public var seq: Int64 {
        switch self {
        case let .event(e): return e.seq
        case let .mark(m): return m.seq
        }
    }

    public var hash: [UInt8] {
        switch self {
        case let .event(e): return e.hash
        case let .mark(m): return m.hash
        }
    }
}

/// Hex, as operators read hashes (`rewind admin anchors`).
public enum Hex {
    /// The lowercase hex digit of `v` (0–15), as a UTF-8 byte.
    public static func digit(_ v: UInt8) -> UInt8 { v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "a") + v - 10 }

    public static func string(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes { string($0) } }

    public static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        // Written into the string's own storage: no array of digits or of output (a fingerprint per commit).
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (k, b) in bytes.enumerated() {
                out[2 * k] = digit(b >> 4)
                out[2 * k + 1] = digit(b & 0xF)
            }
            return bytes.count * 2
        }
    }

    /// The bytes of the hex digits of `s` from its `start`th byte on (nil: not hex).
    /// Read from the string's own storage: every log row's hash comes through here.
    public static func bytes(_ s: String, from start: Int = 0) -> [UInt8]? {
        var s = s
        return s.withUTF8 { bytes($0, from: start) }
    }

    /// The same, read from `u` (a cell of a database result, in place).
    public static func bytes(_ u: UnsafeBufferPointer<UInt8>, from start: Int = 0) -> [UInt8]? {
        guard start <= u.count, (u.count - start) % 2 == 0 else { return nil }
        let n = (u.count - start) / 2
        var valid = true
        let out = [UInt8](unsafeUninitializedCapacity: n) { buffer, count in
            for k in 0..<n {
                let hi = digitValue[Int(u[start + 2 * k])], lo = digitValue[Int(u[start + 2 * k + 1])]
                if hi | lo > 0xF { valid = false; break }
                buffer[k] = hi << 4 | lo
            }
            count = valid ? n : 0
        }
        return valid ? out : nil
    }

    /// Each byte's value as a hex digit (0xFF: not one).
    private static let digitValue: [UInt8] = (0..<256).map { c in
        switch c {
        case 48...57: return UInt8(c - 48)
        case 97...102: return UInt8(c - 87)
        case 65...70: return UInt8(c - 55)
        default: return 0xFF
        }
    }
}
