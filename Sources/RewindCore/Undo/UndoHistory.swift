/// Every user's undo and redo stacks of one document, as a projection of the
/// log: events and group marks go in, in log order, and nothing else does.
/// The live server and every replay feed the same entries through `record`,
/// so the stacks they build are the same (SPEC section 4).
///
/// It also keeps what selective undo needs to stay proportional to the work:
/// the ops of every event by version and, per node, the versions that touched
/// it, so an undo looks only at later events that touched the same nodes.
public struct UndoHistory: Sendable {
    /// Groups kept per stack (NSUndoManager's levelsOfUndo); 0 keeps all.
    public var levels: Int

    public struct StackKey: Hashable, Sendable {
        public var user: Int64
        public var scope: Key?
        public init(user: Int64, scope: Key?) { self.user = user; self.scope = scope }
    }

    /// A group's part in one scope. A group whose edits span scopes has one part per scope.
    public struct GroupKey: Hashable, Sendable {
        public var id: String
        public var scope: Key?
        public init(id: String, scope: Key?) { self.id = id; self.scope = scope }
    }

    public struct Group: Sendable, Equatable {
        public var key: GroupKey
        public var user: Int64
        public var client: String
        /// Given by a client (submit, begin_group, set_action), else nil.
        public var givenAction: String?
        /// The edit events of the group, oldest first.
        public var edits: [Int64]
        /// The events whose change is in the document now: the edits, or the
        /// newest undo (or redo) event of the group. Undo and redo revert these.
        public var effect: [Int64]
        public var isUndone = false
        public var selectionBefore: Selection?
        public var selectionAfter: Selection?
        /// Server clock of the newest edit (for coalescing "Typing").
        public var lastTime: Int64
        /// The node all of the group's ops typed into, while that is so.
        public var typingNode: Key?
        /// Kinds of op seen, to name an unnamed group ("Move", "Delete", "Typing").
        var opKinds: OpKinds

        /// The name shown in titles: the client's, else the server's own from the ops.
        public var action: String? { givenAction ?? opKinds.serverAction }
        public var lastEdit: Int64 { edits.last ?? 0 }
    }

    struct OpKinds: Sendable, Equatable, OptionSet {
        let rawValue: Int
        static let text = OpKinds(rawValue: 1), move = OpKinds(rawValue: 2), delete = OpKinds(rawValue: 4)
        static let other = OpKinds(rawValue: 8)
        init(rawValue: Int) { self.rawValue = rawValue }
        init(_ ops: [Op]) {
            var k = OpKinds()
            for op in ops {
                switch op {
                case .insert, .remove: k.insert(.text)
                case .move: k.insert(.move)
                case .delete: k.insert(.delete)
                default: k.insert(.other)
                }
            }
            self = k
        }
        var serverAction: String? {
            switch self {
            case .text: return Titles.ServerAction.typing
            case .move: return Titles.ServerAction.move
            case .delete: return Titles.ServerAction.delete
            default: return nil
            }
        }
    }

    public struct Stacks: Sendable, Equatable {
        /// Oldest first: the newest group is `last`.
        public var undo: [GroupKey] = []
        public var redo: [GroupKey] = []
    }

    /// What selective undo needs of each event.
    public struct Logged: Sendable {
        public var user: Int64
        public var ops: [Op]
        public var inverse: [Op]
        public var version: Int64
        /// For an undo or redo: the events whose change it reverted.
        public var reverted: [Int64] = []
    }

    public internal(set) var stacks: [StackKey: Stacks] = [:]
    public internal(set) var groups: [GroupKey: Group] = [:]
    /// Explicit groups held open by a terminal: group id → its parts (by scope).
    public internal(set) var open: [String: [Key?]] = [:]
    /// The ops of every event from version `logBase` on (a history restored
    /// from a snapshot keeps only what its groups can still reach).
    public internal(set) var log: [Logged] = []
    public internal(set) var logBase: Int64 = 1
    /// Per node, the versions of the events that touched it, ascending.
    public internal(set) var touches: [Key: [Int64]] = [:]
    /// Marks recorded so far (the `n` of the newest).
    public internal(set) var markCount: Int64 = 0
    /// Transaction ids of marks (clear_history with `tx`), for idempotent retries.
    public internal(set) var markTransactions: [DocumentLedger.TxKey: Int64] = [:]

