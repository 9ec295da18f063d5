import Logging
import RewindCore
import RewindLoop

/// A reply too large to encode at once (the state of a big document): it is
/// produced in slices, as fast as the terminal reads, so it neither stalls
/// the loop for others nor sits in memory whole.
protocol ReplyStream: AnyObject {
    /// Bytes still to come, estimated: counted against the output bound before they exist.
    var remaining: Int { get }
    var isDone: Bool { get }
    /// About `max` bytes more (never empty until done).
    func next(max: Int) -> [UInt8]
}

/// One terminal's TCP connection: frames in, replies and pushes out.
///
/// **In**: a serial mailbox. Bytes are buffered in a `FrameDecoder` and
/// frames are taken one at a time (`pump`), in order; the next is taken only
/// once the request before it has been *processed* — applied (a submit to
/// the speculative ledger, a focus to the presence), queued behind its
/// document's commits, or answered — never merely because it was read. A
/// request whose processing waits for something (the token's owner at
/// `hello`, the roles of its document, an `open`'s head, a document catching
/// up, a shake's prompt) takes a `Processing` and ends it when done; the
/// connection's later frames wait meanwhile. That one rule is what keeps
/// pipelined requests in order. Replies to commits still come after their
/// commit, so they may overtake nothing but follow later replies.
///
/// Frames also wait behind output the peer has not read (`outputBytes` past
/// the bound), too many of its commits in flight, or its share of this loop
/// turn used up. Meanwhile the socket is not read, so what the peer sends
/// waits in the kernel: back-pressure instead of memory.
///
/// **Out**: replies and pushes are queued during a loop turn and written once
/// per turn (the server flushes dirty connections just before the loop
/// sleeps), so a burst of events costs one write per terminal. Everything
/// queued or not yet written counts against one bound (`--max-output-bytes`):
/// past it the connection's own requests wait; pushes past twice the bound,
/// or a connection over it for `--slow-timeout`, mean the terminal is too
/// slow, and it is closed (`bye` `slow`) after the loop turn (`closeAfterTurn`).
///
/// The connection *is* its socket (a `TCPSocket` subclass): one allocation a
/// terminal for both, where a socket object of its own cost every idle
/// terminal 64 bytes more (`scripts/bench/idle`).
final class Connection: TCPSocket {
    // Stored properties are laid out in this order, after the socket's, and
    // every idle terminal holds them: 192 bytes is an allocator size class
    // (`scripts/bench/idle`, `IdleFootprintTests`). The one-byte flags come
    // first, into the room the socket's flags leave before the next word;
    // what only a busy connection needs (a streamed reply, output the socket
    // did not take, a bound passed, a line in pieces, work behind its
    // commits, the first bytes of an HTTP request) is in `rare`.
    // What a push and a flush touch come next: a broadcast touches every
    // subscriber's. Only the loop's thread touches them: no dynamic
    // exclusivity checks (`swift_beginAccess` on each access) on the broadcast path.
    @exclusivity(unchecked) var isClosed = false
    /// In the server's list of connections to write before the loop sleeps (`markDirty`).
    @exclusivity(unchecked) var isDirty = false
    /// The mailbox is taking frames now (`pump` does not re-enter).
    var pumping = false
    /// In the server's list of connections to continue on the next loop turn.
    var continuesNextTurn = false
    /// The server's settings, shared by every connection (one reference each).
    let settings: ConnectionSettings
    /// The server it belongs to, seen only as what a connection may ask of it.
    var host: any ConnectionHost { settings.host }
    /// Replies and pushes queued, and the bound on them (`Connection+Output.swift`).
    @exclusivity(unchecked) var out: Output
    /// Set by `closeAfterTurn`: what the `bye` will say.
    var closingAfterTurn: (reason: String, retry: Bool, message: String)? {
        get { rare?.closingAfterTurn }
        set { if newValue != nil || rare != nil { rareState().closingAfterTurn = newValue } }
    }
    /// Bytes on the wire ↔ messages, and what the connection speaks (`Wire.swift`, `Connection+Web.swift`).
    var wire: Wire
    /// Frames in, one request at a time (`pump`).
    var inbox: Inbox

