import Logging
import RewindCore
import RewindLoop
import RewindStore

/// What runs when a prompt is answered: the chosen action, the terminal, and
/// the `respond` to answer — none when the prompt is cancelled (every
/// terminal holding it went, or closed its document): then it runs with the
/// cancel action's id.
typealias PromptAnswer = (_ action: String, _ c: Session, _ r: Request?) -> Void

/// Prompts carried out: who holds which is `PromptBoard`'s (core) to decide;
/// here its effects become pushes, and answers run. It owns the board and
/// the answers; any part of the server presents a prompt with `present` and
/// never needs to know what the terminal shows now.
///
/// Undo prompts (a shake's, a conflict's) are also kept in PostgreSQL
/// (`presentStored`, schema/024) until answered, cancelled or expired: a
/// terminal that opens the document again, on any instance, is shown them
/// again (`reshow`), and the first answer anywhere is the one carried out
/// (`respond` takes the row before the answer runs; the others are told
/// through `rewind_prompts` and take the prompt away). A terminal whose
/// connection is lost keeps its stored prompts for when it comes back; one
/// that closes the document cancels them.
final class PromptCenter {
    /// Error prompts are numbered here (`DOC:e1`, `e1`); undo prompts by PostgreSQL (`DOC:p1`).
    private var board = PromptBoard(idLetter: "e")
    /// What runs when each held prompt is answered or cancelled, by id.
    private var answers: [String: PromptAnswer] = [:]
    /// The held prompts that are rows in PostgreSQL: their document, when they expire (monotonic ms), their cause.
    private var stored: [String: (doc: String, expires: UInt64, cause: PromptCause)] = [:]
    /// Stored prompts that ended lately (answered or cancelled, here or elsewhere), by when: not shown again.
    private var recentlyEnded: [String: UInt64] = [:]
    private let sessions: Sessions
    private let store: EventStore
    private let logger: Logger
    private let instance: Int32
    private let clock: () -> UInt64
    /// How long a stored prompt stays open, in seconds (`--prompt-ttl`).
    let ttl: Double
    /// The prompts `c` shows changed: its `prompt_state` on each open document may have too.
    var onPresentedChanged: (Session) -> Void = { _ in }
    /// What answering a stored prompt about `cause` in `d` does (given by the server: shake and undo build them).
    var answering: (_ cause: PromptCause, _ d: DocumentRuntime) -> PromptAnswer = { _, _ in { _, _, _ in } }
    /// A stored prompt of `doc` was given back: the terminals here with `doc` open look for theirs (`reshow`).
    var onGivenBack: (_ doc: String) -> Void = { _ in }
    /// The runtime of a loaded document (given by the server).
    var documentOf: (_ doc: String) -> DocumentRuntime? = { _ in nil }
    /// The groups on top of `c`'s stacks in `d` and `scope` now: whether a stored prompt's cause still stands.
    var tops: (_ c: Session, _ d: DocumentRuntime, _ scope: Key?) -> (undo: String?, redo: String?) = { _, _, _ in (nil, nil) }

    init(sessions: Sessions, store: EventStore, logger: Logger, instance: Int32, ttl: Double, clock: @escaping () -> UInt64) {
        self.sessions = sessions
        self.store = store
        self.logger = logger
        self.instance = instance
        self.ttl = ttl
        self.clock = clock
    }

    func newID(doc: String?) -> String { board.newID(doc: doc) }

    /// Presents `prompt` to each of `terminals` (shown where its level is free,
    /// else waiting); `answer` runs when it is answered or cancelled. All or
    /// nothing: a full queue on any of them refuses it (`rate_limited`).
    func present(_ prompt: Prompt, doc: String?, to terminals: [Session], answer: @escaping PromptAnswer) throws(RewindError) {
        let effects = try board.present(prompt, doc: doc, to: terminals.filter { !$0.isClosed }.map(\.id))
        guard board.held[prompt.id] != nil else { return }
        answers[prompt.id] = answer
        carryOut(effects, leaving: nil)
    }

    /// Takes a prompt away everywhere: `dismiss` where it was shown, and the
    /// next prompt waiting at that level is shown in its place.
    func dismiss(_ id: String) {
        answers[id] = nil
        stored[id] = nil
        carryOut(board.dismiss(id), leaving: nil)
    }

    // MARK: Stored prompts

    /// Stores a prompt about `cause` for `c` in `d`, then presents it to `c`
    /// (numbered by the database: `DOC:pN`; `build` makes it, by default from
    /// its cause); `done` gets it, or why not. The caller holds `c`'s next
    /// requests until then.
    func presentStored(_ cause: PromptCause, in d: DocumentRuntime, to c: Session, build: ((String) -> Prompt?)? = nil,
                       _ done: @escaping (Result<Prompt, RewindError>) -> Void)
    {
        store.storePrompt(doc: d.id, user: c.user.id, client: c.client, cause: cause, ttl: ttl) { [self] result in
            switch result {
            case let .failure(e):
                done(.failure(e))
            case let .success(id):
                guard let prompt = build?(id) ?? self.prompt(id, cause, in: d, for: c) else {
                    return done(.failure(RewindError(.internal, "prompt \(id): nothing to offer")))
                }
                do throws(RewindError) {
                    try self.showStored(prompt, cause: cause, in: d, to: c, expiresInMs: UInt64(self.ttl * 1000))
                    done(.success(prompt))
                } catch {
                    self.cancelStored(id)
                    done(.failure(error))
                }
            }
        }
    }

