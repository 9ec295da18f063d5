/// Who may do what with a document (PROTOCOL.md "Access"): the one place that
/// decides what each request needs. The server asks it before running a
/// request; nothing else in the server decides on access.
public enum Role: String, Sendable, CaseIterable {
    /// The creator: everything, and sharing.
    case owner
    /// Read, edit, undo and redo its own groups, focus, chain actions.
    case editor
    /// Read only: open, its own (empty) history, focus so others see where it looks.
    case viewer

    public func allows(_ need: Need) -> Bool {
        switch need {
        case .read: return true
        case .edit: return self != .viewer
        case .share: return self == .owner
        }
    }
}

/// What a request needs of the caller's role on its document.
public enum Need: String, Sendable {
    case read, edit, share
}

public enum RequestAccess {
    /// Requests about one document (named by their `doc` field) and what each
    /// needs. A user with no role gets `not_found`, as for a document that
    /// does not exist; a role that does not allow the request gets `forbidden`.
    /// Requests not listed here name no document (`hello`, `ping`,
    /// `create_doc`, `respond`, …) or need no role (`close` only ever closes
    /// what the terminal has open); `respond` reaches its document through
    /// the prompt, whose handler runs an edit command that is checked again.
    public static let needs: [String: Need] = [
        "open": .read,
        "history": .read,
        "focus": .read, "blur": .read, "select": .read, "hit_test": .read,
        "validate": .read,
        // `perform` and `gesture` need `edit` for the actions in `editingActions`.
        "perform": .read, "gesture": .read,
        "motion": .read,
        "peek": .read, "scrub": .read, "scrub_cancel": .read,
        "submit": .edit,
        "begin_group": .edit, "end_group": .edit, "set_action": .edit,
        "undo": .edit, "redo": .edit, "clear_history": .edit,
        "scrub_commit": .edit,
        "share": .share,
    ]

    /// Chain actions that change the document: a viewer's `perform` of one is
    /// `forbidden`, and `validate` reports them disabled for it.
    public static let editingActions: Set<String> = ["undo", "redo", "delete", "paste"]

    /// The error for a user whose `role` (nil: none) does not allow `need` on `doc`.
    public static func check(_ role: Role?, _ need: Need, doc: String, request: String) throws(RewindError) {
        guard let role else { throw .notFound("no document \"\(doc)\"", details: ["doc": .string(doc)]) }
        guard role.allows(need) else {
            throw RewindError(.forbidden, "\(request): a \(role.rawValue) of \"\(doc)\" cannot do this (needs \(need.rawValue))",
                              details: ["doc": .string(doc), "role": .string(role.rawValue), "needs": .string(need.rawValue)])
        }
    }
}

/// The roles of one document: its owner and the users it is shared with.
public struct DocumentAccess: Sendable, Equatable {
    public let owner: Int64
    public var members: [Int64: Role]

    public init(owner: Int64, members: [Int64: Role] = [:]) {
        self.owner = owner
        self.members = members
    }

    public func role(of user: Int64) -> Role? { user == owner ? .owner : members[user] }
}
