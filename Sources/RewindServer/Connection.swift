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
/// slow, and it is closed (`bye` `slow`) after the loop turn (`closeSoon`).
final class Connection {
    // (The output's state is used by Connection+Output.swift: one type in two files.)
    // What a push and a flush touch come first, in one or two cache lines
    // (stored properties are laid out in this order): a broadcast touches
    // every subscriber's, and the rest of the object is hundreds of bytes.
    // Only the loop's thread touches them: no dynamic exclusivity checks
    // (`swift_beginAccess` on each access) on the broadcast path.
    let stream: TCPStream
    /// The server it belongs to, seen only as what a connection may ask of it.
    unowned let host: any ConnectionHost
    /// What is written next, in order: everything queued ahead of a streamed reply.
    @exclusivity(unchecked) var output: [SharedBytes] = []
    /// Queued, streamed (estimated) and handed to libuv but not yet written.
    @exclusivity(unchecked) var outputBytes = 0
    @exclusivity(unchecked) var isDirty = false
    @exclusivity(unchecked) var isClosed = false
    @exclusivity(unchecked) var streamStarted = false
    /// A streamed reply and everything queued behind it, moved to `output`
    /// as it is produced (empty but while a large reply is being sent).
    @exclusivity(unchecked) var behind: [Outgoing] = []
    // (Read for every subscriber on each event: `promptStateMayHaveChanged`.)
    var user: (id: Int64, name: String)?
    /// `--max-output-bytes`, read on each push.
    let maxOutputBytes: Int
    /// Where pushes are counted (`--metrics`; nil: they are not).
    let counts: LoopCounts?
    @exclusivity(unchecked) var writing = 0
    /// Since when `outputBytes` has been past the bound (nil: it is not).
    @exclusivity(unchecked) var overBoundSince: UInt64?

    let id: Int
    /// What the connection speaks, known from its first bytes (`Connection+Web.swift`).
    enum Mode { case detecting, lines, http, webSocket }
    var mode = Mode.detecting
    /// Bytes on the wire ↔ messages: NDJSON lines until a WebSocket upgrade replaces it.
    var transport: Transport
    /// The first bytes (or an HTTP request head) while `mode` is `.detecting` or `.http`.
    var head: [UInt8] = []
    /// "address:port" of the client: the socket's peer, or the client a
    /// trusted load balancer's PROXY header names (`ProxyHeader`).
    private(set) var peer: String
    /// Bytes of a PROXY header still being read (nil: none expected, or read).
    private var proxyPrefix: [UInt8]?
    let connectedAt: UInt64
    /// When the last complete line arrived (the idle timer counts lines, not bytes).
    var lastHeard: UInt64

    /// Set by `closeSoon`: what the `bye` will say.
    var closingSoon: (reason: String, retry: Bool, message: String)?

    // Session (and `user`, above)
    var clientID: String?
    /// Wall-clock time of its `hello` (ms): a take-over announced by another instance closes only older connections.
    var helloAt: Int64 = 0
    var openDocuments: Set<String> = []
    /// Supported locale for titles (`Titles.locale`).
    var locale = "en"
    /// Per document: the explicit undo group this terminal holds open.
    var groups: [String: TerminalGroup] = [:]
    /// The history this terminal is scrubbing through (one document at a time; `Scrub.swift`).
    var scrub: ScrubSession?
    /// Peeked documents `pop` and `preview_action` may act on (`QuickActions/Previews.swift`).
    var previews = PreviewShelf()
    /// Per document: the last `prompt_state` pushed, to push only changes.
    var promptStates: [String: UndoPromptState] = [:]
    /// hello options (PROTOCOL.md): shake to undo, error prompts, gesture bindings.
    var shakeToEdit = true
    var errorPrompts = false
    var gestures = Connection.defaultGestures
    static let defaultGestures = ["two_finger_tap": "undo", "three_finger_tap": "redo"]
    /// The session's pasteboard (`copy` / `paste` on the chain).
    var clipboard: [Unicode.Scalar] = []

    // Input
    /// Parts of the request taken last still being processed (`Processing`): the mailbox waits for them.
    private var processing = 0
    private var pumping = false
    /// In the server's list of connections to continue on the next loop turn.
    var continuesNextTurn = false
    /// Edits sent and not yet answered: past the limit, the next frames wait.
    private(set) var commitsInFlight = 0
    private var afterCommits: [(processing: Processing, body: () -> Void)] = []
    var requests: TokenBucket
    var badFramesInARow = 0
    /// Counted in `Server.admission` (`Admission.handshakesPerAddress`, until hello succeeds or it ends).
    var countedHandshake = false
    /// Refused at the door (too many handshakes from its address), to be told
    /// so in its own protocol once its first bytes show which (`take`), or by
    /// `bye` if it says nothing until `until` (`Server.sweep`).
    var refusal: (reason: String, message: String, until: UInt64)?
    /// Since when an incomplete line has been held (nil: none).
    private(set) var partialSince: UInt64?
    /// Bytes of the incomplete line as last counted in `Server.partialBytes`.
    var partialCounted = 0

    // Output
    enum Outgoing {
        case bytes(SharedBytes)
        case stream(ReplyStream)
    }
    // (the output's state is at the top)

