import RewindCore

/// The protocol side of a client for one document, free of I/O: lines in
/// (`receive`), lines out (`takeOutgoing`), and `connected()`/`disconnected()`
/// from whatever carries them. `RewindClient` carries them over TCP; a test, or
/// an app with its own networking, can drive it directly.
///
/// It says `hello`, opens the document (with `since` after a reconnect, so
/// nothing is missed and nothing is applied twice), keeps `document` by
/// applying `events` through RewindCore, matches replies to requests by `re`,
/// and keeps what the server pushes: others' presence, this terminal's prompts
/// and its undo/redo titles. Edits, undo and the requests that depend on them
/// go out in the order they were made (see `Queued`).
public final class ClientSession {
    public struct Options: Sendable {
        public var user: String
        public var token: String
        public var doc: String
        /// The terminal's id; kept across reconnects so the server knows it is the same terminal.
        public var client: String
        public var locale: String?
        /// Where a signed token comes from (the app's backend: PROTOCOL.md, "Identity from
        /// the app"). When set, `token` is not used: `getToken` is asked for every
        /// `hello` (at start and after every reconnect, so after `bye` `token_expired` too)
        /// and on `token_expiring`, whose token goes out as `refresh`. Its answer is taken
        /// when the owner polls (`pollToken`; `RewindClient` does, every turn).
        public var getToken: (@Sendable () async throws -> String)?

        public init(user: String, token: String, doc: String, client: String, locale: String? = nil,
                    getToken: (@Sendable () async throws -> String)? = nil) {
            self.user = user; self.token = token; self.doc = doc; self.client = client; self.locale = locale
            self.getToken = getToken
        }
    }

    public enum Status: Sendable, Equatable {
        case connecting
        /// Said hello and has the document open: edits go out.
        case ready
        /// Lost the connection; the owner reconnects (a `bye` that allows it, a dropped socket).
        case disconnected(String)
        /// The server refused for good (a bad token, no such document, no access, `bye` without retry).
        case closed(ClientError)
    }

    /// What changed, for whoever draws.
    public enum Change: Sendable, Equatable {
        case status, document, presence, prompts, promptState
        /// A request failed; `request` is its type.
        case failed(request: String, ClientError)
    }

    public let options: Options
    public private(set) var status: Status = .disconnected("not connected yet")
    public internal(set) var document = LocalDocument()
    public internal(set) var loaded = false
    /// Others' terminals with the document open and focused, by client id.
    public internal(set) var presence: [String: PeerPresence] = [:]
    /// Prompts shown to this terminal, oldest first.
    public internal(set) var prompts: [PresentedPrompt] = []
    public internal(set) var promptState = PromptState()
    /// The node this terminal has focused (sent again after a reconnect).
    public private(set) var focused: Key?
    public var onChange: ((Change) -> Void)?

    private var outgoing: [[UInt8]] = []
    private var nextID: Int64 = 1
    private var waiting: [Int64: (type: String, done: (Result<JSONObject, ClientError>) -> Void)] = [:]
    private var queue: [Queued] = []
    /// An undo, redo or respond sent and not answered: edits wait for it.
    private var mutationsInFlight = 0
    private var selectionSent: LocalDocument.Selection?
    /// The name events and presence show for this user (hello's `name`): what tells its own events.
    var shownAs: String?
    /// An `open since` is under way: pushed events are in its pages, or after them.
    var catchingUp = false
    private var txCounter = 0
    private let txPrefix: String
    /// A token asked of `options.getToken`, not yet answered.
    private var tokenFetch: TokenFetch?

    /// What waits behind edits not yet sent. A `submit` stands for the next
    /// segment of buffered edits; a request goes when everything before it has.
    enum Queued {
        case submit
        case request(type: String, fields: [(String, JSON?)], mutates: Bool, done: ((Result<JSONObject, ClientError>) -> Void)?)
    }

    public init(options: Options) {
        self.options = options
        var g = SystemRandomNumberGenerator()
        txPrefix = "\(options.client)-\(String(g.next() & 0xFFFF_FFFF, radix: 36))"
    }

    // MARK: Transport side

    /// Lines to write, in order.
    public func takeOutgoing() -> [[UInt8]] {
        defer { outgoing = [] }
        return outgoing
    }

    public var hasOutgoing: Bool { !outgoing.isEmpty }

