import RewindLoop

/// The end of a loop turn: one `BeforeSleep` (libuv's prepare handle, run
/// just before the loop would wait for I/O) runs these phases, in this order,
/// and again while a phase's writes found a peer gone. Work of the turn —
/// requests dispatched, commits answered, notices read — only queues things;
/// here they go out, once per turn however many there were.
///
/// Why this order: every phase before `output` queues pushes, which `output`
/// then writes in the same turn (after it, they would wait for the next
/// wake-up, which on a quiet server may be long: `EndOfTurnTests`);
/// `clusterNotices` follows `presenceMoved`, whose notices it sends; and
/// `commits` is last, so that an append made by any phase (a group closed
/// because its terminal was closed in `closeAfterTurn`) joins this turn's batch.
enum EndOfTurnPhase: String, CaseIterable {
    /// Connections marked `closeAfterTurn` this turn end: their presence leaves,
    /// their groups close, their prompts are cancelled. Closing one may mark others.
    case closeAfterTurn
    /// Hellos waiting for a place (`HelloGate`) take the places freed this turn.
    case hellos
    /// Presence that others' edits moved this turn is pushed, and queued for other instances.
    case presenceMoved
    /// The `prompt_state` of users whose edits committed this turn is checked, and pushed where it changed.
    case promptStates
    /// Everything queued for terminals is written, one `writev` per connection.
    case output
    /// Quick-action lists marked stale are read again.
    case quickActions
    /// Presence notices for the other instances go out, in one NOTIFY.
    case clusterNotices
    /// Each writer sends its batch of appends to PostgreSQL.
    case commits
}

extension Server {
    func startEndOfTurn() -> BeforeSleep {
        BeforeSleep(loop: loop) { [unowned self] in self.endTurn() }
    }

    /// The phases in `endOfTurnOrder` (a test reorders them to show why the order is what it is).
    func endTurn() {
        repeat {
            for phase in endOfTurnOrder { run(phase) }
        } while sessions.hasMarked || helloGate.mayAdmit  // a write found its peer gone: it ends now, and what its leaving pushed is written; or a hello's place was freed after its phase
    }

    private func run(_ phase: EndOfTurnPhase) {
        switch phase {
        case .closeAfterTurn: sessions.closeThoseMarked()
        case .hellos: helloGate.admitWaiting()
        case .presenceMoved: presence.flushMoved()
        case .promptStates: promptStates.checkDue()
        case .output: sessions.flushOutput()
        case .quickActions: quickActions.refreshStale()
        case .clusterNotices: cluster.flush()
        case .commits: store.sendBatches()
        }
    }
}
