import Logging
import RewindCore
import RewindLoop

/// What runs when a prompt is answered: the chosen action, the terminal, and
/// the `respond` to answer — none when the prompt is cancelled (every
/// terminal holding it went, or closed its document): then it runs with the
/// cancel action's id.
typealias PromptAnswer = (_ action: String, _ c: Session, _ r: Request?) -> Void

/// Prompts carried out: who holds which is `PromptBoard`'s (core) to decide;
/// here its effects become pushes, and answers run. It owns the board and
/// the answers; any part of the server presents a prompt with `present` and
/// never needs to know what the terminal shows now.
final class PromptCenter {
    private var board = PromptBoard()
    /// What runs when each held prompt is answered or cancelled, by id.
    private var answers: [String: PromptAnswer] = [:]
    private let sessions: Sessions
    private let logger: Logger
    /// The prompts `c` shows changed: its `prompt_state` on each open document may have too.
    var onPresentedChanged: (Session) -> Void = { _ in }

    init(sessions: Sessions, logger: Logger) {
        self.sessions = sessions
        self.logger = logger
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
        carryOut(board.dismiss(id), leaving: nil)
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
        dismiss(id)
        answer(action, c, r)
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
