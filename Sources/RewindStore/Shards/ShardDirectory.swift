import RewindCore

/// What the store knows of the shards (SPEC section 17): a link to each, the
/// placement policy, how many documents each holds, and where the documents
/// this instance served live. Read from the catalog at start and again on
/// its `shards` notice (`EventStore.reloadShards`).
final class ShardDirectory {
    /// The catalog's own database, which holds every document placed nowhere else.
    static let home = "home"

    let home: ShardLink
    private(set) var others: [String: ShardLink] = [:]
    /// Each shard's state in the catalog: accepting, closed or draining.
    var states: [String: String] = [ShardDirectory.home: "accepting"]
    var policy = PlacementPolicy.leastLoaded
    /// Documents each shard holds, as last counted, plus those placed here since.
    var documents: [String: Int] = [:]
    /// Where documents live, as looked up; documents loaded stay until unloaded (`forget`).
    private var placed: [String: ShardLink] = [:]
    /// Appends waiting, in order, for a user's account to reach their document's shard (`appendOnShard`).
    var waiting: [String: [WaitingAppend]] = [:]

    struct WaitingAppend {
        /// Queues the append on the shard (or fails it), then calls the continuation.
        let run: (ShardLink, @escaping () -> Void) -> Void
        let fail: (RewindError) -> Void
    }

    /// The most placements kept before the cache starts over (a lookup is one indexed read).
    static let maxPlacementsKept = 200_000

    init(home: ShardLink) {
        self.home = home
        all = [home]
        allWriters = home.writers
    }

    private func listed() {
        all = [home] + others.keys.sorted().map { others[$0]! }
        allWriters = all.flatMap(\.writers)
    }

    /// More than `home`: every document's shard is looked up (once) before it is used.
    var isSharded: Bool { !others.isEmpty }
    /// `home`, then the others by name; kept, not made per call: the store's end of turn walks every writer.
    private(set) var all: [ShardLink]
    private(set) var allWriters: [EventStore.Writer]

    func link(named name: String) -> ShardLink? { name == Self.home ? home : others[name] }
    func placement(of doc: String) -> ShardLink? { isSharded ? placed[doc] : home }

    func remember(_ doc: String, on link: ShardLink) {
        if placed.count >= Self.maxPlacementsKept { placed.removeAll(keepingCapacity: true) }
        placed[doc] = link
    }
    func forget(_ doc: String) { placed[doc] = nil }
    func forgetAll() { placed.removeAll() }

    func add(_ link: ShardLink) {
        others[link.name] = link
        listed()
    }
    func remove(_ name: String) -> ShardLink? {
        for (doc, l) in placed where l.name == name { placed[doc] = nil }
        defer { listed() }
        return others.removeValue(forKey: name)
    }

    /// The shard a new document goes to, by the policy (nil: none accepts documents).
    func shardForNew(_ doc: String) -> ShardLink? {
        let loads = all.map { ShardLoad(id: $0.name, documents: documents[$0.name] ?? 0, accepting: states[$0.name] == "accepting" && ($0.isHome || $0.isServing)) }
        return policy.shard(for: doc, among: loads).flatMap(link(named:))
    }
}
