/// What an undo prompt is about, kept with it in PostgreSQL (schema/024) so
/// that any instance can show it again to its terminal, in that terminal's
/// locale, and carry out its answer: the prompt itself is rebuilt from this.
/// It holds no document content and no names: a conflict keeps the ids of
/// those who edited since and where (node, reason, version), not their ops;
/// names are read from the document when the prompt is shown (so an erased
/// user reads as their pseudonym), and a document's content stays sealed.
public enum PromptCause: Equatable, Sendable {
    /// A shake: the groups on top of the user's stacks in `scope` then.
    case shake(scope: String?, undo: Top?, redo: Top?)
    /// An undo or redo of `group` that would change what `conflicts`' users did since (`tx`: the request's, kept for its answer).
    case conflict(kind: EventKind, scope: String?, group: String, action: String?, conflicts: [Place], tx: String?)

    /// Where a conflict is, without what the op was.
    public struct Place: Equatable, Sendable {
        public var node: String
        public var reason: String
        public var user: Int64?
        public var version: Int64?
        public init(_ c: Conflict) {
            node = c.op.node.string
            reason = c.reason.rawValue
            user = c.user
            version = c.version
        }
        public init(node: String, reason: String, user: Int64?, version: Int64?) {
            self.node = node
            self.reason = reason
            self.user = user
            self.version = version
        }
    }

    public struct Top: Equatable, Sendable {
        public var group: String
        public var action: String?
        public init(group: String, action: String?) {
            self.group = group
            self.action = action
        }
    }

    public init(shake tops: UndoPrompts.Tops, scope: Key?) {
        self = .shake(scope: scope?.string, undo: tops.undo.map { Top(group: $0.group, action: $0.action) },
                      redo: tops.redo.map { Top(group: $0.group, action: $0.action) })
    }

    public var isShake: Bool { if case .shake = self { return true } else { return false } }

    public var scope: Key? {
        switch self {
        case let .shake(scope, _, _), let .conflict(_, scope, _, _, _, _): return scope.map { Key($0) }
        }
    }

    /// The prompt, with id `id`, in `locale`, users named by `userName` (a conflict's list
    /// without the ops: a prompt shown again does not carry the document's content).
    public func prompt(id: String, locale: String, userName: (Int64) -> String? = { _ in nil }) -> Prompt? {
        switch self {
        case let .shake(_, undo, redo):
            let tops = UndoPrompts.Tops(undo: undo.map { (group: $0.group, action: $0.action) }, redo: redo.map { (group: $0.group, action: $0.action) })
            return UndoPrompts.shake(id: id, tops, locale: locale)
        case let .conflict(kind, _, _, action, places, _):
            var names: [String] = []
            for p in places { if let n = p.user.flatMap(userName), !names.contains(n) { names.append(n) } }
            let conflicts = JSON.array(places.map { p in
                .obj([("node", .string(p.node)), ("reason", .string(p.reason)), ("user", p.user.flatMap(userName).map { .string($0) }),
                      ("version", p.version.map { .int($0) })])
            })
            return UndoPrompts.conflict(id: id, kind: kind, action: action, names: names, conflicts: conflicts, locale: locale)
        }
    }

    /// Whether what the prompt offers is still there: the groups it names are
    /// still on top of the user's stacks (`undoTop`, `redoTop`: their ids now).
    public func stillStands(undoTop: String?, redoTop: String?) -> Bool {
        switch self {
        case let .shake(_, undo, redo): return undo?.group == undoTop && redo?.group == redoTop
        case let .conflict(kind, _, group, _, _, _): return (kind == .redo ? redoTop : undoTop) == group
        }
    }

    public var json: JSON {
        func top(_ t: Top?) -> JSON { t.map { .obj([("group", .string($0.group)), ("action", $0.action.map { .string($0) } ?? .null)]) } ?? .null }
        switch self {
        case let .shake(scope, undo, redo):
            return .obj([("reason", "shake"), ("scope", scope.map { .string($0) } ?? .null), ("undo", top(undo)), ("redo", top(redo))])
        case let .conflict(kind, scope, group, action, places, tx):
            let conflicts = JSON.array(places.map { p in
                .obj([("node", .string(p.node)), ("reason", .string(p.reason)), ("user", p.user.map { .int($0) } ?? .null),
                      ("version", p.version.map { .int($0) } ?? .null)])
            })
            return .obj([("reason", "conflict"), ("kind", .string(kind.rawValue)), ("scope", scope.map { .string($0) } ?? .null),
                         ("group", .string(group)), ("action", action.map { .string($0) } ?? .null),
                         ("conflicts", conflicts), ("tx", tx.map { .string($0) } ?? .null)])
        }
    }

    public init?(json: JSON) {
        guard let o = json.objectValue else { return nil }
        func top(_ v: JSON?) -> Top?? {
            guard let v, !v.isNull else { return .some(nil) }
            guard let t = v.objectValue, let g = t["group"]?.stringValue else { return nil }
            return .some(Top(group: g, action: t["action"]?.stringValue))
        }
        let scope = o["scope"]?.stringValue
        switch o["reason"]?.stringValue {
        case "shake":
            guard let undo = top(o["undo"]), let redo = top(o["redo"]) else { return nil }
            self = .shake(scope: scope, undo: undo, redo: redo)
        case "conflict":
            guard let k = o["kind"]?.stringValue, let kind = EventKind(rawValue: k), kind == .undo || kind == .redo,
                  let group = o["group"]?.stringValue, let list = o["conflicts"]?.arrayValue else { return nil }
            var places: [Place] = []
            for item in list {
                guard let c = item.objectValue, let node = c["node"]?.stringValue, let reason = c["reason"]?.stringValue else { return nil }
                places.append(Place(node: node, reason: reason, user: c["user"]?.intValue, version: c["version"]?.intValue))
            }
            self = .conflict(kind: kind, scope: scope, group: group, action: o["action"]?.stringValue, conflicts: places, tx: o["tx"]?.stringValue)
        default:
            return nil
        }
    }
}
