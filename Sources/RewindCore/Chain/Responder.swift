/// A link of the responder chain (SPEC section 5): nodes from the first
/// responder up to the root, then the document, the terminal's session and
/// the application, as UIKit goes view → superview → … → window → app.
public enum Responder: Sendable, Hashable {
    case node(Key)
    case document
    case session
    case application

    /// The name a reply uses (`handled_by`, `by`): the node id or the level's reserved id.
    public var id: String {
        switch self {
        case let .node(k): return k.string
        case .document: return "document"
        case .session: return "session"
        case .application: return "application"
        }
    }

    /// `document`, `session`, `application` or a node id; nil for an unknown node.
    public static func named(_ id: String, in doc: Document) -> Responder? {
        switch id {
        case "document": return .document
        case "session": return .session
        case "application": return .application
        default: return doc[Key(id)] != nil ? .node(Key(id)) : nil
        }
    }

    /// The chain from `start` to the application. Without a start (no first
    /// responder) it begins at the document, as UIKit sends a nil-targeted
    /// action with no first responder to the window.
    public static func chain(from start: Responder?, in doc: Document) -> [Responder] {
        var out: [Responder] = []
        switch start {
        case let .node(k)?:
            var cur: Key? = k
            while let c = cur, let n = doc[c] {
                out.append(.node(c))
                cur = n.parent
            }
            out += [.document, .session, .application]
        case .document?, nil: out = [.document, .session, .application]
        case .session?: out = [.session, .application]
        case .application?: out = [.application]
        }
        return out
    }
}

extension Document {
    /// The undo scope for a terminal focused on `node`: the nearest node with
    /// `undoScope` at or above it, else the document's (nil).
    public func undoScope(around node: Key?) -> Key? {
        var cur = node
        while let c = cur, let n = nodes[c] {
            if n.undoScope { return c }
            cur = n.parent
        }
        return nil
    }
}
