/// Which edits a writer notes in `document_editors` (who edited which document
/// last, what quick actions list): a (document, user) pair at most once every
/// `interval` milliseconds of its entries' time, so that someone typing costs
/// one row write per 5 seconds, not one per commit (schema/025; the lag is
/// what PROTOCOL.md's `shortcuts` allows).
///
/// Pure: the writer asks with each event it appends, in the order it sends
/// them. Pairs last noted more than `interval` ago are forgotten once the
/// table has doubled since it was last trimmed, so it holds about the pairs
/// edited in the last 5 seconds, not every pair ever edited.
public struct EditorNotes {
    public static let interval: Int64 = 5_000

    private struct Pair: Hashable {
        let doc: String
        let user: Int64
    }

    private var noted: [Pair: Int64] = [:]
    private var trimAt: Int
    private let minimumTrim: Int

    public init(trimAt: Int = 1_024) {
        self.trimAt = trimAt
        minimumTrim = trimAt
    }

    /// Pairs remembered (tests, metrics).
    public var count: Int { noted.count }

    /// Whether an edit of `doc` by `user` at `timeMs` is to be noted; if it
    /// is, it counts as noted at `timeMs` from now on.
    public mutating func take(doc: String, user: Int64, timeMs: Int64) -> Bool {
        let pair = Pair(doc: doc, user: user)
        if let last = noted[pair], timeMs - last < Self.interval { return false }
        noted[pair] = timeMs
        if noted.count >= trimAt {
            let horizon = timeMs - Self.interval
            noted = noted.filter { $0.value > horizon }
            trimAt = max(minimumTrim, noted.count * 2)
        }
        return true
    }
}
