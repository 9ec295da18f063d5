import Glibc  // pow

/// Placement and rebalancing over many documents, simulated (`rewind admin
/// shard simulate`; docs/scaling.md): documents are created one after another
/// and placed by the policy on what the shards hold at that moment; each then
/// grows to a size drawn from a Zipf law (the probability of k units is
/// proportional to k^-exponent, up to the largest document allowed). Late in
/// the run (`addedAt`), shards are added empty, as an operator adds them when
/// the first fill up: new documents alone cannot fill them before the end. At
/// the end the shards are as uneven as placement without moves leaves them,
/// and `Rebalance.plan` says what to move. Deterministic for a seed.
public struct PlacementSimulation: Sendable {
    public var documents = 10_000_000
    public var shards = 16
    /// Shards added empty once `addedAt` of the documents exist.
    public var added = 8
    public var addedAt = 0.9
    public var exponent = 2.0
    /// Sizes in units of `unitBytes`, at most `maxUnits` (a document's size limit).
    public var unitBytes: Int64 = 4_096
    public var maxUnits = 25_600
    public var tolerance = 0.10
    public var seed: UInt64 = 1

    public init() {}

    public struct Report: Sendable {
        public var totalBytes: Int64
        public var largestDocument: Int64
        public var mean: Double
        /// Fullest shard over the mean, before and after the moves; the emptiest too.
        public var largestBefore: Double, smallestBefore: Double
        public var largestAfter: Double, smallestAfter: Double
        public var moves: Int
        public var bytesMoved: Int64
        public var shardsBefore: [Int64], shardsAfter: [Int64]
    }

    public func run() -> Report {
        var rng = SplitMix64(seed: seed)
        let cdf = zipfCDF()
        var shardList = (0..<shards).map { ShardLoad(id: Self.name($0)) }
        var index: [String: Int] = Dictionary(uniqueKeysWithValues: shardList.enumerated().map { ($1.id, $0) })
        var placed: [Rebalance.Placed] = []
        placed.reserveCapacity(documents)
        let addAt = added > 0 ? Int(Double(documents) * addedAt) : -1
        var largest: Int64 = 0
        for n in 0..<documents {
            if n == addAt {
                for k in 0..<added {
                    let s = ShardLoad(id: Self.name(shards + k))
                    index[s.id] = shardList.count
                    shardList.append(s)
                }
            }
            let doc = "d\(n)"
            let shard = PlacementPolicy.leastLoaded.shard(for: doc, among: shardList)!
            let bytes = Int64(sample(cdf, &rng)) * unitBytes
            largest = max(largest, bytes)
            let i = index[shard]!
            shardList[i].documents += 1
            shardList[i].bytes += bytes
            placed.append(.init(doc: doc, shard: shard, bytes: bytes))
        }
        let before = shardList.map(\.bytes)
        let plan = Rebalance.plan(shards: shardList, documents: placed, tolerance: tolerance)
        let after = shardList.map { plan.bytesAfter[$0.id] ?? 0 }
        let mean = plan.mean
        return Report(totalBytes: before.reduce(0, +), largestDocument: largest, mean: mean,
                      largestBefore: Double(before.max() ?? 0) / mean, smallestBefore: Double(before.min() ?? 0) / mean,
                      largestAfter: Double(after.max() ?? 0) / mean, smallestAfter: Double(after.min() ?? 0) / mean,
                      moves: plan.moves.count, bytesMoved: plan.bytesMoved, shardsBefore: before, shardsAfter: after)
    }

    static func name(_ i: Int) -> String { "s\(i + 1)" }

    /// P(size ≤ k units), k = 1…maxUnits.
    func zipfCDF() -> [Double] {
        var cdf = [Double](repeating: 0, count: maxUnits)
        var sum = 0.0
        for k in 1...maxUnits {
            sum += 1 / pow(Double(k), exponent)
            cdf[k - 1] = sum
        }
        return cdf.map { $0 / sum }
    }

    func sample(_ cdf: [Double], _ rng: inout SplitMix64) -> Int {
        let u = rng.unit()
        var lo = 0, hi = cdf.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if cdf[mid] < u { lo = mid + 1 } else { hi = mid }
        }
        return lo + 1
    }
}

/// A small, fast, seeded generator (Steele, Lea and Flood's SplitMix64): the same numbers for a seed everywhere.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// In [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