    let id: Int
    /// "address:port" of the client: the socket's peer, or the client a
    /// trusted load balancer's PROXY header names (`ProxyHeader`).
    private(set) var peer: String
    /// The session its hello made (nil: none yet, or it ended: `Sessions.remove` breaks the cycle).
    var session: Session?
    /// Who it is, for logs: "user/client@peer" once a session is made on it.
    var label: String { session?.label ?? "-@" + peer }
    /// When the last complete line arrived (the idle timer counts lines, not
    /// bytes); until the hello is answered, when the connection was accepted
    /// (the handshake timer counts from it: `heard`).
    var lastHeard: UInt64
    /// Refused at the door (too many handshakes from its address), to be told
    /// so in its own protocol once its first bytes show which (`take`), or by
    /// `bye` if it says nothing until `until` (`Server.sweep`).
    var refusal: (reason: String, message: String, until: UInt64)? {
        get { rare?.refusal }
        set { if newValue != nil || rare != nil { rareState().refusal = newValue } }
    }
    /// What few connections ever need, made for those that do: every idle
    /// terminal would otherwise carry its room (`scripts/bench/idle`).
    private(set) var rare: Rare?
    /// Room made only for the connections that need it (see the comment on the stored properties).
    final class Rare {
        var closingAfterTurn: (reason: String, retry: Bool, message: String)?
        var refusal: (reason: String, message: String, until: UInt64)?
        /// A streamed reply and everything queued behind it, moved to
        /// `out.queue` as it is produced (empty but while a large reply is being sent).
        var behind: [Outgoing] = []
        /// Since when `out.bytes` has been past the bound (nil: it is not).
        var overBoundSince: UInt64?
        /// Work waiting for this connection's edits in flight to be answered (`afterOwnCommits`).
        var afterCommits: [(processing: Processing, body: () -> Void)] = []
        /// Since when an incomplete line has been held (nil: none).
        var partialSince: UInt64?
        /// Queued in the socket, not yet written (the socket did not take it at once).
        var writing = 0
        /// A slice of the streamed reply at the head of `behind` was sent.
        var streamStarted = false
        /// The first bytes (a PROXY header, or an HTTP request head) while
        /// `wire.mode` is `.proxyHeader`, `.detecting` or `.http` and they do not decide yet.
        var head: [UInt8] = []
    }
    /// Whether it made room for what few connections need (tests: an idle terminal did not).
    var holdsRareState: Bool { rare != nil }
    /// Since when `out.bytes` has been past the bound (nil: it is not; `Server.sweep`).
    var overBoundSince: UInt64? {
        get { rare?.overBoundSince }
        set { if newValue != nil || rare != nil { rareState().overBoundSince = newValue } }
    }
    /// Since when an incomplete line has been held (nil: none; `Server.sweep`).
    var partialSince: UInt64? {
        get { rare?.partialSince }
        set { if newValue != nil || rare != nil { rareState().partialSince = newValue } }
    }
    func rareState() -> Rare {
        if let rare { return rare }
        let made = Rare()
        rare = made
        return made
    }

    /// What leaves: queued during a loop turn, written once per turn, bounded.
    struct Output {
        /// What is written next, in order: everything queued ahead of a streamed reply.
        var queue: [SharedBytes] = []
        /// Queued, streamed (estimated) and handed to libuv but not yet written
        /// (its bound: `settings.maxOutputBytes`).
        var bytes = 0
    }

    enum Outgoing {
        case bytes(SharedBytes)
        case stream(ReplyStream)
    }

    /// The serial mailbox (see the type's comment).
    struct Inbox {
        // Counters in 32 bits: small numbers, and 16 bytes less a terminal.
        /// Parts of the request taken last still being processed (`Processing`): the mailbox waits for them.
        var processing: Int32 = 0
        /// Edits sent and not yet answered: past the limit, the next frames wait.
        var commitsInFlight: Int32 = 0
        /// Requests a second (`--requests-per-second`, `--request-burst`: passed on each take).
        var requests: BucketState
        var badFramesInARow: Int32 = 0
        /// Bytes of the incomplete line as last counted in `Sessions.partialBytes` (at most `--max-frame-bytes`).
        var partialCounted: Int32 = 0
    }

