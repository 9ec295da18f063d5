import Logging
import RewindCore
import RewindLoop
import RewindStore

/// What the instances serving one database tell each other (SPEC section 9).
/// PostgreSQL is the only shared engine: the log carries the data, NOTIFY the news.
///
/// - `rewind_log` (sent by every claim of a head, in the commit's
///   transaction; schema/026): "<seq> <version> <doc>". An instance with the document
///   loaded reads the entries after its own head from the log
///   (`DocumentRuntime.logMoved`) and pushes them to its terminals.
/// - `rewind_presence` (sent here, batched per loop turn): a terminal's
///   presence as its own instance knows it, `{"i", "doc", "t", "user",
///   "client", "node", "selection"}` (empty: gone); `{"i", "ask": doc}` when
///   an instance loads a document and wants the others' presence in it. The
///   instance that serves a terminal is the only one that moves its caret
///   through edits, so every instance shows the same position.
/// - `rewind_access`: roles and tokens (`AccessControl`).
/// - `rewind_editors` (sent by the writers' append statements): "<user> <doc>", who
///   edited what, for quick actions (`QuickActions`).
///
/// Liveness: an instance is alive while it holds its lock (`Notifications`).
/// Every `sweepEvery` ms the live set is read; presence of instances that
/// are gone is removed, and groups their terminals held open are closed.
/// After the listening connection comes back, every loaded document reads
/// the log's head and asks for presence again (notices were missed).
///
/// - `rewind_prompts`: "<prompt id>", a stored undo prompt answered or
///   cancelled (`PromptCenter`): the instances showing it take it away.
///
/// What is not shared: the speculative state of commands in flight (each
/// instance's own, settled by the log's compare-and-set).
final class Cluster {
    private let notifications: Notifications
    private let loop: EventLoop
    private let logger: Logger
    /// The documents this instance has loaded, and one of them by id.
    private let loaded: () -> [DocumentRuntime]
    private let existing: (_ doc: String) -> DocumentRuntime?

    /// What news from the other instances asks of the rest of the server, carried out there (`Server`).
    enum Effect {
        /// A `rewind_editors` notice (quick actions) or a `rewind_access` notice (roles, tokens, erasures).
        case editorsNotice(String), accessNotice(String)
        /// A `rewind_prompts` notice: a stored prompt was answered or cancelled (its id), or given back (`+` and its id).
        case promptEnded(String)
        /// Notices were missed (listening again): roles and quick actions are read again.
        case resync
        /// Presence in `d` changed (another instance's terminal, or one gone): pushed to its terminals.
        case announce([PresenceBoard.Effect], in: DocumentRuntime)
        /// A terminal `(user, client)` said hello on another instance at `at`: an older connection of it here goes.
        case tookOver(user: Int64, client: String, at: Int64)
    }
    var onEffect: (Effect) -> Void = { _ in }
    let instance: Int32
    /// Presence notices waiting for the end of the loop turn, latest per terminal.
    private var outbox: [String: String] = [:]
    private var outboxOrder: [String] = []
    let sweepEvery: UInt64 = 10_000
    private var lastSweep: UInt64 = 0
    /// Another instance is alive (as of the last liveness read, or it spoke
    /// since). Alone, this instance sends nothing: a presence change would
    /// otherwise cost a NOTIFY that only comes back to itself. An instance that
    /// starts reads the live set at once, and speaks (`ask`, `took`) before it
    /// needs an answer, so the others learn of it without waiting for a sweep.
    private var othersAlive = false

    init(notifications: Notifications, loop: EventLoop, logger: Logger, instance: Int32,
         loaded: @escaping () -> [DocumentRuntime], existing: @escaping (_ doc: String) -> DocumentRuntime?) {
        self.notifications = notifications
        self.loop = loop
        self.logger = logger
        self.instance = instance
        self.loaded = loaded
        self.existing = existing
    }

    func stop() { flush() }

    // MARK: Notices in

    func notice(channel: String, payload: String) {
        switch channel {
        case "rewind_log": logNotice(payload)
        case "rewind_presence": presenceNotice(payload)
        case "rewind_editors": onEffect(.editorsNotice(payload))
        case "rewind_prompts": onEffect(.promptEnded(payload))
        default: onEffect(.accessNotice(payload))
        }
    }

    /// "<seq> <version> <doc>" (the doc last: it may hold spaces).
    /// One per commit of every instance, this one's included: split on the
    /// UTF-8 bytes (`split` on characters cost ~4,400 instructions a notice).
    private func logNotice(_ payload: String) {
        // Read where the string holds it: the `Substring`s and `String`s made
        // on the way were ~1,200 instructions a notice, one notice a commit.
        var text = payload
        let notice: (seq: Int64, doc: String)? = text.withUTF8 { u in
            guard let first = u.firstIndex(of: UInt8(ascii: " ")),
                  let seq = Bytes.decimal(UnsafeBufferPointer(rebasing: u[..<first])),
                  let second = u[(first + 1)...].firstIndex(of: UInt8(ascii: " "))  // after the version
            else { return nil }
            return (seq, String(decoding: UnsafeBufferPointer(rebasing: u[(second + 1)...]), as: UTF8.self))
        }
        guard let notice else {
            return logger.warning("malformed rewind_log notice", metadata: ["payload": "\(payload.prefix(200))"])
        }
        existing(notice.doc)?.logMoved(to: notice.seq)
    }

