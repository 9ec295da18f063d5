/// Which documents to move so that every shard holds about the same bytes
/// (`rewind admin shard rebalance`, `shard drain`; SPEC section 17). Pure:
/// the shards and their documents' sizes in, the moves out, in the order to
/// make them. The mover carries them out one at a time, each fenced, copied,
/// verified, flipped and purged.
public enum Rebalance {
    public struct Placed: Sendable, Equatable {
        public var doc: String
        public var shard: String
        public var bytes: Int64
        public init(doc: String, shard: String, bytes: Int64) {
            self.doc = doc
            self.shard = shard
            self.bytes = bytes
        }
    }

    public struct Move: Sendable, Equatable {
        public var doc: String
        public var from: String
        public var to: String
        public var bytes: Int64
    }

    /// The moves, and the bytes on each shard after them.
    public struct Plan: Sendable {
        public var moves: [Move]
        public var bytesAfter: [String: Int64]
        /// The mean over the shards that accept documents, and the tolerance it was planned to.
        public var mean: Double
        public var tolerance: Double
        public var bytesMoved: Int64 { moves.reduce(0) { $0 + $1.bytes } }
        /// The fullest and the emptiest accepting shard over the mean (1.0: exactly the mean).
        public var largestOverMean: Double { mean > 0 ? Double(bytesAfter.values.max() ?? 0) / mean : 1 }
        public var smallestOverMean: Double { mean > 0 ? Double(bytesAfter.values.min() ?? 0) / mean : 1 }
    }

    /// Empties the shards that do not accept documents (a drain) onto the
    /// others, the largest documents first, each to the least loaded; then,
    /// while the fullest accepting shard holds more than `tolerance` over the
    /// mean or the emptiest less than `tolerance` under it, moves from the
    /// fullest to the emptiest the largest document that fits in both the
    /// one's excess over the mean and the other's room under it (else the
    /// smallest that still narrows the gap between them): few moves, large
    /// ones. Moves each document at most once. Stops when nothing helps.
    public static func plan(shards: [ShardLoad], documents: [Placed], tolerance: Double = 0.10) -> Plan {
        var load: [String: Int64] = [:]
        for s in shards { load[s.id] = 0 }
        var byShard: [String: [(bytes: Int64, doc: String)]] = [:]
        for d in documents where load[d.shard] != nil {
            load[d.shard, default: 0] += d.bytes
            byShard[d.shard, default: []].append((d.bytes, d.doc))
        }
        let open = shards.filter(\.accepting).map(\.id)
        let total = load.values.reduce(0, +)
        let mean = open.isEmpty ? 0 : Double(total) / Double(open.count)
        var moves: [Move] = []
        guard !open.isEmpty else { return Plan(moves: [], bytesAfter: load, mean: 0, tolerance: tolerance) }
        func emptiest() -> String { open.min { (load[$0]!, $0) < (load[$1]!, $1) }! }
        func fullest() -> String { open.max { (load[$0]!, $1) < (load[$1]!, $0) }! }
        func move(_ doc: String, _ bytes: Int64, from: String, to: String) {
            moves.append(Move(doc: doc, from: from, to: to, bytes: bytes))
            load[from]! -= bytes
            load[to]! += bytes
        }

        // Drained shards empty first.
        for s in shards where !s.accepting {
            for d in (byShard[s.id] ?? []).sorted(by: { ($0.bytes, $1.doc) > ($1.bytes, $0.doc) }) { move(d.doc, d.bytes, from: s.id, to: emptiest()) }
            byShard[s.id] = []
        }

        // Then the fullest toward the mean: candidates sorted by size, taken ones marked.
        var sorted: [String: [(bytes: Int64, doc: String)]] = [:]
        var taken: [String: [Bool]] = [:]
        for id in open {
            sorted[id] = (byShard[id] ?? []).sorted { ($0.bytes, $0.doc) < ($1.bytes, $1.doc) }
            taken[id] = Array(repeating: false, count: sorted[id]!.count)
        }
        let high = mean * (1 + tolerance), low = mean * (1 - tolerance)
        while true {
            let h = fullest(), l = emptiest()
            guard Double(load[h]!) > high || Double(load[l]!) < low, h != l else { break }
            let excess = Int64(Double(load[h]!) - mean), room = Int64(mean - Double(load[l]!))
            let docs = sorted[h]!
            // The largest not taken with bytes <= min(excess, room).
            var i = upperBound(docs, min(excess, room)) - 1
            while i >= 0 && taken[h]![i] { i -= 1 }
            if i < 0 {
                // None fits both: the smallest not taken, if moving it still narrows the gap.
                var j = 0
                while j < docs.count && taken[h]![j] { j += 1 }
                guard j < docs.count, docs[j].bytes < load[h]! - load[l]! else { break }
                i = j
            }
            taken[h]![i] = true
            move(docs[i].doc, docs[i].bytes, from: h, to: l)
        }
        return Plan(moves: moves, bytesAfter: load.filter { open.contains($0.key) }, mean: mean, tolerance: tolerance)
    }

    /// The first index whose bytes are above `limit`.
    private static func upperBound(_ docs: [(bytes: Int64, doc: String)], _ limit: Int64) -> Int {
        var lo = 0, hi = docs.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if docs[mid].bytes <= limit { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
