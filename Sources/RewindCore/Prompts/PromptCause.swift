/// What an undo prompt is about, kept with it in PostgreSQL (schema/024) so
/// that any instance can show it again to its terminal, in that terminal's
/// locale, and carry out its answer: the prompt itself is rebuilt from this.
public enum PromptCause: Equatable, Sendable {
    /// A shake: the groups on top of the user's stacks in `scope` then.
    case shake(scope: String?, undo: Top?, redo: Top?)
    /// An undo or redo of `group` that would change what `names` did since (`tx`: the request's, kept for its answer).
    case conflict(kind: EventKind, scope: String?, group: String, action: String?, names: [String], conflicts: JSON, tx: String?)

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

    public var scope: Key? {
        switch self {
        case let .shake(scope, _, _), let .conflict(_, scope, _, _, _, _, _): return scope.map { Key($0) }
        }
    }

    /// The prompt, with id `id`, in `locale`.
    public func prompt(id: String, locale: String) -> Prompt? {
        switch self {
        case let .shake(_, undo, redo):
            let tops = UndoPrompts.Tops(undo: undo.map { (group: $0.group, action: $0.action) }, redo: redo.map { (group: $0.group, action: $0.action) })
            return UndoPrompts.shake(id: id, tops, locale: locale)
        case let .conflict(kind, _, _, action, names, conflicts, _):
            return UndoPrompts.conflict(id: id, kind: kind, action: action, names: names, conflicts: conflicts, locale: locale)
        }
    }

    /// Whether what the prompt offers is still there: the groups it names are
    /// still on top of the user's stacks (`undoTop`, `redoTop`: their ids now).
    public func stillStands(undoTop: String?, redoTop: String?) -> Bool {
        switch self {
        case let .shake(_, undo, redo): return undo?.group == undoTop && redo?.group == redoTop
        case let .conflict(kind, _, group, _, _, _, _): return (kind == .redo ? redoTop : undoTop) == group
        }
    }

    public var json: JSON {
        func top(_ t: Top?) -> JSON { t.map { .obj([("group", .string($0.group)), ("action", $0.action.map { .string($0) } ?? .null)]) } ?? .null }
        switch self {
        case let .shake(scope, undo, redo):
            return .obj([("reason", "shake"), ("scope", scope.map { .string($0) } ?? .null), ("undo", top(undo)), ("redo", top(redo))])
        case let .conflict(kind, scope, group, action, names, conflicts, tx):
            return .obj([("reason", "conflict"), ("kind", .string(kind.rawValue)), ("scope", scope.map { .string($0) } ?? .null),
                         ("group", .string(group)), ("action", action.map { .string($0) } ?? .null),
                         ("names", .array(names.map { .string($0) })), ("conflicts", conflicts), ("tx", tx.map { .string($0) } ?? .null)])
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
                  let group = o["group"]?.stringValue, let names = o["names"]?.arrayValue else { return nil }
            self = .conflict(kind: kind, scope: scope, group: group, action: o["action"]?.stringValue,
                             names: names.compactMap(\.stringValue), conflicts: o["conflicts"] ?? .array([]), tx: o["tx"]?.stringValue)
        default:
            return nil
        }
    }
}
