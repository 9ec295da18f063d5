/// Who may do what with a document (PROTOCOL.md "Access"): roles, what each
/// allows, and the error for a role that does not allow a request.
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
        case .share, .own: return self == .owner
        }
    }
}

/// What a request needs of the caller's role on its document.
public enum Need: String, Sendable {
    /// `own`: what only the owner does besides sharing (deleting the document).
    case read, edit, share, own
}

/// What requests need is registered with each request type, in the server
/// (`RequestType.all`); the rules about roles themselves live here.
public enum RequestAccess {
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
