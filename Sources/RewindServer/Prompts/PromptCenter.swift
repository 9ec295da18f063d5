import RewindCore
import RewindLoop

/// What runs when a prompt is answered: the chosen action, the terminal, and
/// the `respond` to answer — none when the prompt is cancelled (every
/// terminal holding it went, or closed its document): then it runs with the
/// cancel action's id.
typealias PromptAnswer = (_ action: String, _ c: Connection, _ r: Request?) -> Void

/// Prompts carried out: who holds which is `PromptBoard`'s (core) to decide;
/// here its effects become pushes, and answers run. Any part of the server
/// presents one with `present` and never needs to know what the terminal shows now.
extension Server {
    func newPromptID(doc: String?) -> String { promptBoard.newID(doc: doc) }

    /// Presents `prompt` to each of `terminals` (shown where its level is free,
    /// else waiting); `answer` runs when it is answered or cancelled. All or
    /// nothing: a full queue on any of them refuses it (`rate_limited`).
    func present(_ prompt: Prompt, doc: String?, to terminals: [Connection], answer: @escaping PromptAnswer) throws(RewindError) {
        let effects = try promptBoard.present(prompt, doc: doc, to: terminals.filter { !$0.isClosed }.map(\.id))
        guard promptBoard.held[prompt.id] != nil else { return }
        promptAnswers[prompt.id] = answer
        carryOut(effects, leaving: nil)
    }

    /// Takes a prompt away everywhere: `dismiss` where it was shown, and the
    /// next prompt waiting at that level is shown in its place.
    func dismiss(_ id: String) {
        promptAnswers[id] = nil
        carryOut(promptBoard.dismiss(id), leaving: nil)
    }

    /// A terminal that goes (or closes `doc`) loses what it showed: prompts no
    /// other terminal holds are cancelled (their answer runs with the cancel action).
    func cancelPrompts(of c: Connection, doc: String?) {
        carryOut(promptBoard.leave(c.id, doc: doc, connected: !c.isClosed), leaving: c)
    }

    private func carryOut(_ effects: [PromptBoard.Effect], leaving: Connection?) {
        for effect in effects {
            switch effect {
            case let .show(id, t):
                guard let c = sessions.connection(t), let h = promptBoard.held[id] else { continue }
                c.push(SharedBytes(Message.line(.obj([("push", "prompt"), ("doc", h.doc.map { .string($0) }), ("prompt", h.prompt.json)]))))
            case let .dismiss(id, t):
                sessions.connection(t)?.push(SharedBytes(Message.push("dismiss", [("prompt", .string(id))])))
            case let .presentedChanged(t):
                guard let c = sessions.connection(t), !c.isClosed else { continue }
                for doc in c.openDocuments {
                    if let d = existingDocument(doc) { pushPromptState(d, to: c) }
                }
            case let .cancel(id, action, by):
                guard let c = leaving ?? sessions.connection(by) else { continue }
                promptAnswers.removeValue(forKey: id)?(action, c, nil)
            }
        }
    }

    /// The prompts `c` shows now that concern `doc` (or no document in particular).
    func presentedPrompts(_ c: Connection, doc: String) -> [String] { promptBoard.presented(c.id, doc: doc) }

    // MARK: Requests

    /// `respond {prompt, action}`: the prompt is dismissed everywhere it was
    /// shown (so it cannot be answered twice), then the action's handler runs
    /// and its result is the reply.
    func respond(_ r: Request, _ c: Connection) throws(RewindError) {
        let id = try r.string("prompt", maxBytes: 64)
        let action = try r.string("action", maxBytes: 64)
        guard let h = promptBoard.held[id], promptBoard.queue(of: c.id).isPresented(id), let answer = promptAnswers[id] else {
            throw .notFound("respond: no prompt \"\(id)\" is shown on this terminal", details: ["prompt": .string(id)])
        }
        guard h.prompt.action(action) != nil else {
            throw .badRequest("respond: prompt \"\(id)\" has no action \"\(action)\"",
                              details: ["actions": .array(h.prompt.actions.map { .string($0.id) })])
        }
        dismiss(id)
        answer(action, c, r)
    }

    /// An error prompt for a request rejected for its content (hello `error_prompts: true`).
    func presentErrorPrompt(_ e: RewindError, for r: Request, to c: Connection) {
        let doc = r.body["doc"]?.stringValue.flatMap { c.openDocuments.contains($0) ? $0 : nil }
        let prompt = UndoPrompts.error(id: newPromptID(doc: doc), e, request: r.type, re: r.id, locale: c.locale)
        do throws(RewindError) {
            try present(prompt, doc: doc, to: [c]) { _, c, r in if let r { c.reply(Message.reply(r.id)) } }
        } catch {
            logger.debug("error prompt not shown", metadata: ["conn": "\(c.label)", "error": "\(error)"])
        }
    }
}
