import Logging
import RewindCore
import RewindLoop

/// An explicit group a terminal holds open with `begin_group` (NSUndoManager's
/// grouping level). Only the outermost level's end is recorded in the log.
struct TerminalGroup {
    let id: String
    var level: Int
    var action: String?
    var selectionBefore: Selection?
}

/// One terminal's TCP connection: frames in, replies and pushes out.
///
/// Output is queued during a loop turn and written once per turn (the server
/// flushes dirty connections just before the loop sleeps), so a burst of
/// events costs one write per terminal. Pushes are bounded: past
/// `maxOutputBytes` of unsent pushes the terminal is too slow and is closed,
/// so it never stalls others or grows memory without bound. Replies are not
/// counted against that bound: a large `open` reply is the terminal's own
/// request, not a backlog.
final class Connection {
    let id: Int
    let stream: TCPStream
    unowned let server: Server
    var decoder: FrameDecoder
    let peer: String
    let connectedAt: UInt64
    var lastHeard: UInt64

    // Session
    var user: (id: Int64, name: String)?
    var clientID: String?
    var authenticating = false
    /// Frames that arrived while `hello` was being checked.
    var deferred: [FrameDecoder.Frame] = []
    var openDocuments: Set<String> = []
    /// Documents with an `open` under way: requests sent right behind it
    /// (pasted or pipelined) count them as open, and run after it.
    var opening: [String: Int] = [:]
    /// Supported locale for titles (`Titles.locale`).
    var locale = "en"
    /// Per document: the explicit undo group this terminal holds open.
    var groups: [String: TerminalGroup] = [:]
    /// Per document: the last `prompt_state` pushed, to push only changes.
    var promptStates: [String: JSON] = [:]
    /// What this terminal is shown, per level (ids of `Server.prompts`).
    var prompts = PromptQueue()
    /// hello options (PROTOCOL.md): shake to undo, error prompts, gesture bindings.
    var shakeToEdit = true
    var errorPrompts = false
    var gestures = Connection.defaultGestures
    static let defaultGestures = ["two_finger_tap": "undo", "three_finger_tap": "redo"]
    /// `motion` requests still looking at their document, and `respond`s sent
    /// right behind them for a prompt not presented yet: they run once the
    /// shakes are done (a pasted session can answer "p1" before it exists).
    var shakesInFlight = 0
    var respondsWaiting: [Request] = []
    /// The session's pasteboard (`copy` / `paste` on the chain).
    var clipboard: [Unicode.Scalar] = []

    private var output: [SharedBytes] = []
    private var outputPushBytes = 0
    /// Push bytes queued or handed to libuv and not yet written.
    private var pushBytesOutstanding = 0
    private(set) var isDirty = false
    private(set) var isClosed = false
    var badFramesInARow = 0

    init(id: Int, stream: TCPStream, server: Server) {
        self.id = id
        self.stream = stream
        self.server = server
        decoder = FrameDecoder(maxFrameBytes: server.config.limits.maxFrameBytes)
        peer = stream.peer
        connectedAt = server.loop.now
        lastHeard = connectedAt
    }

    var label: String { "\(user?.name ?? "-")/\(clientID ?? "-")@\(peer)" }

    func start() {
        stream.startReading { [unowned self] data in
            guard let data else {
                self.server.connectionEnded(self, reason: "closed by peer")
                return
            }
            self.lastHeard = self.server.loop.now
            self.decoder.feed(data) { frame in
                guard !self.isClosed else { return }
                self.server.handle(frame, from: self)
            }
        }
    }

    // MARK: Output

    /// Answers `r` with an error; a request rejected for its content may also
    /// present an error prompt, when the terminal asked for those at hello.
    func fail(_ r: Request, _ e: RewindError) {
        reply(Message.error(r.id, e))
        if errorPrompts && Connection.promptedErrors.contains(e.code) { server.presentErrorPrompt(e, for: r, to: self) }
    }

    /// Errors about what a request asked for (not framing, not the server's state).
    static let promptedErrors: Set<ErrorCode> = [.badRequest, .notFound, .conflict, .version, .forbidden, .tooLarge]

    func reply(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        output.append(SharedBytes(bytes))
        markDirty()
    }

    /// Queues a push; the same bytes object may go to many connections.
    func push(_ bytes: SharedBytes) {
        guard !isClosed else { return }
        if pushBytesOutstanding + bytes.count > server.config.maxOutputBytes {
            server.logger.warning("closing slow terminal", metadata: ["conn": "\(label)", "unsent": "\(pushBytesOutstanding)"])
            close(reason: "slow", retry: true,
                  message: "more than \(server.config.maxOutputBytes) bytes of pushes unread; reconnect and `open` with `since` to catch up")
            return
        }
        output.append(bytes)
        outputPushBytes += bytes.count
        pushBytesOutstanding += bytes.count
        markDirty()
    }

    private func markDirty() {
        if !isDirty {
            isDirty = true
            server.dirty.append(self)
        }
    }

    /// Writes everything queued, in one write.
    func flush() {
        isDirty = false
        guard !output.isEmpty, !stream.isClosed else { return }
        let chunks = output, pushBytes = outputPushBytes
        output = []
        outputPushBytes = 0
        stream.write(chunks) { [weak self] _ in self?.pushBytesOutstanding -= pushBytes }
    }

    /// Says `bye` and closes once it is written.
    func close(reason: String, retry: Bool, message: String) {
        guard !isClosed else { return }
        output.append(SharedBytes(Message.bye(reason: reason, retry: retry, message: message)))
        flush()
        isClosed = true
        stream.close()
        server.connectionEnded(self, reason: reason)
        // A peer that stops reading would keep the shutdown (and its unsent
        // bytes) pending forever: close hard after a grace period.
        server.closeHardLater(stream)
    }

    /// Closes without a word (the peer is gone).
    func drop() {
        guard !isClosed else { return }
        isClosed = true
        output = []
        stream.close(now: true)
    }
}
