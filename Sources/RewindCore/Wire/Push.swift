/// Every push the server sends (PROTOCOL.md, "Requests, replies, pushes"):
/// its name, its fields, and its one encoder. Nothing else in the server
/// builds a push; the Swift client reads them by these names (`Push.Kind`);
/// `PushRegistryTests` checks docs/protocol.md's list and web/client.js's
/// `PUSH_HANDLERS` against `Push.Kind.allCases`.
public enum Push {
    public enum Kind: String, CaseIterable, Sendable {
        case events, presence, prompt, dismiss, closed
        case promptState = "prompt_state"
        case shortcuts, bye
        case tokenExpiring = "token_expiring"
        case renamed

        /// The fields after `push`, in the order they are written (optional ones may be null).
        public var fields: [String] {
            switch self {
            case .events: ["doc", "events"]
            case .presence: ["doc", "user", "client", "node", "selection"]
            case .prompt: ["doc", "prompt"]
            case .dismiss: ["prompt"]
            case .closed: ["doc", "reason"]
            case .promptState: ["doc", "scope", "can_undo", "can_redo", "undo_title", "redo_title", "presented"]
            case .shortcuts: ["items"]
            case .bye: ["reason", "retry", "message"]
            case .tokenExpiring: ["in_ms"]
            case .renamed: ["doc", "title"]
            }
        }
    }

    /// A push of `kind` with `values` for its fields, in `Kind.fields`' order.
    static func line(_ kind: Kind, _ values: [JSON?]) -> [UInt8] {
        precondition(values.count == kind.fields.count, "push \(kind.rawValue): \(values.count) values for \(kind.fields)")
        return Message.line(.obj([("push", .string(kind.rawValue))] + Array(zip(kind.fields, values))))
    }

    /// `events` of one document, the events already encoded (`Event.wireBytes`):
    /// written directly, as this push goes to every subscriber on every commit.
    public static func events(doc: String, _ events: [[UInt8]]) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + events.reduce(0) { $0 + $1.count + 1 })
        // Constant pieces as static strings: an `Array` of each was four allocations a commit.
        w.write(raw: #"{"push":"events","doc":"# as StaticString)
        w.write(string: doc)
        w.write(raw: #","events":["# as StaticString)
        for (i, e) in events.enumerated() {
            if i > 0 { w.write(raw: "," as StaticString) }
            w.write(raw: e)
        }
        w.write(raw: "]}\n" as StaticString)
        return w.bytes
    }

    public static func presence(doc: String, user: String, client: String, _ p: Presence) -> [UInt8] {
        line(.presence, [.string(doc), .string(user), .string(client), p.node.map { .string($0.string) } ?? .null, p.selection?.json])
    }

    public static func prompt(doc: String?, _ prompt: Prompt) -> [UInt8] {
        line(.prompt, [doc.map { .string($0) }, prompt.json])
    }

    public static func dismiss(prompt id: String) -> [UInt8] { line(.dismiss, [.string(id)]) }

    public static func closed(doc: String, reason: String) -> [UInt8] { line(.closed, [.string(doc), .string(reason)]) }

    /// An open document's title changed (`rename`; nil: removed).
    public static func renamed(doc: String, title: String?) -> [UInt8] { line(.renamed, [.string(doc), title.map { .string($0) } ?? .null]) }

    public static func promptState(doc: String, _ s: UndoPromptState, locale: String) -> [UInt8] {
        line(.promptState, [
            .string(doc), s.scope.map { .string($0.string) } ?? .null, .bool(s.canUndo), .bool(s.canRedo),
            .string(Titles.title(verb: "Undo", action: s.undoAction, locale: locale)),
            .string(Titles.title(verb: "Redo", action: s.redoAction, locale: locale)),
            .array(s.presented.map { .string($0) }),
        ])
    }

    public static func shortcuts(_ items: [JSON]) -> [UInt8] { line(.shortcuts, [.array(items)]) }

    /// A signed token expires in `inMs`: send `refresh` with a new one.
    public static func tokenExpiring(inMs: Int64) -> [UInt8] { line(.tokenExpiring, [.int(inMs)]) }

    public static func bye(reason: String, retry: Bool, message: String) -> [UInt8] {
        line(.bye, [.string(reason), .bool(retry), .string(message)])
    }
}
