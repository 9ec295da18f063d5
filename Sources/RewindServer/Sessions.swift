import RewindLoop

/// The server's connections, the sessions made on them, and their turns on
/// the loop: who is connected (by id), who said hello (by id, and by user and
/// client id), who has output waiting, who goes on at the next turn, who
/// closes when this one ends, and the streams saying `bye`. It owns that
/// state and nothing else: what a connection's arrival or departure means
/// for documents, prompts and presence is the server's (`Server.connectionEnded`).
final class Sessions {
    /// Every connection, by id; its session hangs from it (`Connection.session`).
    private var byID: [Int: Connection] = [:]
    private var nextID = 1
    /// Sessions by (user id, client id): a second session with the same pair
    /// replaces the first. Keyed by a hash of the pair, 16 bytes a slot where
    /// the pair itself took 32 (every idle terminal holds one: `scripts/bench/idle`);
    /// a pair whose hash another pair's session holds already goes in `byClientCollided`.
    private var byClient: [Int: Session] = [:]
    private var byClientCollided: [ClientKey: Session] = [:]
    /// The hash a pair is kept under (a test makes every pair collide).
    var clientHash: (Int64, String) -> Int = { user, client in
        var h = Hasher()
        h.combine(user)
        h.combine(client)
        return h.finalize()
    }
    /// Connections with output to write before the loop sleeps.
    private var dirty: [Connection] = []
    /// Connections that used their share of a loop turn with frames left.
    private var runNext: [Connection] = []
    private var everyTurn: EveryTurn?
    /// Connections to close once this loop turn's work is done (`Connection.closeAfterTurn`).
    private var marked: [Connection] = []
    /// Sockets saying `bye`, with the time after which they are closed hard.
    private var closing: [(socket: TCPSocket, deadline: UInt64)] = []
    /// Bytes held in incomplete lines, over all connections.
    private(set) var partialBytes = 0

    var count: Int { byID.count }
    var all: [Connection] { Array(byID.values) }

    /// The id the next accepted connection gets.
    func newID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    func add(_ c: Connection) { byID[c.id] = c }

    /// Forgets `c` and its session (nil: it was not here, i.e. it ended already).
    func remove(_ c: Connection) -> (Session?)? {
        guard byID.removeValue(forKey: c.id) != nil else { return nil }
        guard let s = c.session else { return .some(nil) }
        c.session = nil  // it holds its connection: the cycle ends here
        let hash = clientHash(s.user.id, s.client)
        if byClient[hash] === s {
            byClient[hash] = nil
        } else if !byClientCollided.isEmpty {
            let key = ClientKey(user: s.user.id, client: s.client)
            if byClientCollided[key] === s { byClientCollided[key] = nil }
        }
        return s
    }

    /// The session made on `c` by its hello (nil: none yet).
    func session(of c: Connection) -> Session? { c.session }

    /// The session of the connection with this id, while it is connected.
    func session(_ id: Int) -> Session? { byID[id]?.session }

    /// The sessions of one user, on this server.
    func sessions(ofUser user: Int64) -> [Session] { byID.values.compactMap { $0.session?.user.id == user ? $0.session : nil } }

    /// The session that holds this user's client id.
    func client(user: Int64, client: String) -> Session? {
        if let s = byClient[clientHash(user, client)], s.user.id == user, s.client == client { return s }
        return byClientCollided.isEmpty ? nil : byClientCollided[ClientKey(user: user, client: client)]
    }

    /// `s` begins: it holds its user's client id now; the session that held it before, if another.
    func begin(_ s: Session) -> Session? {
        s.connection.session = s
        s.connection.helloAnswered()
        let hash = clientHash(s.user.id, s.client)
        let old: Session?
        if let held = byClient[hash], held.user.id != s.user.id || held.client != s.client {
            let key = ClientKey(user: s.user.id, client: s.client)  // another pair holds the hash
            old = byClientCollided.updateValue(s, forKey: key)
        } else {
            let collided = byClientCollided.isEmpty ? nil : byClientCollided.removeValue(forKey: ClientKey(user: s.user.id, client: s.client))
            old = byClient.updateValue(s, forKey: hash) ?? collided
        }
        return old === s ? nil : old
    }

    /// A user's client id, as a key (for the rare pair whose hash another holds): the session's own strings, nothing made for it.
    struct ClientKey: Hashable {
        let user: Int64
        let client: String
    }

    // MARK: Turns

    /// Starts running connections left over from a turn at the next one.
    func start(loop: EventLoop) {
        everyTurn = EveryTurn(loop: loop) { [unowned self] in self.continueTurn() }
    }

    func stop() { everyTurn?.close() }

    /// `c` used its share of this turn: it goes on at the next, after the others.
    func continueNextTurn(_ c: Connection) {
        guard !c.continuesNextTurn else { return }
        c.continuesNextTurn = true
        runNext.append(c)
        everyTurn?.start()  // the loop must not sleep while work is left
    }

    private func continueTurn() {
        let list = runNext
        runNext = []
        for c in list {
            c.continuesNextTurn = false
            c.pump()
        }
        if runNext.isEmpty { everyTurn?.stop() }
    }

    /// Keeps the count of bytes held in incomplete lines; whether it is now past `limit`.
    func partialLineChanged(_ c: Connection, to bytes: Int, limit: Int) -> Bool {
        let counted = Int32(clamping: bytes)  // a line is bounded by --max-frame-bytes, far below 2 GiB
        partialBytes += Int(counted) - Int(c.inbox.partialCounted)
        c.inbox.partialCounted = counted
        return bytes > 0 && partialBytes > limit
    }

    func outputPending(_ c: Connection) { dirty.append(c) }

    /// Writes what every connection with output has queued.
    func flushOutput() {
        let list = dirty
        dirty = []
        for c in list { c.flush() }
    }

    func closeAfterTurn(_ c: Connection) { marked.append(c) }

    var hasMarked: Bool { !marked.isEmpty }

    /// Closes the connections marked this turn; closing one (its presence
    /// leaving, its groups closing) may mark others, closed here too.
    func closeThoseMarked() {
        while !marked.isEmpty {
            let list = marked
            marked = []
            for c in list { c.closeNowTheTurnIsOver() }
        }
    }

    func resetLater(_ socket: TCPSocket, at deadline: UInt64) { closing.append((socket, deadline)) }

    /// Closes hard the streams whose peer did not close them after `bye` in time.
    func resetOverdue(now: UInt64) {
        closing.removeAll { entry in
            guard now >= entry.deadline else { return false }
            entry.socket.reset()
            return true
        }
    }
}
