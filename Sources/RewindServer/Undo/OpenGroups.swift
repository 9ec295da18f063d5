import RewindCore

/// The explicit undo group each terminal holds open in each document
/// (`begin_group` … `end_group`, levels and all): the undo subsystem's
/// per-terminal table, keyed by document and terminal (`Session.id`). An
/// entry goes when its group closes or its terminal leaves the document
/// (`UndoRequests.closeTerminalGroup`).
final class OpenGroups {
    private var byDocument: [String: [Int: TerminalGroup]] = [:]

    /// The group `terminal` holds open in `doc` (nil: none); set to nil when it closes.
    subscript(doc: String, terminal: Int) -> TerminalGroup? {
        get { byDocument[doc]?[terminal] }
        set {
            byDocument[doc, default: [:]][terminal] = newValue
            if byDocument[doc]?.isEmpty == true { byDocument[doc] = nil }
        }
    }

    /// The group `terminal` held open in `doc`, taken out.
    func remove(doc: String, terminal: Int) -> TerminalGroup? {
        defer { self[doc, terminal] = nil }
        return self[doc, terminal]
    }

    /// The ids of the groups this instance's terminals hold open in `doc`:
    /// those a catch-up must not take for orphans.
    func ids(in doc: String) -> Set<String> { Set((byDocument[doc] ?? [:]).values.map(\.id)) }
}
