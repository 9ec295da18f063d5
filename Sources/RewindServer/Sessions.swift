import RewindLoop

/// The server's connections and their turns on the loop: who is connected
/// (by id, and by user and client id), who has output waiting, who goes on
/// at the next turn, who closes when this one ends, and the streams saying
/// `bye`. It owns that state and nothing else: what a connection's arrival
/// or departure means for documents, prompts and presence is the server's
/// (`Server.connectionEnded`).
final class Sessions {
    private var byID: [Int: Connection] = [:]
    private var nextID = 1
    /// Connections by (user id, client id): a second connection with the same pair replaces the first.
    private var byClient: [String: Connection] = [:]
    /// Connections with output to write before the loop sleeps.
    private var dirty: [Connection] = []
    /// Connections that used their share of a loop turn with frames left.
    private var runNext: [Connection] = []
    private var everyTurn: EveryTurn?
    /// Connections marked `closeSoon` during this loop turn.
    private var marked: [Connection] = []
    /// Streams saying `bye`, with the time after which they are closed hard.
    private var closing: [(stream: TCPStream, deadline: UInt64)] = []
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

    /// Forgets `c` (false: it was not here, i.e. it ended already).
    func remove(_ c: Connection) -> Bool {
        guard byID.removeValue(forKey: c.id) != nil else { return false }
        if let key = Self.clientKey(c), byClient[key] === c { byClient[key] = nil }
        return true
    }

    /// The connection with this id, while it is connected.
    func connection(_ id: Int) -> Connection? { byID[id] }

    /// The connections of one user, on this server.
    func connections(ofUser user: Int64) -> [Connection] { byID.values.filter { $0.user?.id == user } }

    /// The connection that holds this user's client id.
    func client(user: Int64, client: String) -> Connection? { byClient[Self.clientKey(user: user, client: client)] }

    /// `c` holds its user's client id now; the connection that held it before, if another.
    func claimClient(_ c: Connection) -> Connection? {
        guard let key = Self.clientKey(c) else { return nil }
        let old = byClient[key]
        byClient[key] = c
        return old === c ? nil : old
    }

    static func clientKey(_ c: Connection) -> String? {
        guard let u = c.user, let client = c.clientID else { return nil }
        return clientKey(user: u.id, client: client)
    }

    static func clientKey(user: Int64, client: String) -> String { "\(user)\u{1F}\(client)" }

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
        partialBytes += bytes - c.partialCounted
        c.partialCounted = bytes
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
    func closeMarked() {
        while !marked.isEmpty {
            let list = marked
            marked = []
            for c in list { c.closeMarked() }
        }
    }

    func closeHardLater(_ stream: TCPStream, at deadline: UInt64) { closing.append((stream, deadline)) }

    /// Closes hard the streams whose peer did not close them after `bye` in time.
    func closeOverdue(now: UInt64) {
        closing.removeAll { entry in
            guard now >= entry.deadline else { return false }
            entry.stream.reset()
            return true
        }
    }
}