    /// Levels users chose (`levels` marks), in place of `levels` for their stacks.
    public internal(set) var userLevels: [Int64: Int] = [:]
    /// The owner's cap for everyone's stacks of this document (a `levels` mark
    /// whose group is `GroupMark.documentLevels`); nil: none.
    public internal(set) var documentLevels: Int?

    public init(levels: Int = 100) { self.levels = levels }

    /// The groups `user`'s stacks keep: their choice, else `levels`; never
    /// above the document's cap, nor the server's `levels` (0: unlimited).
    public func levels(for user: Int64) -> Int {
        var kept = userLevels[user] ?? levels
        if let cap = documentLevels { kept = kept == 0 ? cap : Swift.min(kept, cap) }
        if levels > 0 { kept = Swift.min(kept, levels) }
        return kept
    }

    public func stacks(user: Int64, scope: Key?) -> Stacks { stacks[StackKey(user: user, scope: scope)] ?? Stacks() }

    public func topUndo(user: Int64, scope: Key?) -> Group? { stacks(user: user, scope: scope).undo.last.flatMap { groups[$0] } }
    public func topRedo(user: Int64, scope: Key?) -> Group? { stacks(user: user, scope: scope).redo.last.flatMap { groups[$0] } }

    /// Whether `user` has a group to undo and to redo in `scope`, and their
    /// names (what a prompt shows): one look-up of the stacks, and the groups
    /// read where the table holds them. `topUndo`/`topRedo` copy each group
    /// whole, and this runs after every commit (`prompt_state`).
    public func tops(user: Int64, scope: Key?) -> (canUndo: Bool, undoAction: String?, canRedo: Bool, redoAction: String?) {
        guard let i = stacks.index(forKey: StackKey(user: user, scope: scope)) else { return (false, nil, false, nil) }
        let s = stacks.values[i]
        func named(_ key: GroupKey?) -> (Bool, String?) {
            guard let key, let g = groups.index(forKey: key) else { return (false, nil) }
            return (true, groups.values[g].action)
        }
        let (canUndo, undoAction) = named(s.undo.last)
        let (canRedo, redoAction) = named(s.redo.last)
        return (canUndo, undoAction, canRedo, redoAction)
    }

    public func logged(_ version: Int64) -> Logged? {
        version >= logBase && version < logBase + Int64(log.count) ? log[Int(version - logBase)] : nil
    }