    /// A new connection is up: say hello (with a token from `getToken` when
    /// one is given: once it answers), then open the document.
    public func connected() {
        setStatus(.connecting)
        if let getToken = options.getToken {
            tokenFetch = TokenFetch(getToken, for: .hello)
            return
        }
        sayHello(token: options.token)
    }

    /// Whether a token asked of `getToken` is awaited: poll (`pollToken`) soon.
    public var awaitsToken: Bool { tokenFetch != nil }

    /// Takes `getToken`'s answer if it has come: says `hello` with it, or
    /// sends it as `refresh`. A `getToken` that fails before a hello leaves
    /// the session disconnected (the owner reconnects, with backoff, and
    /// asks again); one that fails before a refresh changes nothing (at
    /// `exp` the server says `bye` `token_expired`, and the reconnect asks again).
    public func pollToken() {
        guard let fetch = tokenFetch, let result = fetch.take() else { return }
        tokenFetch = nil
        switch (fetch.purpose, result) {
        case let (.hello, .success(token)): sayHello(token: token)
        case let (.hello, .failure(e)): setStatus(.disconnected(e.message))
        case let (.refresh, .success(token)): send("refresh", [("token", .string(token))])
        case (.refresh, .failure): break
        }
    }

    /// The server will end this session at its token's `exp` unless a new token comes.
    func tokenExpiring() {
        guard let getToken = options.getToken, tokenFetch == nil else { return }
        tokenFetch = TokenFetch(getToken, for: .refresh)
    }

    private func sayHello(token: String) {
        // A signed token names its user (`sub`): `user` is left out, as the protocol allows.
        var hello: [(String, JSON?)] = [("user", options.getToken == nil ? .string(options.user) : nil), ("token", .string(token)),
                                        ("client", .string(options.client))]
        if let l = options.locale { hello.append(("locale", .string(l))) }
        send("hello", hello) { [weak self] r in
            guard let self else { return }
            switch r {
            case let .success(reply):
                // Events and presence show this name (a signed token's `name`; else the user's own).
                self.shownAs = reply["name"]?.stringValue ?? self.options.user
                self.openDocument()
            case let .failure(e): self.fail(e)
            }
        }
    }

    /// The connection is gone. Replies still awaited fail; edits stay, to be sent again.
    public func disconnected(_ reason: String) {
        outgoing = []
        tokenFetch = nil  // a hello's token asked for a connection that is gone (asked again on the next)
        let failed = waiting.values
        waiting = [:]
        mutationsInFlight = 0
        catchingUp = false
        selectionSent = nil
        presence = [:]
        prompts = []
        for w in failed { w.done(.failure(.disconnected)) }
        if case .closed = status { return }
        setStatus(.disconnected(reason))
        onChange?(.presence)
        onChange?(.prompts)
    }

    /// One line from the server.
    public func receive(_ line: [UInt8]) {
        guard let o = (try? JSONParser.parse(line))?.objectValue else { return }
        if let re = o["re"]?.intValue {
            if o["shortcut"]?.boolValue == true { return }   // a launch shortcut's second reply: not ours
            guard let w = waiting.removeValue(forKey: re) else { return }
            w.done(o["ok"]?.boolValue == true ? .success(o) : .failure(ClientError(reply: o)))
        } else if let kind = o["push"]?.stringValue.flatMap(Push.Kind.init(rawValue:)) {
            handlePush(kind, o)  // a kind this version does not know is ignored (PROTOCOL.md: clients ignore what they do not know)
        }
    }

    // MARK: Requests

    /// Any request; `done` gets the reply (or `disconnected`). Sent at once:
    /// use it for requests that do not depend on this terminal's pending edits.
    public func send(_ type: String, _ fields: [(String, JSON?)], done: ((Result<JSONObject, ClientError>) -> Void)? = nil) {
        let id = nextID
        nextID += 1
        outgoing.append(Message.line(.obj([("id", .int(id)), ("type", .string(type))] + fields)))
        waiting[id] = (type, { [weak self] r in
            if case let .failure(e) = r, e.code != ClientError.disconnected.code { self?.onChange?(.failed(request: type, e)) }
            done?(r)
        })
    }

    /// Edits the document: shown in `document.view` at once, committed in order.
    public func edit(_ ops: [Op]) throws(RewindError) {
        let startsSegment: Bool
        if case .submit? = queue.last { startsSegment = false } else { startsSegment = true }
        try document.edit(ops, newSegment: startsSegment)
        if startsSegment { queue.append(.submit) }
        onChange?(.document)
        pump()
    }