    static let sliceBytes = 256 << 10

    /// The server's settings, shared by every connection (one reference each).
    let settings: ConnectionSettings

    init(id: Int, stream: TCPStream, host: any ConnectionHost, settings: ConnectionSettings) {
        self.id = id
        self.stream = stream
        self.host = host
        self.settings = settings
        maxOutputBytes = settings.config.maxOutputBytes
        counts = settings.metrics?.counts
        transport = LineTransport(maxFrameBytes: settings.config.limits.maxFrameBytes)
        peer = stream.peer
        connectedAt = host.now
        lastHeard = connectedAt
        requests = TokenBucket(rate: settings.config.requestsPerSecond, burst: settings.config.requestBurst, now: connectedAt)
    }

    var label: String { "\(user?.name ?? "-")/\(clientID ?? "-")@\(peer)" }

    /// The peer's address without its port (limits per address count this).
    var address: String { peer.lastIndex(of: ":").map { String(peer[..<$0]) } ?? peer }

    func start() {
        // Held strongly until the stream's handle is closed (see `onQueuedWritten`).
        stream.onQueuedWritten = { [self] bytes, ok in written(bytes, ok: ok) }
        stream.startReading { [unowned self] data in
            guard let data else {
                self.host.connectionEnded(self, reason: "closed by peer")
                return
            }
            if self.proxyPrefix != nil { return self.readProxyHeader(Array(data)) }
            self.take(data)
        }
    }

    /// From a trusted load balancer: the connection's first bytes are a PROXY
    /// header; admission (per address) waits for it (`Server.proxyHeaderRead`).
    func expectProxyHeader() { proxyPrefix = [] }

    private func readProxyHeader(_ data: [UInt8]) {
        proxyPrefix! += data
        switch ProxyHeader.parse(proxyPrefix!) {
        case .needMore:
            guard proxyPrefix!.count < ProxyHeader.maxLength else { return proxyHeaderFailed("PROXY header too long") }
        case let .invalid(why):
            proxyHeaderFailed(why)
        case let .header(source, length):
            let rest = Array(proxyPrefix![length...])
            proxyPrefix = nil
            if let source { peer = source }
            host.proxyHeaderRead(self)
            rest.withUnsafeBytes { take($0) }
        }
    }

    private func proxyHeaderFailed(_ why: String) {
        proxyPrefix = nil
        settings.logger.warning("bad PROXY header from a trusted load balancer", metadata: ["peer": "\(peer)", "why": "\(why)"])
        close(reason: "bad_frames", retry: false, message: "\(why) (this address must send a PROXY protocol header first: --proxy-protocol-from)")
    }

    // MARK: Input

    /// Frames may be dispatched now (see the type's comment).
    private var mayDispatch: Bool {
        processing == 0 && closingSoon == nil && outputBytes < maxOutputBytes && commitsInFlight < settings.config.maxCommitsInFlight
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
            guard let frame = transport.next() else { return }
            served += 1
            lastHeard = host.now
            host.handle(frame, from: self)
        }
    }

    private func afterPump() {
        // Read only when everything complete has been taken: the rest waits in the kernel.
        let waiting = transport.bufferedBytes > 0 && !transport.holdsPartial
        if mayDispatch && !waiting { stream.resumeReading() } else { stream.pauseReading() }
        partialSince = transport.holdsPartial ? (partialSince ?? host.now) : nil
        host.partialLineChanged(self, to: transport.partialBytes)
    }

    /// The request being processed goes on after the current call returns:
    /// the next frame waits until the `Processing` returned ends.
    func processingGoesOn() -> Processing {
        processing += 1
        return Processing(self)
    }

    fileprivate func processingEnded() {
        processing -= 1
        if processing == 0 { pump() }
    }

    /// `reply` for an edit handed to a document: the edit counts as in flight
    /// (`maxCommitsInFlight`, `afterOwnCommits`) from now until it is answered.
    /// The one place the count goes up and down.
    func committing(_ reply: @escaping DocumentRuntime.Reply) -> DocumentRuntime.Reply {
        commitsInFlight += 1
        return { [self] result in
            self.commitAnswered()
            reply(result)
        }
    }

    /// An edit was answered: the frames waiting behind the in-flight limit may go.
    private func commitAnswered() {
        commitsInFlight -= 1
        if commitsInFlight == 0 && !afterCommits.isEmpty {
            let waiting = afterCommits
            afterCommits = []
            for w in waiting {
                w.body()
                w.processing.end()
            }
            return
        }
        if commitsInFlight == settings.config.maxCommitsInFlight - 1 { pump() }
    }

    /// Runs `body` once every edit this connection sent before (submits,
    /// undos, redos, chain edits, restores) has its answer, the connection's
    /// later frames waiting meanwhile: a `peek` or `scrub` pasted behind
    /// submits sees them in the log (which it reads), not only in memory.
    func afterOwnCommits(_ body: @escaping () -> Void) {
        guard commitsInFlight > 0 else { return body() }
        afterCommits.append((processingGoesOn(), body))
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
    private weak var connection: Connection?

    fileprivate init(_ c: Connection) { connection = c }

    func end() {
        guard let c = connection else { return }
        connection = nil
        c.processingEnded()
    }
}