    private func prompt(_ id: String, _ cause: PromptCause, in d: DocumentRuntime, for c: Session) -> Prompt? {
        cause.prompt(id: id, locale: c.locale, userName: { d.current.userNames[$0] })
    }

    /// Shows a stored prompt to `c` (nothing if its connection went: the row waits for it).
    private func showStored(_ prompt: Prompt, cause: PromptCause, in d: DocumentRuntime, to c: Session, expiresInMs: UInt64) throws(RewindError) {
        guard !c.isClosed else { return }
        // Closed behind it (or the role lost): closing a document cancels its prompts.
        guard c.openDocuments.contains(d.id) else {
            throw .badRequest("document \"\(d.id)\" is no longer open on this terminal", details: ["doc": .string(d.id)])
        }
        try present(prompt, doc: d.id, to: [c], answer: answering(cause, d))
        if board.held[prompt.id] != nil { stored[prompt.id] = (d.id, clock() + expiresInMs, cause) }
    }

    private func cancelStored(_ id: String, action: String = Prompt.ActionID.cancel) {
        ended(id)
        store.answerPrompt(id, action: action, instance: instance) { _ in }
    }

    /// Prompt `id` ended (answered or cancelled, here or elsewhere): a stored
    /// row read just before must not bring it back (`reshow`).
    private func ended(_ id: String) { recentlyEnded[id] = clock() }

    /// `c` opened `d`: the prompts stored for it there (made on any instance,
    /// before any restart) are shown again, in its locale, if what they offer
    /// still stands; those whose cause is gone are cancelled.
    func reshow(_ c: Session, _ d: DocumentRuntime, isOpen: @escaping () -> Bool) {
        store.openPrompts(doc: d.id, user: c.user.id, client: c.client) { [self] result in
            guard case let .success(rows) = result, !c.isClosed else { return }
            guard isOpen() else {
                // Closed again before they came: closing cancels them.
                for row in rows where self.board.held[row.id] == nil { self.cancelStored(row.id) }
                return
            }
            for row in rows where self.board.held[row.id] == nil && self.recentlyEnded[row.id] == nil {
                let now = self.tops(c, d, row.cause.scope)
                let newerShake = row.cause.isShake && self.held(by: c, reason: "shake") != nil
                guard !newerShake, row.cause.stillStands(undoTop: now.undo, redoTop: now.redo),
                      let prompt = self.prompt(row.id, row.cause, in: d, for: c) else {
                    self.cancelStored(row.id)
                    continue
                }
                do throws(RewindError) {
                    try self.showStored(prompt, cause: row.cause, in: d, to: c, expiresInMs: UInt64(max(0, row.secondsLeft) * 1000))
                } catch {
                    self.logger.debug("stored prompt not shown again", metadata: ["prompt": "\(row.id)", "error": "\(error)"])
                }
            }
        }
    }

    /// `rewind_prompts`: prompt `id` was answered or cancelled (on any instance): taken away here.
    /// `+<id>`: an answer was given back (`releasePrompt`): its terminal, if here, is shown it again.
    func storedPromptNotice(_ payload: String) {
        guard payload.hasPrefix("+") else {
            ended(payload)
            if stored[payload] != nil { dismiss(payload) }
            return
        }
        let id = String(payload.dropFirst())
        recentlyEnded[id] = nil
        guard let p = id.range(of: ":p", options: .backwards) else { return }
        onGivenBack(String(id[..<p.lowerBound]))
    }

    /// Notices were missed (listening again): prompts shown here that ended meanwhile are taken away.
    func resync() {
        let ids = Array(stored.keys)
        guard !ids.isEmpty else { return }
        store.endedPrompts(ids) { [self] result in
            guard case let .success(gone) = result else { return }
            for id in gone {
                self.ended(id)
                if self.stored[id] != nil { self.dismiss(id) }
            }
        }
    }

    /// Stored prompts past their expiry are taken away; rows that ended an hour ago are deleted.
    func expire() {
        let now = clock()
        for (id, s) in stored where s.expires <= now { dismiss(id) }
        recentlyEnded = recentlyEnded.filter { now - $0.value < 60_000 }
        store.sweepPrompts { [logger] result in
            if case let .failure(e) = result { logger.debug("prompts not swept", metadata: ["error": "\(e)"]) }
        }
    }

