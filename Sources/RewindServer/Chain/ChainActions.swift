import RewindCore
import RewindLoop

/// What a chain handler sees: the terminal, the document as it is now
/// (including edits still being committed), the terminal's presence there, and the request's `args` (empty for `validate`).
struct ChainContext {
    unowned let server: Server
    let c: Connection
    let d: DocumentRuntime
    let args: JSONObject

    var document: Document { d.current.document }
    var presence: Presence { d.presence[c.id] }
    var locale: String { c.locale }

    /// The terminal's selection if it lies in `node`, within its current text.
    func selection(in node: Key) -> Selection? {
        guard let s = presence.selection, s.node == node, let n = document[node] else { return nil }
        return Selection(node: node, start: min(s.start, n.text.count), end: min(s.end, n.text.count))
    }

    /// A handler ran without what its claim checked (a bug): answer rather than leave the request hanging.
    func unreachable(_ r: Request) {
        c.fail(r, RewindError(.internal, "\(r.type): the handler lost what it had claimed; please report"))
    }
}

/// Runs a claimed action and answers `r` (adding `handled_by`).
typealias ChainPerform = (_ by: Responder, _ ctx: ChainContext, _ r: Request) -> Void

/// Requests of the responder chain: `perform`, `validate`, `gesture`.
extension Server {
    /// `perform {doc, action, target?, args?}`: the action, from the target or the first responder up the chain.
    func perform(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        let action = try r.string("action", maxBytes: 64)
        let target = try r.optionalString("target", maxBytes: config.limits.maxNameBytes)
        try perform(action, target: target, r, c, d)
    }

    /// `gesture {doc, gesture}`: the action bound to the gesture at hello, from the first responder.
    func gesture(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        let gesture = try r.string("gesture", maxBytes: 64)
        guard let action = c.gestures[gesture] else {
            throw .notFound("gesture: no action is bound to \"\(gesture)\"", details: ["gestures": .array(c.gestures.keys.sorted().map { .string($0) })])
        }
        try perform(action, target: nil, r, c, d)
    }

    private func args(_ r: Request) throws(RewindError) -> JSONObject {
        guard let v = r.body["args"], !v.isNull else { return JSONObject() }
        guard let o = v.objectValue else { throw .badRequest("\(r.type): `args` must be an object") }
        return o
    }

    /// Where the walk starts: the explicit target, else the first responder (else the document).
    private func chain(target: String?, _ ctx: ChainContext) throws(RewindError) -> [Responder] {
        if let target {
            guard let start = Responder.named(target, in: ctx.document) else {
                throw .notFound("no node \"\(target)\" to start the chain at", details: ["target": .string(target)])
            }
            return Responder.chain(from: start, in: ctx.document)
        }
        return Responder.chain(from: ctx.presence.node.map { .node($0) }, in: ctx.document)
    }

    private func perform(_ action: String, target: String?, _ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        let args = try args(r)
        whenOpen(c, d) { [self] error in
            if let error { return c.fail(r, error) }
            let ctx = ChainContext(server: self, c: c, d: d, args: args)
            do throws(RewindError) {
                let chain = try self.chain(target: target, ctx)
                guard let claim = self.actions.resolve(action, along: chain, ctx) else {
                    throw .notFound("nothing on the responder chain handles \"\(action)\"",
                                    details: ["chain": .array(chain.map { .string($0.id) })])
                }
                if RequestAccess.editingActions.contains(action) && !self.mayEdit(d, c) {
                    throw RewindError(.forbidden, "\"\(action)\" changes the document; a viewer cannot do it",
                                      details: ["doc": .string(d.id), "role": "viewer", "needs": "edit"])
                }
                guard claim.verdict.enabled else {
                    throw .notFound("\"\(action)\" is not available now (\(claim.responder.id) handles it)",
                                    details: ["by": .string(claim.responder.id)])
                }
                claim.payload(claim.responder, ctx, r)
            } catch { c.fail(r, error) }
        }
    }

    /// The editing menu: for each action, enabled now?, its title, and who would handle it.
    func validate(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        guard let list = r.body["actions"]?.arrayValue, list.count <= 64 else {
            throw .badRequest("validate: `actions` must be a list of at most 64 action names")
        }
        var names: [String] = []
        for v in list {
            guard let s = v.stringValue, !s.isEmpty, s.utf8.count <= 64 else { throw .badRequest("validate: action names are strings of 1 to 64 bytes") }
            names.append(s)
        }
        let target = try r.optionalString("target", maxBytes: config.limits.maxNameBytes)
        whenOpen(c, d) { [self] error in
            if let error { return c.fail(r, error) }
            let ctx = ChainContext(server: self, c: c, d: d, args: JSONObject())
            let canEdit = self.mayEdit(d, c)
            do throws(RewindError) {
                let chain = try self.chain(target: target, ctx)
                var out: [(key: String, value: JSON)] = []
                for name in names {
                    if let claim = self.actions.resolve(name, along: chain, ctx) {
                        // A viewer sees the editing actions greyed out.
                        let enabled = claim.verdict.enabled && (canEdit || !RequestAccess.editingActions.contains(name))
                        out.append((name, .obj([("enabled", .bool(enabled)), ("title", .string(claim.verdict.title)),
                                                ("by", .string(claim.responder.id))])))
                    } else {
                        out.append((name, .obj([("enabled", false), ("title", .string(Self.defaultTitle(name, locale: c.locale))), ("by", .null)])))
                    }
                }
                c.reply(Message.reply(r.id, [("actions", .object(JSONObject(out)))]))
            } catch { c.fail(r, error) }
        }
    }

    /// The plain title of an action nobody claims: the built-ins' menu words, else the action's name.
    static func defaultTitle(_ action: String, locale: String) -> String {
        builtInWords[action].map { Titles.word($0, locale: locale) } ?? action
    }

    private static let builtInWords = ["undo": "Undo", "redo": "Redo", "delete": "Delete", "copy": "Copy",
                                       "paste": "Paste", "select_all": "Select All"]
}
