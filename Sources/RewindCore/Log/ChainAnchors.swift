/// Hashes of a document's log that a server has checked itself, every
/// `spacing` entries: what an entry read back from the log later is checked
/// against, wherever it lies — above or below the snapshot a server started
/// from.
///
/// A stored hash vouches for nothing by itself: whoever can change a row can
/// change its hash too. An entry read back is trusted only when the chain,
/// recomputed from a trusted hash before it, arrives at a trusted hash at or
/// after it. So reads are widened to the anchors around them (at most
/// `spacing - 1` extra entries on each side), and the entries below the one a
/// server loaded from are walked once, from the first entry of the log to
/// the first one it trusts, before any of them is served.
///
///     seq:    0      256      512      768  …  t0 (loaded from)  …  head
///     hash:   []     h256     h512     h768     ht0                  hhead
///             └── walked once, computed from [] ──┘└── checked as loaded ──┘
public struct ChainAnchors: Sendable {
    public static let spacing: Int64 = 256

    /// Trusted hashes by seq: multiples of `spacing` and the first entry trusted.
    private var hashes: [Int64: [UInt8]] = [:]
    /// Every anchor from here up to `head` is known; 0 means from the start of the log.
    public private(set) var lowest: Int64
    public private(set) var head: Int64 = 0
    /// The head's hash, kept apart: noting a commit touches the table only every `spacing` entries.
    private var headHash: [UInt8] = []

    /// Anchors of a log whose entries from `first` (its hash `hash`) on are
    /// to be noted as the server applies them; `first` 1 with the empty hash
    /// of "before the first entry": the whole log was checked.
    public init(first seq: Int64, hash: [UInt8]) {
        lowest = seq
        head = seq
        headHash = hash
        hashes[seq] = hash
    }

    /// The start of a log: nothing before the first entry.
    public static var fromStart: ChainAnchors { ChainAnchors(first: 0, hash: []) }

    /// Whether the entries below the first trusted one still need their walk.
    public var needsWalk: Bool { lowest > 0 }

    /// An entry the server checked (applied as it loaded or followed the log).
    public mutating func note(seq: Int64, hash: [UInt8]) {
        guard seq > head else { return }
        head = seq
        headHash = hash
        if seq % Self.spacing == 0 { hashes[seq] = hash }
    }

    private func hash(at seq: Int64) -> [UInt8]? { seq == head ? headHash : hashes[seq] }

    /// The nearest anchor before `seq` (whose hash the entry at `seq`'s chain starts from).
    public func before(_ seq: Int64) -> (seq: Int64, hash: [UInt8])? {
        guard seq > lowest else { return nil }
        var s = min(seq - 1, head)
        if s != head && s != lowest { s = max(lowest, s - s % Self.spacing) }
        guard let h = hash(at: s) else { return nil }
        return (s, h)
    }

    /// The nearest anchor at or after `seq` (nil past the head).
    public func atOrAfter(_ seq: Int64) -> (seq: Int64, hash: [UInt8])? {
        guard seq <= head, seq >= lowest else { return nil }
        var s = seq
        if s % Self.spacing != 0 && s != lowest { s = min(head, s + Self.spacing - s % Self.spacing) }
        guard let h = hash(at: s) else { return nil }
        return (s, h)
    }

    /// Checks `rows` — entries `start.seq + 1 …` in order — against the chain:
    /// recomputed from `start`, each must carry the hash it has, and the chain
    /// must arrive at `end`. Returns the recomputed hashes at the multiples of
    /// `spacing` among them (anchors, once the whole walk has arrived).
    @discardableResult
    public static func check(_ rows: [LogRow], from start: (seq: Int64, hash: [UInt8]), to end: (seq: Int64, hash: [UInt8])?,
                             doc: String) throws(RewindError) -> [(seq: Int64, hash: [UInt8])] {
        var previous = start.hash
        var seq = start.seq
        var found: [(seq: Int64, hash: [UInt8])] = []
        for row in rows {
            guard row.seq == seq + 1 else {
                throw RewindError(.internal, "the log of \(doc) jumps from entry \(seq) to \(row.seq)", details: ["doc": .string(doc), "seq": .int(row.seq)])
            }
            let hash = row.chained(after: previous)
            guard hash == row.hash else { throw broken(doc, row) }
            if row.seq % spacing == 0 { found.append((row.seq, hash)) }
            previous = hash
            seq = row.seq
        }
        if let end {
            guard seq == end.seq, previous == end.hash else {
                throw RewindError(.internal, "the hash chain of \(doc) does not arrive at entry \(end.seq) as this server checked it: the log was changed after it was written",
                                  details: ["doc": .string(doc), "seq": .int(end.seq)])
            }
        }
        return found
    }

    static func broken(_ doc: String, _ row: LogRow) -> RewindError {
        RewindError(.internal, "the hash chain of \(doc) breaks at entry \(row.seq) (version \(row.version)): the log was changed after it was written",
                    details: ["doc": .string(doc), "seq": .int(row.seq)])
    }

    /// The walk below `lowest` arrived (`check` up to it passed): its anchors become trusted.
    public mutating func walked(_ found: [(seq: Int64, hash: [UInt8])]) {
        for (s, h) in found where s < lowest { hashes[s] = h }
        lowest = 0
        hashes[0] = []
    }
}
