/// Where a new document lives (SPEC section 17): one of the shards that
/// accept documents, chosen by a policy an operator can read and write as
/// text (`rewind admin shard policy`). Pure: the catalog's shards and their
/// loads in, a shard's id out; the same inputs give the same shard on every
/// instance.
public struct ShardLoad: Sendable, Equatable {
    public var id: String
    public var documents: Int
    public var bytes: Int64
    /// False while the shard is drained or closed to new documents: nothing is placed on it.
    public var accepting: Bool

    public init(id: String, documents: Int = 0, bytes: Int64 = 0, accepting: Bool = true) {
        self.id = id
        self.documents = documents
        self.bytes = bytes
        self.accepting = accepting
    }
}

public struct PlacementPolicy: Sendable, Equatable, CustomStringConvertible {
    /// A document whose id starts with `prefix` goes to `shard` (one customer's documents together).
    public struct Rule: Sendable, Equatable {
        public var prefix: String
        public var shard: String
        public init(prefix: String, shard: String) {
            self.prefix = prefix
            self.shard = shard
        }
    }

    /// Tried in order; the first whose prefix starts the id decides. The rest go to the least loaded shard.
    public var rules: [Rule]

    public init(rules: [Rule] = []) { self.rules = rules }

    public static let leastLoaded = PlacementPolicy()

    /// The shard for a new document `doc` (nil: no shard accepts documents).
    ///
    /// A rule naming a shard that does not accept documents (drained,
    /// closed, gone) is passed over, not obeyed: a document is never refused
    /// a home while some shard would take it. Least loaded is by bytes, then
    /// by documents, then by id, so that ties break the same everywhere.
    public func shard(for doc: String, among shards: [ShardLoad]) -> String? {
        let open = shards.filter(\.accepting)
        for rule in rules where doc.hasPrefix(rule.prefix) {
            if open.contains(where: { $0.id == rule.shard }) { return rule.shard }
        }
        return open.min { a, b in (a.bytes, a.documents, a.id) < (b.bytes, b.documents, b.id) }?.id
    }

    /// The policy as an operator writes it: a line `least-loaded`, or lines
    /// `PREFIX -> SHARD` (then least loaded for the rest); `#` starts a comment.
    public var description: String {
        rules.isEmpty ? "least-loaded\n" : rules.map { "\($0.prefix) -> \($0.shard)\n" }.joined() + "least-loaded\n"
    }

    public init(parsing text: String) throws(RewindError) {
        var rules: [Rule] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = (raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "").trimmingSpaces
                .filter { $0 != "\r" }
            if line.isEmpty || line == "least-loaded" { continue }
            let parts = line.split(separator: "->", omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                throw .badRequest("placement policy, line \(n + 1): \"\(line)\" is neither `least-loaded` nor `PREFIX -> SHARD`")
            }
            let prefix = parts[0].trimmingSpaces, shard = parts[1].trimmingSpaces
            guard !prefix.isEmpty, !shard.isEmpty else { throw .badRequest("placement policy, line \(n + 1): an empty prefix or shard") }
            rules.append(Rule(prefix: prefix, shard: shard))
        }
        self.rules = rules
    }
}