    static let sliceBytes = 256 << 10

    /// Made by the listener before the connection is accepted into it (`accepted`).
    init(id: Int, loop: EventLoop, settings: ConnectionSettings) {
        self.id = id
        self.settings = settings
        out = Output()
        wire = Wire(maxFrameBytes: settings.config.limits.maxFrameBytes)
        peer = ""
        lastHeard = settings.host.now
        inbox = Inbox(requests: BucketState(burst: settings.config.requestBurst, now: lastHeard))
        super.init(loop: loop)
    }

    /// The socket is connected: who is at the other end.
    func accepted() { peer = peerName }

    /// Something came from the peer: the idle timer starts again. Not before
    /// the hello is answered: until then `lastHeard` is when the connection
    /// was accepted, and the handshake timer counts from it (`Server.sweep`);
    /// the hello's answer starts the idle timer (`helloAnswered`).
    func heard() { if session != nil { lastHeard = host.now } }

    /// The hello made the session: the idle timer starts now.
    func helloAnswered() { lastHeard = host.now }

    /// The first bytes held so far (none, usually: they decide at once), and
    /// `data` behind them; none are held any more.
    func takeHead(adding data: UnsafeRawBufferPointer) -> [UInt8] {
        guard let rare, !rare.head.isEmpty else { return Array(data) }
        var bytes = rare.head
        rare.head = []
        bytes.append(contentsOf: data)
        return bytes
    }

    /// First bytes that do not decide yet (a PROXY header or an HTTP request
    /// head in pieces): held until more come, in `rare`.
    func hold(_ bytes: [UInt8]) { rareState().head = bytes }

    /// The peer's address without its port (limits per address count this).
    var address: String { peer.lastIndex(of: ":").map { String(peer[..<$0]) } ?? peer }

    func start() { resumeReading() }  // the socket holds itself until its handle is closed

    // What the socket reports (`TCPSocket`).
    override func socketRead(_ data: UnsafeRawBufferPointer?) {
        guard let data else { return host.connectionEnded(self, reason: "closed by peer") }
        take(data)
    }

    override func socketQueuedWritten(_ bytes: Int, ok: Bool) { written(bytes, ok: ok) }

    /// From a trusted load balancer: the connection's first bytes are a PROXY
    /// header; admission (per address) waits for it (`Server.proxyHeaderRead`).
    func expectProxyHeader() { wire.mode = .proxyHeader }

    func readProxyHeader(_ data: UnsafeRawBufferPointer) {
        let bytes = takeHead(adding: data)
        switch ProxyHeader.parse(bytes) {
        case .needMore:
            guard bytes.count < ProxyHeader.maxLength else { return proxyHeaderFailed("PROXY header too long") }
            hold(bytes)
        case let .invalid(why):
            proxyHeaderFailed(why)
        case let .header(source, length):
            let rest = Array(bytes[length...])
            wire.mode = .detecting
            if let source { peer = source }
            host.proxyHeaderRead(self)
            rest.withUnsafeBytes { take($0) }
        }
    }

    private func proxyHeaderFailed(_ why: String) {
        wire.mode = .detecting
        settings.logger.warning("bad PROXY header from a trusted load balancer", metadata: ["peer": "\(peer)", "why": "\(why)"])
        close(reason: "bad_frames", retry: false, message: "\(why) (this address must send a PROXY protocol header first: --proxy-protocol-from)")
    }

    // MARK: Input

    /// Frames may be dispatched now (see the type's comment).
    private var mayDispatch: Bool {
        inbox.processing == 0 && closingAfterTurn == nil && out.bytes < settings.maxOutputBytes && Int(inbox.commitsInFlight) < settings.config.maxCommitsInFlight
    }

