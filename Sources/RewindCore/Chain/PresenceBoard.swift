/// The presence of the terminals one instance serves in one document, as a
/// value: each change returns what must be said and to whom it matters, and
/// the server only carries that out (a `presence` push to the document's
/// other terminals and a notice to the other instances; a `prompt_state` for
/// a terminal whose undo scope may have moved). Terminals are named by the
/// server's connection ids; those other instances serve (`remote`) by the
/// instance and its connection id, as their notices name them.
public struct PresenceBoard: Sendable {
    public enum Effect: Sendable, Equatable {
        /// Tell the others where `terminal` is now (empty: it left, or lost focus).
        case announce(terminal: Int, Presence)
        /// `terminal`'s first responder — so its undo scope — may have changed.
        case promptStateMayChange(terminal: Int)
        /// Tell every terminal here where a terminal of another instance is now (empty: it left).
        case announceRemote(user: String, client: String, Presence)
    }

    /// A terminal another instance serves, as that instance's notices say.
    public struct RemoteTerminal: Sendable, Equatable {
        public var instance: Int32
        public var user: String
        public var client: String
        public var presence: Presence
    }

    public private(set) var positions: [Int: Presence] = [:]
    /// Other instances' terminals with presence here, by "instance:terminal".
    public private(set) var remote: [String: RemoteTerminal] = [:]
    /// Terminals whose presence edits moved during this loop turn: announced
    /// once, at their final position, by `endOfTurn` — a batch of commits
    /// moving one caret costs one push per terminal, not one per commit.
    public private(set) var moved: Set<Int> = []
    /// Announce carets that edits only moved (focus lost is announced either way).
    public let announcesMovedCarets: Bool

    public init(announcesMovedCarets: Bool = true) {
        self.announcesMovedCarets = announcesMovedCarets
    }

    public subscript(terminal: Int) -> Presence { positions[terminal] ?? Presence() }

    /// `terminal` put its focus or selection somewhere (focus, select, blur,
    /// an undo handing a selection back): announced at once, if it changed.
    public mutating func set(_ terminal: Int, _ p: Presence) -> [Effect] {
        guard self[terminal] != p else { return [] }
        moved.remove(terminal)  // announced now, with this position
        positions[terminal] = p.isEmpty ? nil : p
        return [.announce(terminal: terminal, p), .promptStateMayChange(terminal: terminal)]
    }

    /// `terminal` left the document (close, disconnect, access lost): it
    /// leaves no ghost — announced empty if anyone may have seen it.
    public mutating func leave(_ terminal: Int) -> [Effect] {
        let had = positions.removeValue(forKey: terminal).map { !$0.isEmpty } ?? false
        let movedThisTurn = moved.remove(terminal) != nil  // the others may not have seen it go yet
        return had || movedThisTurn ? [.announce(terminal: terminal, Presence())] : []
    }

    /// A committed event: selections move through its text ops (others'
    /// only: a terminal's own selection already accounts for its own edits;
    /// `madeBy` says whose it was), focus on a node gone or no longer
    /// focusable in `current` (which includes edits still being committed) is
    /// dropped. Moves are announced at the end of the turn; a structural
    /// event may move every terminal's undo scope.
    public mutating func after(_ event: Event, madeBy: (Int) -> Bool, current: Document, committed: Document) -> [Effect] {
        guard !positions.isEmpty else { return [] }
        // An event that moves or deletes nodes, turns `undoScope` on or off, or
        // makes a node unfocusable (its focus is dropped) may move every
        // terminal's undo scope. Nothing else can (a created node has no
        // terminal in it yet; props, frames and text leave the scopes): asking
        // after every prop set made each focused terminal's prompt state part
        // of every such commit.
        let scopesMayMove = event.ops.contains(where: Self.mayMoveUndoScopes) ? positions.keys.sorted() : []
        for (terminal, p) in positions {
            let after = p.after(event.ops, byThisTerminal: madeBy(terminal), in: current, committed: committed)
            if after != p {
                positions[terminal] = after.isEmpty ? nil : after
                if announcesMovedCarets || after.node != p.node { moved.insert(terminal) }
            }
        }
        return scopesMayMove.map { .promptStateMayChange(terminal: $0) }
    }

    static func mayMoveUndoScopes(_ op: Op) -> Bool {
        switch op {
        case .move, .delete: return true
        case let .set(_, key, _): return key == NodeField.undoScope.rawValue || key == NodeField.focusable.rawValue
        case .create, .insert, .remove: return false
        }
    }

    /// Another instance says where one of its terminals is (empty: it left or lost focus).
    public mutating func setRemote(instance: Int32, terminal: Int64, user: String, client: String, _ p: Presence) -> [Effect] {
        let key = "\(instance):\(terminal)"
        guard (remote[key]?.presence ?? Presence()) != p else { return [] }
        remote[key] = p.isEmpty ? nil : RemoteTerminal(instance: instance, user: user, client: client, presence: p)
        return [.announceRemote(user: user, client: client, p)]
    }

    /// Instances not in `live` are gone: their terminals leave, and no ghost stays.
    public mutating func dropRemote(notIn live: Set<Int32>) -> [Effect] {
        var out: [Effect] = []
        for (key, r) in remote.sorted(by: { $0.key < $1.key }) where !live.contains(r.instance) {
            remote[key] = nil
            out.append(.announceRemote(user: r.user, client: r.client, Presence()))
        }
        return out
    }

    /// The end of the loop turn: each terminal edits moved, announced once where it is now.
    public mutating func endOfTurn() -> [Effect] {
        guard !moved.isEmpty else { return [] }
        let list = moved.sorted()
        moved = []
        return list.map { .announce(terminal: $0, self[$0]) }
    }
}
