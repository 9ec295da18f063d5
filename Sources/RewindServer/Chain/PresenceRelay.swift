import RewindCore
import RewindLoop

/// Presence carried out (SPEC section 5): `PresenceBoard` (core) decides who
/// sees what; here its effects become pushes to the terminals on this
/// instance and notices to the others. Owns the documents whose carets edits
/// moved this loop turn, announced once when the turn ends.
final class PresenceRelay {
    private let cluster: Cluster
    private let promptStates: PromptStates
    /// Documents with presence moved by edits this loop turn.
    private var movedDocs: [DocumentRuntime] = []

    init(cluster: Cluster, promptStates: PromptStates) {
        self.cluster = cluster
        self.promptStates = promptStates
    }

    /// Records `c`'s presence; if it changed, the other terminals are told,
    /// and `c` gets its new `prompt_state` (focus picks the undo scope).
    func set(_ d: DocumentRuntime, _ c: Session, _ p: Presence) {
        // A request that waited may act after its terminal left: no presence for a terminal not here.
        guard !c.isClosed, d.subscribers[c.id] === c else { return }
        announce(d.presence.set(c.id, p), in: d)
    }

    /// A terminal leaving the document (close, disconnect, idle) leaves no ghost behind.
    func leave(_ d: DocumentRuntime, _ c: Session) {
        announce(d.presence.leave(c.id), in: d)
    }

    /// After a committed event (`PresenceBoard.after`): moves are announced
    /// once per loop turn, by `flushMoved`.
    func after(_ d: DocumentRuntime, _ event: Event) {
        guard !d.presence.positions.isEmpty else { return }
        let hadMoved = !d.presence.moved.isEmpty
        let effects = d.presence.after(event, madeBy: { id in
            guard let c = d.subscribers[id] else { return false }
            return c.user.id == event.userID && c.client == event.client
        }, current: d.current.document, committed: d.committed.document)
        if !hadMoved && !d.presence.moved.isEmpty { movedDocs.append(d) }
        announce(effects, in: d)
    }

    /// Pushes the presence moves of this loop turn (called just before the loop sleeps).
    func flushMoved() {
        guard !movedDocs.isEmpty else { return }
        let docs = movedDocs
        movedDocs = []
        // (A terminal found slow here is closed after this, at the end of the turn (`EndOfTurnPhase.closeAfterTurn`): the sets do not change meanwhile.)
        for d in docs { announce(d.presence.endOfTurn(), in: d) }
    }

    /// Carries `PresenceBoard`'s effects out in `d`: pushes to the terminals here, a notice to the other instances.
    func announce(_ effects: [PresenceBoard.Effect], in d: DocumentRuntime) {
        for effect in effects {
            switch effect {
            case let .announce(id, p):
                guard let c = d.subscribers[id] else { continue }
                cluster.share(d, c, p)
                guard d.subscribers.count > 1 else { continue }
                let user = c.user, client = c.client
                let bytes = SharedBytes(Push.presence(doc: d.id, user: user.name, client: client, p))
                for other in d.subscribers.values where other !== c { other.push(bytes) }
            case let .promptStateMayChange(id):
                if let c = d.subscribers[id] { promptStates.push(d, to: c) }
            case let .announceRemote(user, client, p):
                guard !d.subscribers.isEmpty else { continue }
                let bytes = SharedBytes(Push.presence(doc: d.id, user: user, client: client, p))
                for c in d.subscribers.values { c.push(bytes) }
            }
        }
    }

    /// On open: who else is here and where.
    func pushOthers(_ d: DocumentRuntime, to c: Session) {
        for (id, p) in d.presence.positions where id != c.id {
            guard let other = d.subscribers[id] else { continue }
            let user = other.user, client = other.client
            c.push(SharedBytes(Push.presence(doc: d.id, user: user.name, client: client, p)))
        }
        for r in d.presence.remote.values {
            c.push(SharedBytes(Push.presence(doc: d.id, user: r.user, client: r.client, r.presence)))
        }
    }
}