    /// Dispatches buffered frames, in order, while nothing holds the
    /// connection back; then reads from the socket only if it may go on.
    func pump() {
        guard !pumping, !isClosed else { return }
        pumping = true
        defer {
            pumping = false
            if !isClosed { afterPump() }
        }
        var served = 0
        while mayDispatch && !isClosed {
            guard served < settings.config.requestsPerTurn else {
                host.continueNextTurn(self)  // fair share: others go first
                return
            }
            guard let frame = wire.next() else { return }
            served += 1
            heard()
            host.handle(frame, from: self)
        }
    }

    private func afterPump() {
        // Read only when everything complete has been taken: the rest waits in the kernel.
        let waiting = wire.bufferedBytes > 0 && !wire.holdsPartial
        if mayDispatch && !waiting { resumeReading() } else { pauseReading() }
        if wire.holdsPartial { if partialSince == nil { partialSince = host.now } } else { partialSince = nil }
        host.partialLineChanged(self, to: wire.partialBytes)
    }

    /// The request being processed goes on after the current call returns:
    /// the next frame waits until the `Processing` returned ends.
    func processingGoesOn() -> Processing {
        inbox.processing += 1
        return Processing(self)
    }

    fileprivate func processingEnded() {
        inbox.processing -= 1
        if inbox.processing == 0 { pumpLater() }
    }

    /// The mailbox goes on, but not from inside whatever ended the wait (a
    /// libpq completion, a reply's callback): a pump running now takes the
    /// next frame itself; otherwise the connection is pumped at the next
    /// loop turn (`Sessions.continueNextTurn`), which the loop takes without
    /// sleeping. So nothing re-enters dispatch from a completion, and a
    /// commit's reply is queued before anything the terminal sent after it runs.
    private func pumpLater() {
        guard !pumping, !isClosed else { return }
        host.continueNextTurn(self)
    }

    /// `reply` for an edit handed to a document: the edit counts as in flight
    /// (`maxCommitsInFlight`, `afterOwnCommits`) from now until it is answered.
    /// The one place the count goes up and down; the reply is queued first.
    func committing(_ reply: @escaping DocumentRuntime.Reply) -> DocumentRuntime.Reply {
        inbox.commitsInFlight += 1
        return { [self] result in
            reply(result)
            self.commitAnswered()
        }
    }

    /// An edit was answered: the frames waiting behind the in-flight limit may go.
    private func commitAnswered() {
        inbox.commitsInFlight -= 1
        if inbox.commitsInFlight == 0, let rare, !rare.afterCommits.isEmpty {
            let waiting = rare.afterCommits
            rare.afterCommits = []
            for w in waiting {
                w.body()
                w.processing.end()
            }
            return
        }
        if Int(inbox.commitsInFlight) == settings.config.maxCommitsInFlight - 1 { pumpLater() }
    }

    /// Runs `body` once every edit this connection sent before (submits,
    /// undos, redos, chain edits, restores) has its answer, the connection's
    /// later frames waiting meanwhile: a `peek` or `scrub` pasted behind
    /// submits sees them in the log (which it reads), not only in memory.
    func afterOwnCommits(_ body: @escaping () -> Void) {
        guard inbox.commitsInFlight > 0 else { return body() }
        rareState().afterCommits.append((processingGoesOn(), body))
    }
}

extension Connection: DeferredWork {
    /// A flush put off past the loop turn's writes (see `flush`).
    func runDeferred() { flush(budgeted: false) }  // the loop counts the turn's writes
}

/// One part of a request's processing that ends after the call that took the
/// request has returned (`Connection.processingGoesOn`). Ending it twice is
/// harmless; the mailbox takes the next frame when the last part ends.
final class Processing {
    /// Strong until it ends, which keeps the connection alive no longer than
    /// the work it waits for. Weak would give every connection a side table
    /// for life (32 bytes) and send every retain of it down the runtime's slow path.
    private var connection: Connection?

    fileprivate init(_ c: Connection) { connection = c }

    func end() {
        guard let c = connection else { return }
        connection = nil
        c.processingEnded()
    }
}