    /// Listening (re)started: whatever was announced meanwhile is read again.
    func listening() {
        onEffect(.resync)
        for d in loaded() { d.logMayHaveMoved() }
        readLiveness { [self] in
            for d in self.loaded() {
                self.ask(d)
                self.announceAll(d)
            }
        }
    }

    /// Reads the live set: whether this instance is alone, and which remote presence is gone.
    private func readLiveness(then: @escaping () -> Void = {}) {
        notifications.liveInstances { [self] result in
            guard case let .success(live) = result else { return }
            self.othersAlive = live.contains { $0 != self.instance }
            for d in self.loaded() where !d.presence.remote.isEmpty {
                self.onEffect(.announce(d.presence.dropRemote(notIn: live), in: d))
            }
            then()
        }
    }

    private func presenceNotice(_ payload: String) {
        guard let o = try? JSONParser.parse(payload, maxDepth: 8).objectValue, let from = o["i"]?.intValue else {
            return logger.warning("malformed rewind_presence notice", metadata: ["payload": "\(payload.prefix(200))"])
        }
        guard from != Int64(instance) else { return }  // our own, heard back
        othersAlive = true
        if let doc = o["ask"]?.stringValue {
            if let d = existing(doc) { announceAll(d) }
            return
        }
        if let user = o["took"]?.intValue, let client = o["client"]?.stringValue, let at = o["at"]?.intValue {
            // A terminal reconnected elsewhere (after a failover, often while its old
            // connection here is still half-open): the old one goes, as on one instance.
            // Only an older one: notices of two quick reconnects may cross (hosts' clocks are assumed close).
            onEffect(.tookOver(user: user, client: client, at: at))
            return
        }
        guard let doc = o["doc"]?.stringValue, let d = existing(doc), let t = o["t"]?.intValue,
              let user = o["user"]?.stringValue, let client = o["client"]?.stringValue
        else { return }
        let p = Presence(node: o["node"]?.stringValue.map { Key($0) }, selection: try? Selection.parse(o["selection"]))
        onEffect(.announce(d.presence.setRemote(instance: Int32(truncatingIfNeeded: from), terminal: t, user: user, client: client, p), in: d))
    }

    // MARK: Notices out

    /// `c`'s presence in `d` changed (or went): tell the other instances.
    func share(_ d: DocumentRuntime, _ c: Session, _ p: Presence) {
        let user = c.user, client = c.client
        let body = JSON.obj([("i", .int(Int64(instance))), ("doc", .string(d.id)), ("t", .int(Int64(c.id))), ("user", .string(user.name)),
                             ("client", .string(client)), ("node", p.node.map { .string($0.string) } ?? .null), ("selection", p.selection?.json)])
        enqueue(key: "\(d.id)\u{1F}\(c.id)", JSONWriter.string(body))
    }

    /// A connection here said `hello` as (`user`, `client`): one on another instance with the same pair is closed (`bye` `replaced`).
    func tookOver(user: Int64, client: String, at: Int64) {
        let body = JSON.obj([("i", .int(Int64(instance))), ("took", .int(user)), ("client", .string(client)), ("at", .int(at))])
        enqueue(key: "took\u{1F}\(user)\u{1F}\(client)", JSONWriter.string(body))
    }

    /// A document was loaded here: ask the others who is where in it.
    func ask(_ d: DocumentRuntime) {
        enqueue(key: "ask\u{1F}\(d.id)", JSONWriter.string(.obj([("i", .int(Int64(instance))), ("ask", .string(d.id))])))
    }

    private func announceAll(_ d: DocumentRuntime) {
        for (id, p) in d.presence.positions {
            if let c = d.subscribers[id] { share(d, c, p) }
        }
    }

    private func enqueue(key: String, _ payload: String) {
        guard othersAlive else { return }
        // A doc id and a selection are small; far below NOTIFY's 8000 bytes.
        if outbox.updateValue(payload, forKey: key) == nil { outboxOrder.append(key) }
    }

    /// Presence notices waiting go out (a phase of the loop turn's end: `EndOfTurnPhase.clusterNotices`).
    func flush() {
        guard !outboxOrder.isEmpty else { return }
        let payloads = outboxOrder.compactMap { outbox[$0] }
        outbox = [:]
        outboxOrder = []
        notifications.notify("rewind_presence", payloads)
    }

    // MARK: Liveness

    /// Called from the server's sweep (every second); acts every `sweepEvery` ms:
    /// reads the live set (one small query), drops presence of instances that
    /// are gone, and closes groups open in the log that no live terminal holds.
    func sweep(now: UInt64) {
        guard now - lastSweep >= sweepEvery, notifications.isListening else { return }
        lastSweep = now
        readLiveness { [self] in
            for d in self.loaded() where d.holdsGroupsOfOthers { d.closeOrphanedGroups(firstLoad: false) }
        }
    }
}