    /// A terminal that goes (or closes `doc`) loses what it showed: prompts no
    /// other terminal holds are cancelled (their answer runs with the cancel action).
    func cancel(of c: Session, doc: String?) {
        carryOut(board.leave(c.id, doc: doc, connected: !c.isClosed), leaving: c)
    }

    /// The prompts `c` shows now that concern `doc` (or no document in particular).
    func presented(_ c: Session, doc: String) -> [String] { board.presented(c.id, doc: doc) }

    /// A prompt of `reason` that `c` holds (shown or waiting), if any.
    func held(by c: Session, reason: String) -> String? {
        board.queue(of: c.id).all.first { board.held[$0]?.prompt.reason == reason }
    }

    /// Prompt `id` as `c` shows it now, with what runs when it is answered (nil: `c` does not show it).
    func shown(_ id: String, on c: Session) -> (prompt: Prompt, answer: PromptAnswer)? {
        guard let h = board.held[id], board.queue(of: c.id).isPresented(id), let answer = answers[id] else { return nil }
        return (h.prompt, answer)
    }

    /// A document left memory: its prompts go with it.
    func forget(doc: String) { board.forget(doc: doc) }

    private func carryOut(_ effects: [PromptBoard.Effect], leaving: Session?) {
        for effect in effects {
            switch effect {
            case let .show(id, t):
                guard let c = sessions.session(t), let h = board.held[id] else { continue }
                c.push(SharedBytes(Push.prompt(doc: h.doc, h.prompt)))
            case let .dismiss(id, t):
                sessions.session(t)?.push(SharedBytes(Push.dismiss(prompt: id)))
            case let .presentedChanged(t):
                guard let c = sessions.session(t), !c.isClosed else { continue }
                onPresentedChanged(c)
            case let .cancel(id, action, by):
                // A stored prompt of a terminal whose connection is lost waits for it to come back; otherwise it is cancelled.
                if stored.removeValue(forKey: id) != nil, !(leaving?.isClosed ?? false) { cancelStored(id, action: action) }
                guard let c = leaving ?? sessions.session(by) else { continue }
                answers.removeValue(forKey: id)?(action, c, nil)
            }
        }
    }

    // MARK: Requests

    /// `respond {prompt, action}`: the prompt is dismissed everywhere it was
    /// shown (so it cannot be answered twice), then the action's handler runs
    /// and its result is the reply.
    func respond(_ r: Request, _ c: Session) throws(RewindError) {
        let id = try r.string("prompt", maxBytes: 64)
        let action = try r.string("action", maxBytes: 64)
        guard let (prompt, answer) = shown(id, on: c) else {
            throw .notFound("respond: no prompt \"\(id)\" is shown on this terminal", details: ["prompt": .string(id)])
        }
        guard prompt.action(action) != nil else {
            throw .badRequest("respond: prompt \"\(id)\" has no action \"\(action)\"",
                              details: ["actions": .array(prompt.actions.map { .string($0.id) })])
        }
        guard let held = stored[id] else {
            dismiss(id)
            return answer(action, c, r)
        }
        // Stored: the first answer on any instance counts. Taken away here at
        // once (not answered twice), carried out once PostgreSQL says it is this one.
        let processing = c.processingGoesOn()
        dismiss(id)
        ended(id)
        store.answerPrompt(id, action: action, instance: instance) { [self] result in
            defer { processing.end() }
            switch result {
            case .success(true):
                // Taken, but the terminal's connection went meanwhile (a takeover by another
                // instance, say): given back, to be shown where the terminal is now.
                guard !c.isClosed else {
                    self.recentlyEnded[id] = nil
                    return self.store.releasePrompt(id, instance: self.instance)
                }
                answer(action, c, r)
            case .success(false):
                c.fail(r, .notFound("respond: prompt \"\(id)\" was answered on another terminal, or expired", details: ["prompt": .string(id)]))
            case let .failure(e):
                // Not recorded: the prompt is shown again (it is still open in PostgreSQL, if it can be read).
                self.recentlyEnded[id] = nil
                if let d = self.documentOf(held.doc), !c.isClosed, let prompt = self.prompt(id, held.cause, in: d, for: c) {
                    try? self.showStored(prompt, cause: held.cause, in: d, to: c, expiresInMs: held.expires > self.clock() ? held.expires - self.clock() : 0)
                }
                c.fail(r, e)
            }
        }
    }

    /// An error prompt for a request rejected for its content (hello `error_prompts: true`).
    func presentError(_ e: RewindError, for r: Request, to c: Session) {
        let doc = r.body["doc"]?.stringValue.flatMap { c.openDocuments.contains($0) ? $0 : nil }
        let prompt = UndoPrompts.error(id: newID(doc: doc), e, request: r.type, re: r.id, locale: c.locale)
        do throws(RewindError) {
            try present(prompt, doc: doc, to: [c]) { _, c, r in if let r { c.reply(Message.reply(r.id)) } }
        } catch {
            logger.debug("error prompt not shown", metadata: ["conn": "\(c.label)", "error": "\(error)"])
        }
    }
}