    /// Versions after `version` that touched `node`, ascending.
    public func touches(of node: Key, after version: Int64) -> ArraySlice<Int64> {
        guard let all = touches[node] else { return [] }
        var lo = 0, hi = all.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if all[mid] <= version { lo = mid + 1 } else { hi = mid }
        }
        return all[lo...]
    }

    // MARK: Recording the log

    public mutating func record(_ e: Event) {
        if log.isEmpty { logBase = e.version }
        log.append(Logged(user: e.userID, ops: e.ops, inverse: e.inverse, version: e.version, reverted: e.meta.reverted))
        switch e.kind {
        case .edit, .restore: recordEdit(e)
        case .undo, .redo: recordRevert(e)
        }
        index(log[log.count - 1])
    }

    /// Adds an event to the touch index. An event touches what its ops and its
    /// inverse touch, and a revert also what the events it reverted touched:
    /// so an edit and the undo that cancels it always show up together.
    mutating func index(_ entry: Logged) {
        if let only = Self.onlyNode(entry) { return touches[only, default: []].append(entry.version) }
        for k in nodes(of: entry) { touches[k, default: []].append(entry.version) }
    }

    /// The one node `entry` touches when its ops and inverse all change
    /// just that node and it reverted nothing (most edits): `nodes(of:)`'s
    /// answer without the list it makes (~1,100 instructions an event, in each ledger).
    static func onlyNode(_ entry: Logged) -> Key? {
        guard entry.reverted.isEmpty, let first = entry.ops.first else { return nil }
        func changesOnly(_ node: Key, _ op: Op) -> Bool {
            switch op {
            case .create, .move: return false
            case let .delete(n), let .set(n, _, _), let .insert(n, _, _), let .remove(n, _, _): return n == node
            }
        }
        let node = first.node
        guard entry.ops.allSatisfy({ changesOnly(node, $0) }), entry.inverse.allSatisfy({ changesOnly(node, $0) }) else { return nil }
        return node
    }

    /// The nodes `entry` touches, for the index.
    func nodes(of entry: Logged) -> [Key] {
        // A handful of nodes an event, most often one: a list searched beats a set hashed.
        var nodes: [Key] = []
        func add(_ op: Op) {
            switch op {
            case .create: for k in Self.touched(by: op) where !nodes.contains(k) { nodes.append(k) }
            case let .move(n, parent, _):
                if !nodes.contains(n) { nodes.append(n) }
                if !nodes.contains(parent) { nodes.append(parent) }
            default: if !nodes.contains(op.node) { nodes.append(op.node) }
            }
        }
        func add(_ l: Logged) {
            for op in l.ops { add(op) }
            for op in l.inverse { add(op) }
        }
        add(entry)
        for v in entry.reverted { if let l = logged(v) { add(l) } }
        return nodes
    }

    public mutating func record(_ m: GroupMark) {
        markCount = m.n
        if let tx = m.tx { markTransactions[DocumentLedger.TxKey(user: m.userID, tx: Key(tx))] = m.n }
        switch m.kind {
        case .close:
            guard let g = m.group, let parts = open.removeValue(forKey: g) else { return }
            for scope in parts {
                let key = GroupKey(id: g, scope: scope)
                guard var group = groups[key] else { continue }
                if let a = m.action { group.givenAction = a }
                if let s = m.selection { group.selectionAfter = s }
                groups[key] = group
                push(key, onto: StackKey(user: group.user, scope: scope))
            }
        case .rename:
            guard let g = m.group, let a = m.action else { return }
            let key = GroupKey(id: g, scope: m.scope)
            if groups[key] != nil { groups[key]!.givenAction = a }
        case .clear:
            let sk = StackKey(user: m.userID, scope: m.scope)
            if let s = stacks.removeValue(forKey: sk) { for k in s.undo + s.redo { groups[k] = nil } }
        case .levels:
            // A number the server wrote (`set_undo_levels`); anything else reads as "none chosen".
            let n = m.action.flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
            let everyone = m.group == GroupMark.documentLevels
            if everyone { documentLevels = n } else { userLevels[m.userID] = n }
            // Lowered: the oldest groups of each stack it covers go now. Raised: nothing comes back.
            for i in stacks.indices where everyone || stacks.keys[i].user == m.userID { dropPastLevels(at: i) }
        }
    }

    private mutating func recordEdit(_ e: Event) {
        let scope = e.meta.scope
        let key = GroupKey(id: e.group, scope: scope)
        let sk = StackKey(user: e.userID, scope: scope)
        // The user's stacks are looked up once (and changed where the table
        // holds them): valid below, since nothing else adds to `stacks` here.
        let stack = stacks.index(forKey: sk)
        // A new edit clears this user's redo stack in this scope (not other users').
        if let i = stack, !stacks.values[i].redo.isEmpty {
            for k in stacks.values[i].redo { groups[k] = nil }
            stacks.values[i].redo = []
        }
        let node = Self.typingNode(e.ops)
        // Kept at most about a third full (room for twice the groups, not
        // the default's 4/3): each push onto a full stack deletes the oldest
        // group, and a delete re-hashes every key after it in its run of
        // full buckets — ~2,200 instructions a delete at the default load,
        // ~250 at this one (callgrind, replay) — for about twice the table's memory.
        if groups.capacity < 3 * (groups.count + 1) / 2 { groups.reserveCapacity(2 * (groups.count + 1)) }
        // An edit whose group is named by its own id starts that group (ids
        // are unique): not looked up first, which hashed its key a second time.
        if e.group != e.id, let i = groups.index(forKey: key) {
            return Self.extend(&groups.values[i], with: e, typingNode: node)
        }
        if var old = groups.updateValue(Self.group(of: e, key: key, typingNode: node), forKey: key) {
            // Only a log whose ids repeat gets here: the edit joins the group, as any other would.
            Self.extend(&old, with: e, typingNode: node)
            groups[key] = old
            return
        }
        if e.meta.open {
            open[e.group, default: []].append(scope)
        } else {
            push(key, onto: sk, at: stack)
        }
    }

    /// A new group of one edit.
    private static func group(of e: Event, key: GroupKey, typingNode node: Key?) -> Group {
        let edits = [e.version]  // one buffer for both until the group changes
        return Group(key: key, user: e.userID, client: e.client, givenAction: e.action, edits: edits, effect: edits,
                     selectionBefore: e.meta.selection, selectionAfter: Self.selectionAfter(e.ops) ?? e.meta.selection,
                     lastTime: e.time, typingNode: node, opKinds: OpKinds(e.ops))
    }

    /// An edit joins the group it names.
    private static func extend(_ g: inout Group, with e: Event, typingNode node: Key?) {
        g.edits.append(e.version)
        g.effect = g.edits
        g.lastTime = e.time
        if g.typingNode != node { g.typingNode = nil }
        g.opKinds.formUnion(OpKinds(e.ops))
        if let a = e.action, e.meta.open || g.givenAction == nil { g.givenAction = a }
        g.selectionAfter = Self.selectionAfter(e.ops) ?? g.selectionAfter
    }

    private mutating func recordRevert(_ e: Event) {
        guard let refers = e.refers else { return }
        let key = GroupKey(id: refers, scope: e.meta.scope)
        guard var g = groups[key] else { return }
        let sk = StackKey(user: g.user, scope: key.scope)
        if log[log.count - 1].reverted.isEmpty { log[log.count - 1].reverted = g.effect }
        g.effect = [e.version]
        g.isUndone = e.kind == .undo
        g.typingNode = nil  // an undone or redone group takes no more typing
        groups[key] = g
        // Changed where the table holds them (a stack taken out with
        // `var s = stacks[sk]` and stored back was copied whole).
        let i = stackIndex(sk)
        if e.kind == .undo {
            stacks.values[i].undo.removeAll { $0 == key }
            stacks.values[i].redo.append(key)
        } else {
            stacks.values[i].redo.removeAll { $0 == key }
            stacks.values[i].undo.append(key)
        }
        dropPastLevels(at: i)
    }

    /// Pushes a closed group onto the user's undo stack (`at`: where `stacks`
    /// holds it, when the caller looked it up) and drops the oldest past `levels`.
    private mutating func push(_ key: GroupKey, onto sk: StackKey, at known: Dictionary<StackKey, Stacks>.Index? = nil) {
        let i = known ?? stackIndex(sk)
        stacks.values[i].undo.append(key)
        dropPastLevels(at: i)
    }

    /// Where `stacks` holds `sk`'s stacks, empty ones added if it had none.
    private mutating func stackIndex(_ sk: StackKey) -> Dictionary<StackKey, Stacks>.Index {
        if let i = stacks.index(forKey: sk) { return i }
        stacks[sk] = Stacks()
        return stacks.index(forKey: sk)!
    }

    /// Drops the oldest groups past `levels` from both stacks at `i`, and
    /// their groups — in place: no list of them made.
    private mutating func dropPastLevels(at i: Dictionary<StackKey, Stacks>.Index) {
        let levels = userLevels.isEmpty && documentLevels == nil ? self.levels : self.levels(for: stacks.keys[i].user)
        guard levels > 0 else { return }
        let overUndo = stacks.values[i].undo.count - levels
        if overUndo > 0 {
            for k in stacks.values[i].undo[..<overUndo] { groups[k] = nil }
            stacks.values[i].undo.removeFirst(overUndo)
        }
        let overRedo = stacks.values[i].redo.count - levels
        if overRedo > 0 {
            for k in stacks.values[i].redo[..<overRedo] { groups[k] = nil }
            stacks.values[i].redo.removeFirst(overRedo)
        }
    }

    // MARK: Helpers

    /// Nodes an op touches: its node, and the parent it creates or moves under.
    static func touched(by op: Op) -> [Key] {
        switch op {
        case let .create(spec, parent, _):
            var ids = [parent]
            var stack = [spec]
            while let s = stack.popLast() { ids.append(s.id); stack.append(contentsOf: s.children) }
            return ids
        case let .move(n, parent, _): return [n, parent]
        default: return [op.node]
        }
    }

    /// The node when every op is text in that one node.
    static func typingNode(_ ops: [Op]) -> Key? {
        guard let first = ops.first, ops.allSatisfy({ $0.isText && $0.node == first.node }) else { return nil }
        return first.node
    }

    /// Where the caret lands after text ops: after an insert, at a remove.
    static func selectionAfter(_ ops: [Op]) -> Selection? {
        for op in ops.reversed() {
            switch op {
            case let .insert(n, p, t): return Selection(node: n, start: p + t.count, end: p + t.count)
            case let .remove(n, p, _): return Selection(node: n, start: p, end: p)
            default: continue
            }
        }
        return nil
    }
}
