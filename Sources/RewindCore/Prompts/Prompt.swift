/// An alert pushed to a terminal (SPEC section 6, PROTOCOL.md `prompt`):
/// UIAlertController's model — title, message, style, actions — plus the
/// level it is shown at, a haptic-style feedback hint and why it exists.
public struct Prompt: Sendable, Equatable {
    public enum Style: String, Sendable { case alert, sheet }
    /// `alert` shows above `normal`, like a dedicated alert window.
    public enum Level: String, Sendable, CaseIterable, Comparable {
        case normal, alert
        public static func < (a: Level, b: Level) -> Bool { a == .normal && b == .alert }
    }
    public enum Feedback: String, Sendable { case success, warning, error }

    public struct Action: Sendable, Equatable {
        public enum Style: String, Sendable { case `default`, cancel, destructive }
        public var id: String
        public var title: String
        public var style: Style
        public init(id: String, title: String, style: Style) { self.id = id; self.title = title; self.style = style }
        public var json: JSON { .obj([("id", .string(id)), ("title", .string(title)), ("style", .string(style.rawValue))]) }
    }

    /// Built-in action ids (PROTOCOL.md).
    public enum ActionID {
        public static let undo = "undo", redo = "redo", cancel = "cancel"
        public static let undoAnyway = "undo_anyway", redoAnyway = "redo_anyway"
    }

    public var id: String
    public var title: String
    public var message: String
    public var style: Style
    public var level: Level
    public var feedback: Feedback?
    /// Why the prompt exists: `shake`, `conflict`, `error`, or a caller's own word.
    public var reason: String
    public var actions: [Action]
    /// Extra fields for the push (the conflicts behind a conflict prompt, the error behind an error prompt).
    public var extra: [(String, JSON)] = []

    /// A prompt needs at least one action, distinct action ids, and at most one cancel (as UIAlertController).
    public init(id: String, title: String, message: String = "", style: Style = .alert, level: Level = .normal,
                feedback: Feedback? = nil, reason: String, actions: [Action]) throws(RewindError)
    {
        guard !actions.isEmpty else { throw RewindError(.internal, "a prompt needs at least one action") }
        guard actions.filter({ $0.style == .cancel }).count <= 1 else { throw RewindError(.internal, "a prompt has at most one cancel action") }
        guard Set(actions.map(\.id)).count == actions.count else { throw RewindError(.internal, "prompt action ids must be distinct") }
        self.init(builtIn: id, title: title, message: message, style: style, level: level, feedback: feedback, reason: reason, actions: actions)
    }

    /// A prompt the server builds itself from fixed actions (one or more,
    /// distinct ids, at most one cancel: PromptTests checks each kind).
    init(builtIn id: String, title: String, message: String = "", style: Style = .alert, level: Level = .normal,
         feedback: Feedback? = nil, reason: String, actions: [Action])
    {
        self.id = id; self.title = title; self.message = message; self.style = style; self.level = level
        self.feedback = feedback; self.reason = reason; self.actions = actions
    }

    public func action(_ id: String) -> Action? { actions.first { $0.id == id } }

    public var json: JSON {
        .obj([("id", .string(id)), ("title", .string(title)), ("message", .string(message)), ("style", .string(style.rawValue)),
              ("level", .string(level.rawValue)), ("feedback", feedback.map { .string($0.rawValue) } ?? .null),
              ("reason", .string(reason)), ("actions", .array(actions.map(\.json)))] + extra.map { ($0.0, Optional($0.1)) })
    }

    public static func == (a: Prompt, b: Prompt) -> Bool { a.json == b.json }
}
