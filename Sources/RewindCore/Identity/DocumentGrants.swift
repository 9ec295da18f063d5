/// Roles a signed token grants for its connection only (PROTOCOL.md,
/// "Identity from the app": `rewind: {docs: {"acme:*": "editor"}}`), as an
/// app's access token does: document-id patterns, exact or ending in `*`, to
/// `editor` or `viewer`. Never stored; they live until the token's `exp`
/// (or a refresh brings other grants).
public struct DocumentGrants: Sendable, Equatable {
    public struct Grant: Sendable, Equatable {
        /// The id, or the prefix when `isPrefix` (the pattern without its `*`).
        public let pattern: String
        public let isPrefix: Bool
        public let role: Role

        public func matches(_ doc: String) -> Bool {
            isPrefix ? doc.utf8.starts(with: pattern.utf8) : Bytes.equal(doc, pattern)
        }
    }

    public let grants: [Grant]

    /// Patterns a token may carry at most (a token is ≤ 8 KiB anyway; this keeps each check short).
    public static let maxPatterns = 64

    public init(_ grants: [Grant]) { self.grants = grants }

    /// Reads the `docs` member of the `rewind` claim; nil when it is not
    /// what the protocol says (a role other than `editor`/`viewer`, a `*`
    /// other than last, an empty pattern, too many). A JSON object with one
    /// key twice keeps the last, as JSON readers do.
    public init?(claim: JSON) {
        guard let o = claim.objectValue, o.members.count <= Self.maxPatterns else { return nil }
        var grants: [Grant] = []
        for (pattern, value) in o.members {
            guard let name = value.stringValue, let role = Role(rawValue: name), role != .owner else { return nil }
            let stars = pattern.utf8.lazy.filter { $0 == UInt8(ascii: "*") }.count
            let isPrefix = pattern.utf8.last == UInt8(ascii: "*")
            guard !pattern.isEmpty, pattern.utf8.count <= 256, stars == (isPrefix ? 1 : 0) else { return nil }
            let g = Grant(pattern: isPrefix ? String(pattern.dropLast()) : pattern, isPrefix: isPrefix, role: role)
            if let i = grants.firstIndex(where: { $0.isPrefix == g.isPrefix && Bytes.equal($0.pattern, g.pattern) }) {
                grants[i] = g
            } else {
                grants.append(g)
            }
        }
        self.grants = grants
    }

    /// The role the most specific pattern matching `doc` grants (nil: none
    /// matches): the exact id over any prefix, a longer prefix over a
    /// shorter — so `{"acme:*": "editor", "acme:board-7": "viewer"}` makes
    /// board-7 read-only, as an app writing it means.
    public func role(on doc: String) -> Role? { mostSpecific(matching: doc)?.role }

    /// Whether `create_doc` of `doc` is allowed: the pattern that decides `doc`'s role is an `editor` one.
    public func allowsCreating(_ doc: String) -> Bool { role(on: doc) == .editor }

    private func mostSpecific(matching doc: String) -> Grant? {
        var best: Grant?
        for g in grants where g.matches(doc) {
            guard let b = best else { best = g; continue }
            if b.isPrefix && (!g.isPrefix || g.pattern.utf8.count > b.pattern.utf8.count) { best = g }
        }
        return best
    }
}

extension Role {
    /// Owner over editor over viewer over none: the stronger of a stored and a granted role applies.
    public static func stronger(_ a: Role?, _ b: Role?) -> Role? {
        guard let a else { return b }
        guard let b else { return a }
        return a.rank >= b.rank ? a : b
    }

    private var rank: Int {
        switch self {
        case .owner: 3
        case .editor: 2
        case .viewer: 1
        }
    }
}
