/// The prompts the server builds itself: shake to undo (NSUndoManager's
/// alert, by its four cases), the conflict of a selective undo ("Undo Anyway"),
/// and the error prompt of a rejected request.
public enum UndoPrompts {
    /// What a history can do now, with the groups a prompt's answer must still find on top.
    public struct Tops: Sendable {
        public var undo: (group: String, action: String?)?
        public var redo: (group: String, action: String?)?
        public init(undo: (group: String, action: String?)?, redo: (group: String, action: String?)?) {
            self.undo = undo
            self.redo = redo
        }
    }

    /// The shake prompt, or nil when there is nothing to undo or redo:
    /// undo only → "Undo X" [Cancel, Undo]; redo only → "Redo X" [Cancel, Redo];
    /// both → "Undo X" [Undo, "Redo Y", Cancel] (UIKit's order for each case).
    public static func shake(id: String, _ tops: Tops, locale: String) -> Prompt? {
        let cancel = Prompt.Action(id: Prompt.ActionID.cancel, title: Titles.word("Cancel", locale: locale), style: .cancel)
        let undoVerb = Prompt.Action(id: Prompt.ActionID.undo, title: Titles.word("Undo", locale: locale), style: .default)
        let redoVerb = Prompt.Action(id: Prompt.ActionID.redo, title: Titles.word("Redo", locale: locale), style: .default)
        let title: String, actions: [Prompt.Action]
        switch (tops.undo, tops.redo) {
        case let (u?, nil):
            title = Titles.title(verb: "Undo", action: u.action, locale: locale)
            actions = [cancel, undoVerb]
        case let (nil, r?):
            title = Titles.title(verb: "Redo", action: r.action, locale: locale)
            actions = [cancel, redoVerb]
        case let (u?, r?):
            title = Titles.title(verb: "Undo", action: u.action, locale: locale)
            let redoNamed = Prompt.Action(id: Prompt.ActionID.redo, title: Titles.title(verb: "Redo", action: r.action, locale: locale),
                                          style: .default)
            actions = [undoVerb, redoNamed, cancel]
        case (nil, nil):
            return nil
        }
        return Prompt(builtIn: id, title: title, style: .alert, level: .normal, feedback: .success, reason: "shake", actions: actions)
    }

    /// "Undo Move changes what alice did since" [Undo Anyway (destructive), Cancel].
    public static func conflict(id: String, kind: EventKind, action: String?, names: [String], conflicts: JSON,
                                locale: String) -> Prompt
    {
        let verb = kind == .redo ? "Redo" : "Undo"
        let title = Titles.conflict(Titles.title(verb: verb, action: action, locale: locale), names: names, locale: locale)
        let anyway = Prompt.Action(id: kind == .redo ? Prompt.ActionID.redoAnyway : Prompt.ActionID.undoAnyway,
                                   title: Titles.word(verb + " Anyway", locale: locale), style: .destructive)
        let cancel = Prompt.Action(id: Prompt.ActionID.cancel, title: Titles.word("Cancel", locale: locale), style: .cancel)
        var p = Prompt(builtIn: id, title: title, style: .alert, level: .normal, feedback: .warning, reason: "conflict",
                            actions: [anyway, cancel])
        p.extra = [("conflicts", conflicts)]
        return p
    }

    /// A request rejected for its content, shown at `alert` level (when the terminal asked for these at hello).
    public static func error(id: String, _ e: RewindError, request: String, re: Int64?, locale: String) -> Prompt {
        var p = Prompt(builtIn: id, title: Titles.word("Error", locale: locale), message: e.message, style: .alert, level: .alert,
                            feedback: .error, reason: "error",
                            actions: [.init(id: Prompt.ActionID.cancel, title: Titles.word("OK", locale: locale), style: .cancel)])
        p.extra = [("error", e.json), ("request", .string(request)), ("re", re.map { .int($0) } ?? .null)]
        return p
    }
}
