/// At most `limit` hellos between their token's check and their answer at
/// once; the others wait their turn, in order, each on its own connection
/// (its later frames wait behind it, as behind any request being processed).
///
/// A reconnect storm (a server restarted under ten thousand terminals)
/// otherwise sends every hello's queries to the database at once: the
/// pipeline to PostgreSQL, libpq's buffers and the hellos' own state all grow
/// to the whole storm and keep that size (libpq never shrinks its buffers),
/// and what the storm freed is scattered between the connections that stay —
/// ~2 KB a terminal that an idle server never gives back
/// (`scripts/bench/idle`). Bounded, a storm costs what a steady arrival does.
/// Memory only: the hellos still go to the database back to back, `limit`
/// pipelined at a time.
final class HelloGate {
    let limit: Int
    private(set) var inFlight = 0
    /// Hellos waiting, oldest at `next`; a taken one is cleared at once (what
    /// its closure holds, a connection and its request, goes with it).
    private var waiting: [((Slot) -> Void)?] = []
    private var next = 0

    init(limit: Int) { self.limit = max(1, limit) }

    /// Hellos waiting for a place.
    var queued: Int { waiting.count - next }

    /// Runs `body` with a place now, or once one is free; the place is held
    /// until the last reference to the slot goes (the closures that finish the hello).
    func enter(_ body: @escaping (Slot) -> Void) {
        if inFlight < limit && queued == 0 {
            inFlight += 1
            body(Slot(self))
        } else {
            waiting.append(body)
        }
    }

    /// Places freed and hellos waiting for them: `admitWaiting` has work
    /// (the end of the loop turn runs it: `EndOfTurnPhase.hellos`).
    var mayAdmit: Bool { inFlight < limit && queued > 0 }

    /// Gives the places freed to the hellos waiting longest. Never from
    /// `leave`: a place is given back when the last closure holding its slot
    /// is released, which may be in the middle of anything (the database
    /// pipeline dropping a completion), and starting a hello there would
    /// reach into what is being changed.
    func admitWaiting() {
        guard !admitting else { return }
        admitting = true
        defer { admitting = false }
        while inFlight < limit && next < waiting.count {
            let body = waiting[next]!
            waiting[next] = nil
            next += 1
            if next == waiting.count {
                waiting.removeAll(keepingCapacity: false)  // a storm's queue is not kept
                next = 0
            } else if next >= 1024 && next * 2 >= waiting.count {
                waiting.removeFirst(next)  // a backlog that never empties does not grow by what it took
                next = 0
            }
            inFlight += 1
            body(Slot(self))  // a hello whose terminal left meanwhile gives its place back at once: the loop goes on
        }
    }

    private var admitting = false

    fileprivate func leave() { inFlight -= 1 }

    /// A hello's place: given back when released.
    final class Slot {
        private unowned let gate: HelloGate
        fileprivate init(_ gate: HelloGate) { self.gate = gate }
        deinit { gate.leave() }
    }
}
