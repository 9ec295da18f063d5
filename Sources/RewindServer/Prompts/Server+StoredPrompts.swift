import RewindCore

extension Server {
    /// Stored prompts (PromptCenter): what answering one does, whether its
    /// cause still stands, and showing them again to a terminal that opens the
    /// document (on this instance, after any restart or reconnect).
    func wireStoredPrompts() {
        prompts.answering = { [unowned self] cause, d in
            switch cause {
            case .shake: return self.shake.answer(cause, d)
            case .conflict: return self.undo.conflictAnswer(cause, d)
            }
        }
        prompts.tops = { c, d, scope in
            (d.history.topUndo(user: c.user.id, scope: scope)?.key.id, d.history.topRedo(user: c.user.id, scope: scope)?.key.id)
        }
        documentRequests.onOpened = { [unowned self] c, d in
            self.prompts.reshow(c, d) { [unowned self] in self.documentRequests.isOpen(d, on: c) }
        }
        prompts.documentOf = { [unowned self] doc in self.documents[doc] }
        prompts.onGivenBack = { [unowned self] doc in
            guard let d = self.documents[doc] else { return }
            for c in d.subscribers.values {
                self.prompts.reshow(c, d) { [unowned self] in self.documentRequests.isOpen(d, on: c) }
            }
        }
    }
}
