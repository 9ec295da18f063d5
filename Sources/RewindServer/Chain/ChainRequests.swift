import RewindCore
import RewindLoop

/// Requests of the responder chain: `perform`, `validate`, `gesture`. The
/// built-in actions are carried out in `BuiltInActions.swift`.
final class ChainRequests {
    /// The actions of the responder chain and who handles them (`EditingActions`, core).
    let actions = EditingActions.table()
    let limits: Limits
    let access: AccessControl
    let undo: UndoRequests
    let documentRequests: DocumentRequests
    let presence: PresenceRelay
    /// Per terminal (`Session.id`): its pasteboard (`copy` / `paste`), dropped when it disconnects (`left`).
    var clipboards: [Int: [Unicode.Scalar]] = [:]

    init(limits: Limits, access: AccessControl, undo: UndoRequests, documentRequests: DocumentRequests, presence: PresenceRelay) {
        self.limits = limits
        self.access = access
        self.undo = undo
        self.documentRequests = documentRequests
        self.presence = presence
    }

    /// `c` disconnected: its pasteboard goes.
    func left(_ c: Session) { clipboards[c.id] = nil }

    /// `perform {doc, action, target?, args?}`: the action, from the target or the first responder up the chain.
    func perform(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let action = try r.string("action", maxBytes: 64)
        let target = try r.optionalString("target", maxBytes: limits.maxNameBytes)
        try perform(action, target: target, r, c, d)
    }

    /// `gesture {doc, gesture}`: the action bound to the gesture at hello, from the first responder.
    func gesture(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let gesture = try r.string("gesture", maxBytes: 64)
        guard let action = c.options.gestures[gesture] else {
            throw .notFound("gesture: no action is bound to \"\(gesture)\"", details: ["gestures": .array(c.options.gestures.keys.sorted().map { .string($0) })])
        }
        try perform(action, target: nil, r, c, d)
    }

    private func args(_ r: Request) throws(RewindError) -> JSONObject {
        guard let v = r.body["args"], !v.isNull else { return JSONObject() }
        guard let o = v.objectValue else { throw .badRequest("\(r.type): `args` must be an object") }
        return o
    }

    /// What the chain's handlers look at, for `c` in `d`.
    private func chainState(_ c: Session, _ d: DocumentRuntime, args: JSONObject) -> ChainState {
        ChainState(document: d.current.document, presence: d.presence[c.id], history: d.history, user: c.user.id,
                   clipboard: clipboards[c.id] ?? [], pasteText: args["text"]?.stringValue.map { Array($0.unicodeScalars) }, locale: c.locale)
    }

    /// Where the walk starts: the explicit target, else the first responder (else the document).
    private func chain(target: String?, _ state: ChainState) throws(RewindError) -> [Responder] {
        if let target {
            guard let start = Responder.named(target, in: state.document) else {
                throw .notFound("no node \"\(target)\" to start the chain at", details: ["target": .string(target)])
            }
            return Responder.chain(from: start, in: state.document)
        }
        return Responder.chain(from: state.presence.node.map { .node($0) }, in: state.document)
    }

    private func perform(_ action: String, target: String?, _ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let args = try args(r)
        let state = chainState(c, d, args: args)
        let chain = try chain(target: target, state)
        guard let claim = actions.resolve(action, along: chain, state) else {
            throw .notFound("nothing on the responder chain handles \"\(action)\"",
                            details: ["chain": .array(chain.map { .string($0.id) })])
        }
        if RequestAccess.editingActions.contains(action) && !access.mayEdit(d, c) {
            throw RewindError(.forbidden, "\"\(action)\" changes the document; a viewer cannot do it",
                              details: ["doc": .string(d.id), "role": "viewer", "needs": "edit"])
        }
        guard claim.verdict.enabled else {
            throw .notFound("\"\(action)\" is not available now (\(claim.responder.id) handles it)",
                            details: ["by": .string(claim.responder.id)])
        }
        guard let effect = claim.payload(claim.responder, state) else {
            throw RewindError(.internal, "\(r.type): the handler lost what it had claimed; please report")
        }
        try carryOut(effect, by: claim.responder, args: args, r, c, d)
    }

    /// The editing menu: for each action, enabled now?, its title, and who would handle it.
    func validate(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        guard let list = r.body["actions"]?.arrayValue, list.count <= 64 else {
            throw .badRequest("validate: `actions` must be a list of at most 64 action names")
        }
        var names: [String] = []
        for v in list {
            guard let s = v.stringValue, !s.isEmpty, s.utf8.count <= 64 else { throw .badRequest("validate: action names are strings of 1 to 64 bytes") }
            names.append(s)
        }
        let target = try r.optionalString("target", maxBytes: limits.maxNameBytes)
        let state = chainState(c, d, args: JSONObject())
        let canEdit = access.mayEdit(d, c)
        let chain = try chain(target: target, state)
        var out: [(key: String, value: JSON)] = []
        for name in names {
            if let claim = actions.resolve(name, along: chain, state) {
                // A viewer sees the editing actions greyed out.
                let enabled = claim.verdict.enabled && (canEdit || !RequestAccess.editingActions.contains(name))
                out.append((name, .obj([("enabled", .bool(enabled)), ("title", .string(claim.verdict.title)),
                                        ("by", .string(claim.responder.id))])))
            } else {
                out.append((name, .obj([("enabled", false), ("title", .string(EditingActions.defaultTitle(name, locale: c.locale))), ("by", .null)])))
            }
        }
        c.reply(Message.reply(r.id, [("actions", .object(JSONObject(out)))]))
    }
}
