@testable import RewindCore

/// A document driven the way the server drives it, recording every log entry
/// (events and marks) so that tests can replay them.
struct UndoSim {
    var ledger = DocumentLedger(doc: "d")
    var entries: [LogEntry] = []
    var clock: Int64 = 1_000_000
    var counter = 0

    init(levels: Int = 100) { ledger = DocumentLedger(doc: "d", undoLevels: levels) }

    var doc: Document { ledger.document }
    var history: UndoHistory { ledger.history }

    mutating func nextID() -> String {
        counter += 1
        return "id-\(counter)"
    }

    @discardableResult
    mutating func edit(_ user: Int64, _ ops: [Op], client: String? = nil, after ms: Int64 = 1_000, action: String? = nil,
                       group: String? = nil, selection: Selection? = nil) throws -> Event
    {
        clock += ms
        var s = DocumentLedger.Submission(tx: nextID(), base: ledger.version, ops: ops, action: action, userID: user,
                                          userName: "u\(user)", client: client ?? "c\(user)", eventID: nextID(), time: clock,
                                          openGroup: group, selection: selection)
        s.typingWindow = 500
        guard case let .appended(e) = try ledger.append(s) else { fatalError("duplicate") }
        entries.append(.event(e))
        return e
    }

    @discardableResult
    mutating func revert(_ kind: EventKind, _ user: Int64, policy: ConflictPolicy = .prompt, scope: Key? = nil,
                         tx: String? = nil) throws -> DocumentLedger.RevertResult
    {
        clock += 1_000
        let r = DocumentLedger.RevertRequest(kind: kind, userID: user, userName: "u\(user)", client: "c\(user)", scope: scope,
                                             policy: policy, tx: tx, eventID: nextID(), time: clock)
        let result = try ledger.revert(r)
        if let e = result.event { entries.append(.event(e)) }
        return result
    }

    /// An undo or redo as the server runs it: a conflict under `prompt` is a question, not an error.
    mutating func revertOrAsk(_ kind: EventKind, _ user: Int64, policy: ConflictPolicy) throws -> DocumentLedger.RevertOutcome {
        clock += 1_000
        let r = DocumentLedger.RevertRequest(kind: kind, userID: user, userName: "u\(user)", client: "c\(user)", scope: nil,
                                             policy: policy, tx: nil, eventID: nextID(), time: clock)
        let outcome = try ledger.revertOrAsk(r)
        if case let .reverted(result) = outcome, let e = result.event { entries.append(.event(e)) }
        return outcome
    }

    mutating func undo(_ user: Int64, policy: ConflictPolicy = .prompt, scope: Key? = nil) throws -> DocumentLedger.RevertResult {
        try revert(.undo, user, policy: policy, scope: scope)
    }

    mutating func redo(_ user: Int64, policy: ConflictPolicy = .prompt, scope: Key? = nil) throws -> DocumentLedger.RevertResult {
        try revert(.redo, user, policy: policy, scope: scope)
    }

    mutating func mark(_ kind: GroupMark.Kind, _ user: Int64, group: String? = nil, scope: Key? = nil, action: String? = nil,
                       selection: Selection? = nil)
    {
        let m = ledger.mark(kind, userID: user, client: "c\(user)", group: group, scope: scope, action: action,
                            selection: selection, id: nextID(), time: clock)
        entries.append(.mark(m))
    }

    /// A fresh ledger fed every entry: what replay after a restart builds.
    func replayed() throws -> DocumentLedger {
        var l = DocumentLedger(doc: "d", undoLevels: ledger.history.levels)
        for e in entries { try l.replay(e) }
        return l
    }

    func titles(_ user: Int64, locale: String = "en", scope: Key? = nil) -> (String?, String?) {
        let u = history.topUndo(user: user, scope: scope).map { Titles.title(verb: "Undo", action: $0.action, locale: locale) }
        let r = history.topRedo(user: user, scope: scope).map { Titles.title(verb: "Redo", action: $0.action, locale: locale) }
        return (u, r)
    }
}

extension NodeSpec {
    static func text(_ id: Key, _ s: String = "") -> NodeSpec {
        var n = NodeSpec(id: id, kind: "text", frame: [0, 0, 10, 10])
        n.text = Array(s.unicodeScalars)
        return n
    }
}

extension Document {
    func text(_ id: Key) -> String { String(String.UnicodeScalarView(self[id]?.text ?? [])) }
}
