/// Actions and who handles them, walked along the responder chain.
///
/// Handlers register per action and per level (any node, the document, the
/// session, the application); the walk asks each link of the chain in turn,
/// and the first handler that claims the action there wins, so adding an
/// action never changes the walk. A handler claims by returning a `Verdict`
/// (possibly disabled: "Undo" greyed out still belongs to the nearest undo
/// history, as in UIKit's editing menu) or passes by returning nil.
///
/// Generic over what handlers look at (`Context`) and what the caller does
/// with the winner (`Payload`), so the walk stays pure and testable.
public struct ActionTable<Context, Payload> {
    public enum Level: Sendable, Hashable { case node, document, session, application }

    public struct Verdict: Sendable, Equatable {
        public var enabled: Bool
        public var title: String
        public init(enabled: Bool, title: String) { self.enabled = enabled; self.title = title }
    }

    public struct Claim {
        public var responder: Responder
        public var verdict: Verdict
        public var payload: Payload
    }

    private struct Handler {
        var level: Level
        var claim: (Responder, Context) -> Verdict?
        var payload: Payload
    }

    private var handlers: [String: [Handler]] = [:]

    public init() {}

    /// Adds a handler of `action` at `level`. Several handlers of one action
    /// at one level are asked in the order they were registered.
    public mutating func register(_ action: String, at level: Level, payload: Payload,
                                  claim: @escaping (Responder, Context) -> Verdict?)
    {
        handlers[action, default: []].append(Handler(level: level, claim: claim, payload: payload))
    }

    /// The first link of `chain` whose level has a handler claiming `action`.
    public func resolve(_ action: String, along chain: [Responder], _ context: Context) -> Claim? {
        guard let list = handlers[action] else { return nil }
        for responder in chain {
            let level = Self.level(of: responder)
            for h in list where h.level == level {
                if let v = h.claim(responder, context) { return Claim(responder: responder, verdict: v, payload: h.payload) }
            }
        }
        return nil
    }

    static func level(of r: Responder) -> Level {
        switch r {
        case .node: return .node
        case .document: return .document
        case .session: return .session
        case .application: return .application
        }
    }
}
