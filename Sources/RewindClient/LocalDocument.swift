import RewindCore

/// A client's copy of one document: the server's state as of `version`
/// (`confirmed`), plus this terminal's edits the server has not committed yet,
/// shown at once (`view`).
///
/// At most one submit is in flight. The server rebases a submit through every
/// text op committed after its `base`, so a second submit sent before the first
/// commits would be shifted by the first one's text a second time; edits made
/// meanwhile wait in `buffered` and go out as one submit when the first is
/// acknowledged (one per segment: a segment ends where an undo or another
/// request had to go between edits). Events from others are transformed against both (the standard
/// client side of operational transformation, with the server's `TextTransform`
/// so that both sides transform alike): once every acknowledgement is in,
/// `view == confirmed` and both equal the server's state.
public struct LocalDocument: Sendable {
    /// A submit sent and not yet seen in the log. `ops`/`base` are what was sent
    /// (a resubmit after a reconnect sends them again, unchanged, with the same
    /// `tx`); `current` is the same edit transformed through the events seen since.
    public struct InFlight: Sendable, Equatable {
        public var tx: String
        public var base: Int64
        public var ops: [Op]
        public var current: [Op]
    }

    /// A text caret or range in one node, in `view` positions.
    public struct Selection: Sendable, Equatable {
        public var node: Key
        public var start: Int
        public var end: Int
        public init(node: Key, start: Int, end: Int) { self.node = node; self.start = start; self.end = end }
    }

    public private(set) var confirmed = Document()
    public private(set) var version: Int64 = 0
    public private(set) var view = Document()
    public private(set) var inFlight: InFlight?
    /// Edits not sent yet, in segments, each one future submit.
    public private(set) var buffered: [[Op]] = []
    /// This terminal's selection; moved through others' text ops as the server moves it.
    public var selection: Selection?

    public init() {}

    /// Nothing waits to be committed.
    public var isSettled: Bool { inFlight == nil && buffered.isEmpty }

    /// The state from an `open` without `since`: everything local is dropped.
    public mutating func reset(to state: Document, version: Int64) {
        confirmed = state
        self.version = version
        inFlight = nil
        buffered = []
        view = state
        clampSelection()
    }

    /// Applies a local edit to `view` at once; it is sent by `nextSubmit`.
    /// Fails (changing nothing) when the ops do not apply to what is shown.
    /// `newSegment`: these ops must not join the edits buffered before them.
    public mutating func edit(_ ops: [Op], newSegment: Bool = false, limits: Limits = Limits()) throws(RewindError) {
        var next = view
        _ = try next.apply(ops, limits: limits)
        view = next
        if newSegment || buffered.isEmpty { buffered.append(ops) } else { buffered[buffered.count - 1] += ops }
    }

    /// The first buffered segment as the next submit, when none is in flight.
    /// Nil when there is none, or when its ops all vanished (text someone
    /// else removed meanwhile): then the segment is gone and nothing is sent.
    public mutating func nextSubmit(tx: String) -> InFlight? {
        guard inFlight == nil, !buffered.isEmpty else { return nil }
        let ops = buffered.removeFirst()
        guard !ops.isEmpty else { return nil }
        let sent = InFlight(tx: tx, base: version, ops: ops, current: ops)
        inFlight = sent
        return sent
    }

    /// What an `events` push (or an `open since` page) did to this document.
    public enum Applied: Sendable, Equatable {
        /// Applied; `ownCommit` when it was the submit in flight.
        case applied(ownCommit: Bool)
        /// Already seen (a version at or below `version`).
        case duplicate
        /// A version is missing before it: catch up with `open since`.
        case gap
        /// The ops do not apply to the confirmed state: reload the document.
        case diverged(RewindError)
    }

    /// One committed event, in version order. `user` and `tx` tell this
    /// terminal's own submit from everyone else's changes.
    public mutating func apply(version v: Int64, ops: [Op], tx: String?, isOwn: Bool) -> Applied {
        if v <= version { return .duplicate }
        if v != version + 1 { return .gap }
        do { try confirmed.replay(ops) } catch { return .diverged(error) }
        version = v
        if let f = inFlight, isOwn, tx == f.tx {
            // The server's ops are `current` as committed: nothing else in view moves.
            inFlight = nil
            rebuildView()
            return .applied(ownCommit: true)
        }
        // Someone else's change, committed before what this terminal has pending.
        var theirs = ops
        if var f = inFlight {
            (f.current, theirs) = TextTransform.transform(f.current, theirs)
            inFlight = f
        }
        for i in buffered.indices { (buffered[i], theirs) = TextTransform.transform(buffered[i], theirs) }
        moveSelection(through: theirs)
        rebuildView()
        return .applied(ownCommit: false)
    }

    /// The submit in flight failed for good (a conflict, a bad op): it and the
    /// edits made on top of it are dropped.
    public mutating func dropPending() {
        inFlight = nil
        buffered = []
        rebuildView()
    }

    /// `view` = `confirmed` + what is pending. An op that no longer applies
    /// (its node deleted by someone else) is left out of the view; the server
    /// will refuse it too.
    private mutating func rebuildView() {
        var v = confirmed
        for op in (inFlight?.current ?? []) + buffered.joined() { _ = try? v.apply(op, limits: Limits.unbounded) }
        view = v
        clampSelection()
    }

    /// As the server moves a terminal's caret through others' text ops: an
    /// insert exactly at the caret leaves it before the new text.
    private mutating func moveSelection(through ops: [Op]) {
        guard var s = selection else { return }
        for op in ops where op.node == s.node {
            switch op {
            case let .insert(_, p, text):
                if p < s.start { s.start += text.count }
                if p < s.end { s.end += text.count }
            case let .remove(_, p, l):
                s.start = Self.mapThroughRemove(s.start, p, l)
                s.end = Self.mapThroughRemove(s.end, p, l)
            default: break
            }
        }
        selection = s
    }

    static func mapThroughRemove(_ x: Int, _ at: Int, _ len: Int) -> Int {
        if x <= at { return x }
        return x >= at + len ? x - len : at
    }

    private mutating func clampSelection() {
        guard let s = selection else { return }
        guard let n = view[s.node] else { selection = nil; return }
        let count = n.text.count
        selection = Selection(node: s.node, start: min(s.start, count), end: min(max(s.end, s.start), count))
    }
}
