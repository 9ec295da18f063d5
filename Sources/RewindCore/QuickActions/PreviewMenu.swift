/// The actions a preview offers (PROTOCOL.md "Quick actions and previews"),
/// like `UIPreviewAction`s under a peeked view: what the caller's role and the
/// previewed version allow, titled in the terminal's locale.
public struct PreviewAction: Sendable, Equatable {
    public enum Style: String, Sendable { case `default`, destructive }

    public var id: String
    public var title: String
    public var style: Style
    /// A group's sub-actions (a `UIPreviewActionGroup`); empty for a plain action.
    public var actions: [PreviewAction]

    public init(id: String, title: String, style: Style = .default, actions: [PreviewAction] = []) {
        self.id = id
        self.title = title
        self.style = style
        self.actions = actions
    }

    public var json: JSON {
        .obj([("id", .string(id)), ("title", .string(title)), ("style", .string(style.rawValue)),
              ("actions", actions.isEmpty ? nil : .array(actions.map(\.json)))])
    }
}

public enum PreviewMenu {
    public static let open = "open"
    public static let restore = "restore"
    public static let share = "share"
    public static let shareEditor = "share_editor"
    public static let shareViewer = "share_viewer"

    /// Built-in actions: Open always; Restore This Version when the preview is
    /// of an earlier version and the role may edit; the Share group for the owner.
    public static func actions(role: Role, version: Int64, head: Int64, locale: String) -> [PreviewAction] {
        func t(_ w: String) -> String { Titles.word(w, locale: locale) }
        var out = [PreviewAction(id: open, title: t("Open"))]
        if version < head && role.allows(.edit) {
            out.append(PreviewAction(id: restore, title: t("Restore This Version"), style: .destructive))
        }
        if role.allows(.share) {
            out.append(PreviewAction(id: share, title: t("Share"), actions: [
                PreviewAction(id: shareEditor, title: t("Share as Editor")),
                PreviewAction(id: shareViewer, title: t("Share as Viewer")),
            ]))
        }
        return out
    }

    /// Whether `action` can be chosen (a group itself cannot; its sub-actions can).
    public static func find(_ action: String, in actions: [PreviewAction]) -> PreviewAction? {
        for a in actions {
            if a.id == action && a.actions.isEmpty { return a }
            if let sub = find(action, in: a.actions) { return sub }
        }
        return nil
    }
}
