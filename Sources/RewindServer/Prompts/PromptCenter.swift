import RewindCore
import RewindLoop

/// A prompt while some terminal shows it or has it waiting, with what runs
/// when it is answered. Any part of the server presents one with
/// `Server.present` and never needs to know what the terminal shows now.
final class LivePrompt {
    let prompt: Prompt
    /// The document it is about, if any (its `prompt_state.presented` lists it).
    let doc: String?
    /// Connections that show it or have it waiting.
    var terminals: [Int: Connection] = [:]
    /// Runs the chosen action and answers the `respond` request. When the
    /// prompt is cancelled (every terminal holding it went, or closed its
    /// document) it runs with the cancel action's id and no request to answer.
    let answer: (_ action: String, _ c: Connection, _ r: Request?) -> Void

    init(prompt: Prompt, doc: String?, answer: @escaping (_ action: String, _ c: Connection, _ r: Request?) -> Void) {
        self.prompt = prompt
        self.doc = doc
        self.answer = answer
    }
}

extension Server {
    func newPromptID() -> String {
        defer { nextPromptNumber += 1 }
        return "p\(nextPromptNumber)"
    }

    /// Presents `live` to each of `terminals`: shown at once where its level
    /// is free, else queued behind what is shown. All or nothing: if any
    /// terminal's queue at that level is full, none gets it (`rate_limited`).
    func present(_ live: LivePrompt, to terminals: [Connection]) throws(RewindError) {
        let id = live.prompt.id
        var done: [Connection] = []
        var shown: [Connection] = []
        for c in terminals where !c.isClosed {
            do throws(RewindError) {
                if try c.prompts.present(id, at: live.prompt.level) { shown.append(c) }
                done.append(c)
            } catch {
                for d in done { d.prompts.remove(id) }
                throw error
            }
        }
        guard !done.isEmpty else { return }
        prompts[id] = live
        for c in done { live.terminals[c.id] = c }
        for c in shown { show(live, on: c) }
    }

    private func show(_ live: LivePrompt, on c: Connection) {
        c.push(SharedBytes(Message.line(.obj([("push", "prompt"), ("doc", live.doc.map { .string($0) }), ("prompt", live.prompt.json)]))))
        presentedChanged(c)
    }

    /// Takes a prompt away everywhere: `dismiss` where it was shown, and the
    /// next prompt waiting at that level is shown in its place.
    func dismiss(_ id: String) {
        guard let live = prompts.removeValue(forKey: id) else { return }
        for c in live.terminals.values { take(id, from: c) }
        live.terminals = [:]
    }

    private func take(_ id: String, from c: Connection) {
        let (wasShown, next) = c.prompts.remove(id)
        guard wasShown else { return }
        c.push(SharedBytes(Message.push("dismiss", [("prompt", .string(id))])))
        if let next, let nextLive = prompts[next] { show(nextLive, on: c) } else { presentedChanged(c) }
    }

    /// A terminal that goes (or closes `doc`) loses what it showed: prompts no
    /// other terminal holds are cancelled (their cancel handler runs).
    func cancelPrompts(of c: Connection, doc: String?) {
        // Waiting ones first, so that taking a shown one away does not flash
        // (push, then dismiss) a waiting one that is going too.
        for id in c.prompts.all.reversed() {
            guard let live = prompts[id], doc == nil || live.doc == doc else { continue }
            live.terminals[c.id] = nil
            if !c.isClosed { take(id, from: c) } else { c.prompts.remove(id) }
            if live.terminals.isEmpty {
                prompts[id] = nil
                let cancel = live.prompt.actions.first { $0.style == .cancel }?.id ?? Prompt.ActionID.cancel
                live.answer(cancel, c, nil)
            }
        }
    }

    /// `prompt_state.presented` of every document the terminal has open may have changed.
    private func presentedChanged(_ c: Connection) {
        guard !c.isClosed else { return }
        for doc in c.openDocuments {
            if let d = existingDocument(doc) { pushPromptState(d, to: c) }
        }
    }

    /// The prompts `c` shows now that concern `doc` (or no document in particular).
    func presentedPrompts(_ c: Connection, doc: String) -> [String] {
        c.prompts.presented.filter { id in prompts[id].map { $0.doc == nil || $0.doc == doc } ?? false }
    }

    // MARK: Requests

    /// `respond {prompt, action}`: the prompt is dismissed everywhere it was
    /// shown (so it cannot be answered twice), then the action's handler runs
    /// and its result is the reply.
    func respond(_ r: Request, _ c: Connection) throws(RewindError) {
        let id = try r.string("prompt", maxBytes: 64)
        let action = try r.string("action", maxBytes: 64)
        guard let live = prompts[id], c.prompts.isPresented(id) else {
            throw .notFound("respond: no prompt \"\(id)\" is shown on this terminal", details: ["prompt": .string(id)])
        }
        guard live.prompt.action(action) != nil else {
            throw .badRequest("respond: prompt \"\(id)\" has no action \"\(action)\"",
                              details: ["actions": .array(live.prompt.actions.map { .string($0.id) })])
        }
        dismiss(id)
        live.answer(action, c, r)
    }

    /// An error prompt for a request rejected for its content (hello `error_prompts: true`).
    func presentErrorPrompt(_ e: RewindError, for r: Request, to c: Connection) {
        let prompt = UndoPrompts.error(id: newPromptID(), e, request: r.type, re: r.id, locale: c.locale)
        let doc = r.body["doc"]?.stringValue.flatMap { c.openDocuments.contains($0) ? $0 : nil }
        do throws(RewindError) {
            try present(LivePrompt(prompt: prompt, doc: doc) { _, c, r in if let r { c.reply(Message.reply(r.id)) } }, to: [c])
        } catch {
            logger.debug("error prompt not shown", metadata: ["conn": "\(c.label)", "error": "\(error)"])
        }
    }
}
