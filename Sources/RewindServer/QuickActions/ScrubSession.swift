import RewindCore
import RewindStore

/// A terminal scrubbing through a document's history (SPEC section 8,
/// PROTOCOL.md "Quick actions and previews"): a private state at a version,
/// moved event by event — forward through events' ops, backward through their
/// exact inverses — from wherever is cheapest: where the last step left it,
/// the empty document at version 0, the head the scrub began on, or the
/// newest snapshot at or below the target. A step costs the events between
/// two positions of the finger (at most a snapshot interval), not a replay.
final class ScrubSession {
    let doc: String
    /// The head when the scrub began: progress 1 is this version, and a commit
    /// is computed against this state (then rebased, as a late submit is).
    let baseVersion: Int64
    let baseDocument: Document
    private(set) var version: Int64
    private(set) var document: Document
    /// Ops and inverses of events read so far, by version.
    private var changes: [Int64: (ops: [Op], inverse: [Op])] = [:]
    /// Versions with a snapshot (read once, at the first step).
    var snapshots: [Int64]?

    /// What reading and parsing a snapshot costs, counted in events read from the log.
    static let snapshotCost: Int64 = 200
    /// Events held at most; past it they are let go and read again when needed.
    static let maxHeld = 20_000

    enum Start: Equatable {
        case here, empty, base
        case snapshot(Int64)
    }

    init(doc: String, head: DocumentLedger) {
        self.doc = doc
        baseVersion = head.version
        baseDocument = head.document
        version = head.version
        document = head.document
    }

    /// Where to move to `target` from, cheapest first by events to read.
    func cheapestStart(to target: Int64) -> Start {
        var best = (Start.here, cost(from: version, to: target))
        func consider(_ s: Start, _ c: Int64) { if c < best.1 { best = (s, c) } }
        consider(.empty, cost(from: 0, to: target))
        consider(.base, cost(from: baseVersion, to: target))
        if let s = snapshots?.last(where: { $0 <= target }) { consider(.snapshot(s), Self.snapshotCost + cost(from: s, to: target)) }
        return best.0
    }

    /// Events between two versions, those not held counting fully (they are read from the log).
    private func cost(from a: Int64, to b: Int64) -> Int64 {
        let lo = min(a, b) + 1, hi = max(a, b)
        guard lo <= hi else { return 0 }
        guard hi - lo < 5_000 else { return hi - lo + 1 }
        var c: Int64 = 0
        for v in lo...hi where changes[v] == nil { c += 1 }
        return c + (hi - lo + 1) / 50
    }

    /// Starts again from a known state.
    func restart(at v: Int64, _ d: Document) {
        version = v
        document = d
    }

    /// Versions between here and `target` whose changes are not held yet.
    func missing(to target: Int64) -> ClosedRange<Int64>? {
        if changes.count > Self.maxHeld { changes = [:] }
        let lo = min(version, target) + 1, hi = max(version, target)
        guard lo <= hi else { return nil }
        guard let first = (lo...hi).first(where: { changes[$0] == nil }),
              let last = (lo...hi).reversed().first(where: { changes[$0] == nil })
        else { return nil }
        return first...last
    }

    func hold(_ v: Int64, ops: [Op], inverse: [Op]) { changes[v] = (ops, inverse) }

    /// Moves the private state to `target`; every change it crosses must be held.
    func move(to target: Int64) throws(RewindError) {
        while version > target {
            guard let c = changes[version] else { throw RewindError(.internal, "scrub: event \(version) not read") }
            _ = try document.apply(c.inverse, limits: .unbounded)
            version -= 1
        }
        while version < target {
            guard let c = changes[version + 1] else { throw RewindError(.internal, "scrub: event \(version + 1) not read") }
            _ = try document.apply(c.ops, limits: .unbounded)
            version += 1
        }
    }
}