    /// Moves this terminal's selection; others see it once pending edits are sent.
    public func select(_ selection: LocalDocument.Selection?) {
        document.selection = selection
        pump()
    }

    public func focus(_ node: Key) {
        focused = node
        document.selection = document.view[node].map { .init(node: node, start: $0.text.count, end: $0.text.count) }
        selectionSent = nil
        enqueue("focus", [("node", .string(node.string))], mutates: false)
    }

    public func undo() { enqueue("undo", [("tx", .string(newTx()))], mutates: true) }
    public func redo() { enqueue("redo", [("tx", .string(newTx()))], mutates: true) }
    public func shake() { enqueue("motion", [("motion", "shake")], mutates: false) }

    public func respond(prompt: String, action: String) {
        enqueue("respond", [("prompt", .string(prompt)), ("action", .string(action))], mutates: true, withDoc: false)
    }

    /// A request about the document that must see this terminal's earlier edits.
    public func enqueue(_ type: String, _ fields: [(String, JSON?)], mutates: Bool, withDoc: Bool = true,
                        done: ((Result<JSONObject, ClientError>) -> Void)? = nil)
    {
        let all = (withDoc ? [("doc", JSON.string(options.doc))] : []) + fields
        queue.append(.request(type: type, fields: all, mutates: mutates, done: done))
        pump()
    }

    private func newTx() -> String {
        txCounter += 1
        return "\(txPrefix)-\(txCounter)"
    }
}

extension ClientSession {
    /// Sends what may go now, in order: a submit when none is in flight and
    /// no undo is unanswered; a request once everything before it has gone.
    func pump() {
        guard status == .ready else { return }
        while let first = queue.first {
            switch first {
            case .submit:
                guard mutationsInFlight == 0, document.inFlight == nil else { return }
                queue.removeFirst()
                if let s = document.nextSubmit(tx: newTx()) { sendSubmit(s) }
            case let .request(type, fields, mutates, done):
                if mutates && (document.inFlight != nil || mutationsInFlight > 0) { return }
                queue.removeFirst()
                if mutates { mutationsInFlight += 1 }
                send(type, fields) { [weak self] r in
                    guard let self else { return }
                    if mutates { self.mutationsInFlight -= 1 }
                    if case let .success(o) = r, type == "undo" || type == "redo" || type == "respond" { self.adoptSelection(o) }
                    done?(r)
                    self.pump()
                }
            }
        }
        if document.selection != selectionSent, let s = document.selection, document.view[s.node] != nil {
            selectionSent = s
            send("select", [("doc", .string(options.doc)), ("node", .string(s.node.string)),
                            ("start", .int(Int64(s.start))), ("end", .int(Int64(s.end)))])
        }
    }

    func sendSubmit(_ s: LocalDocument.InFlight) {
        send("submit", [("doc", .string(options.doc)), ("tx", .string(s.tx)), ("base", .int(s.base)),
                        ("ops", Op.encodeList(s.ops))]) { [weak self] r in
            guard let self else { return }
            switch r {
            case .success:
                // The events push comes before the reply; if it did not, catch up.
                if self.document.inFlight?.tx == s.tx { self.catchUp() }
            case .failure(let e) where e.code == ClientError.disconnected.code:
                return   // sent again after the reconnect, unless the catch-up shows it committed
            case .failure:
                self.document.dropPending()
                self.queue.removeAll { if case .submit = $0 { return true }; return false }
                self.onChange?(.document)
            }
            self.pump()
        }
    }

    /// An undo or redo hands the terminal's selection back: the caret goes there.
    private func adoptSelection(_ o: JSONObject) {
        guard let s = o["selection"]?.objectValue, let node = s["node"]?.stringValue,
              let start = s["start"]?.intValue else { return }
        let sel = LocalDocument.Selection(node: Key(node), start: Int(start), end: Int(s["end"]?.intValue ?? start))
        document.selection = sel
        selectionSent = sel
        focused = Key(node)
        onChange?(.document)
    }

    func setStatus(_ s: Status) {
        guard s != status else { return }
        status = s
        onChange?(.status)
    }

    func fail(_ e: ClientError) {
        if e.code == ClientError.disconnected.code { return }   // the owner reconnects
        if e.code == "unavailable" { return setStatus(.disconnected("the server is unavailable: \(e.message)")) }
        setStatus(.closed(e))
    }
}
