import RewindCore

/// Opening and catching up, and what the server pushes.
extension ClientSession {
    /// After hello: the whole state the first time; after a reconnect, only the
    /// events since the version held, so edits in flight are recognised in the log
    /// (committed before the connection dropped) or sent again (they were not).
    func openDocument() {
        if loaded { catchUp(thenReady: true) } else { openFresh() }
    }

    private func openFresh() {
        send("open", [("doc", .string(options.doc))]) { [weak self] r in
            guard let self else { return }
            switch r {
            case let .success(o):
                guard let v = o["version"]?.intValue, let state = o["state"],
                      let doc = try? Document(json: state) else {
                    return self.fail(ClientError(code: "internal", message: "the open reply has no state"))
                }
                self.document.reset(to: doc, version: v)
                self.loaded = true
                self.becomeReady()
            case let .failure(e): self.fail(e)
            }
        }
    }

    /// `open since` the version held, page after page; the last page subscribes.
    func catchUp(thenReady: Bool = false) {
        catchingUp = true
        send("open", [("doc", .string(options.doc)), ("since", .int(document.version))]) { [weak self] r in
            guard let self else { return }
            switch r {
            case let .success(o):
                for e in o["events"]?.arrayValue ?? [] {
                    guard let e = e.objectValue else { continue }
                    if !self.apply(event: e) { return self.reload() }
                }
                if o["more"]?.boolValue == true { return self.catchUp(thenReady: thenReady) }
                self.catchingUp = false
                self.onChange?(.document)
                if thenReady { self.becomeReady() }
            case let .failure(e) where e.code == "version":
                self.catchingUp = false
                self.reload()   // the server holds less than this copy (a restored database): start over
            case let .failure(e):
                self.catchingUp = false
                self.fail(e)
            }
        }
    }

    /// The copy cannot be caught up: take the server's state; pending edits are lost (and said so).
    func reload() {
        if !document.isSettled {
            onChange?(.failed(request: "submit", ClientError(code: "conflict",
                message: "the document was reloaded from the server; edits not yet committed were dropped")))
        }
        loaded = false
        openFresh()
    }

    /// Open: resend what was in flight, focus again, then what waited.
    private func becomeReady() {
        if let f = document.inFlight { sendSubmitAgain(f) }
        if let node = focused, document.view[node] != nil {
            send("focus", [("doc", .string(options.doc)), ("node", .string(node.string))])
        }
        setStatus(.ready)
        onChange?(.document)
        pump()
    }

    private func sendSubmitAgain(_ f: LocalDocument.InFlight) { sendSubmit(f) }

    /// Applies one event object; false when the copy no longer matches the log.
    @discardableResult
    func apply(event e: JSONObject) -> Bool {
        guard let v = e["version"]?.intValue, let ops = try? Op.parseList(e["ops"], limits: Limits.unbounded) else { return false }
        let own = e["user"]?.stringValue == (shownAs ?? options.user)
        switch document.apply(version: v, ops: ops, tx: e["tx"]?.stringValue, isOwn: own) {
        case .applied, .duplicate: return true
        case .gap:
            if !catchingUp { catchUp() }
            return true
        case .diverged: return false
        }
    }

    /// Every kind of `Push.Kind` (the server's registry) is handled here;
    /// `shortcuts` carries nothing this client shows.
    func handlePush(_ kind: Push.Kind, _ o: JSONObject) {
        let doc = o["doc"]?.stringValue
        switch kind {
        case .events:
            guard doc == options.doc, status == .ready, !catchingUp else { return }
            for e in o["events"]?.arrayValue ?? [] {
                guard let e = e.objectValue else { continue }
                if !apply(event: e) { return reload() }
            }
            onChange?(.document)
            pump()
        case .presence:
            guard doc == options.doc, let p = PeerPresence(o) else { return }
            if p.client == options.client { return }
            if p.node == nil { presence[p.client] = nil } else { presence[p.client] = p }
            onChange?(.presence)
        case .prompt:
            guard let p = o["prompt"]?.objectValue.flatMap({ PresentedPrompt($0, doc: doc) }) else { return }
            prompts.removeAll { $0.id == p.id }
            prompts.append(p)
            onChange?(.prompts)
        case .dismiss:
            guard let id = o["prompt"]?.stringValue else { return }
            prompts.removeAll { $0.id == id }
            onChange?(.prompts)
        case .promptState:
            guard doc == options.doc else { return }
            promptState = PromptState(o)
            onChange?(.promptState)
        case .closed:
            guard doc == options.doc else { return }
            if o["reason"]?.stringValue == "moved" {
                // Moving to another PostgreSQL cluster: connect again (with backoff) and catch up; the opens
                // are answered `unavailable` until the move is done, and what is in flight is sent again.
                return setStatus(.disconnected("the document is moving to another database; opening it again"))
            }
            let reason = o["reason"]?.stringValue == "deleted" ? "deleted" : "forbidden"
            fail(ClientError(code: reason, message: o["message"]?.stringValue
                             ?? (reason == "deleted" ? "the document was deleted" : "access to the document was taken away")))
        case .bye:
            let reason = o["reason"]?.stringValue ?? "bye"
            let message = o["message"]?.stringValue ?? reason
            if o["retry"]?.boolValue == false {
                setStatus(.closed(ClientError(code: reason, message: message)))
            } else {
                disconnected(message)
            }
        case .tokenExpiring:
            tokenExpiring()
        case .shortcuts, .renamed:
            break  // (the quick actions and titles are an app's)
        }
    }
}
