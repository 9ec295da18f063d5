/// Home-screen quick actions (SPEC section 7, PROTOCOL.md "Quick actions and
/// previews"): what a terminal offers to launch into, per user.
///
/// Static items come from the server's configuration; dynamic items fill the
/// rest from the log — the documents the user edited most recently — the way
/// UIKit shows an app's static `UIApplicationShortcutItem`s first and its
/// dynamic ones after them, at most four in all.
public struct ShortcutItem: Sendable, Equatable {
    public static let newDocument = "new_document"
    public static let openDocument = "open_document"
    /// Types a server knows how to run (`shortcut`).
    public static let types: Set<String> = [newDocument, openDocument]

    public var type: String
    public var title: String
    public var subtitle: String?
    public var icon: String?
    public var info: JSONObject
    /// `title` is a word of `Titles` shown in each terminal's locale (the built-in default).
    public var localized = false
    /// Computed from the log (a recent document), not configured.
    public var isDynamic = false
    /// For a dynamic item: who `subtitle` names (the last other editor), to tell when it is stale.
    public var subtitleUser: Int64?

    public init(type: String, title: String, subtitle: String? = nil, icon: String? = nil, info: JSONObject = JSONObject()) {
        self.type = type
        self.title = title
        self.subtitle = subtitle
        self.icon = icon
        self.info = info
    }

    /// The document an `open_document` item opens.
    public var document: String? { type == Self.openDocument ? info["doc"]?.stringValue : nil }

    public func json(locale: String) -> JSON {
        .obj([("type", .string(type)), ("title", .string(localized ? Titles.word(title, locale: locale) : title)),
              ("subtitle", subtitle.map { .string($0) }), ("icon", icon.map { .string($0) }), ("info", .object(info))])
    }
}

/// A document as the log remembers a user's edits of it (newest first).
public struct RecentDocument: Sendable, Equatable {
    public var doc: String
    public var title: String?
    /// The last user other than this one who edited it, if any.
    public var lastOtherEditor: (id: Int64, name: String)?

    public init(doc: String, title: String?, lastOtherEditor: (id: Int64, name: String)?) {
        self.doc = doc
        self.title = title
        self.lastOtherEditor = lastOtherEditor
    }

    public static func == (a: RecentDocument, b: RecentDocument) -> Bool {
        a.doc == b.doc && a.title == b.title && a.lastOtherEditor?.id == b.lastOtherEditor?.id && a.lastOtherEditor?.name == b.lastOtherEditor?.name
    }
}

public enum Shortcuts {
    public static let maxItems = 4
    /// The configuration when none is given: one static item, "New Document".
    public static let defaultStatic: [ShortcutItem] = {
        var item = ShortcutItem(type: ShortcutItem.newDocument, title: "New Document", icon: "compose")
        item.localized = true
        return [item]
    }()

    /// Static items first (as configured), then recent documents not already
    /// among them, at most `maxItems`.
    public static func list(static items: [ShortcutItem], recent: [RecentDocument]) -> [ShortcutItem] {
        var out = Array(items.prefix(maxItems))
        var listed = Set(out.compactMap(\.document))
        for r in recent where out.count < maxItems && !listed.contains(r.doc) {
            listed.insert(r.doc)
            var item = ShortcutItem(type: ShortcutItem.openDocument, title: r.title ?? r.doc, subtitle: r.lastOtherEditor?.name,
                                    icon: "document", info: JSONObject([("doc", .string(r.doc))]))
            item.isDynamic = true
            item.subtitleUser = r.lastOtherEditor?.id
            out.append(item)
        }
        return out
    }

    /// How many recent documents a list may need (static items take the rest of the places).
    public static func recentNeeded(static items: [ShortcutItem]) -> Int { maxItems + items.count }

    /// Whether `user`'s list may change because `editor` edited `doc`: the
    /// user's own edit of a document that is not already their newest, or
    /// someone else's edit of a listed document whose subtitle names another.
    public static func mayChange(_ items: [ShortcutItem], user: Int64, doc: String, editor: Int64) -> Bool {
        let dynamic = items.filter(\.isDynamic)
        if editor == user {
            if dynamic.isEmpty && items.count >= maxItems { return false }  // no place for a recent document
            return dynamic.first?.document != doc
        }
        guard let listed = dynamic.first(where: { $0.document == doc }) else { return false }
        return listed.subtitleUser != editor
    }

    /// Static items from the configuration file: a JSON array of
    /// `{type, title, subtitle?, icon?, info?}` (at most `maxItems`); types
    /// are those a server runs (`new_document`, `open_document` with `info.doc`).
    public static func parseStatic(_ json: JSON) throws(RewindError) -> [ShortcutItem] {
        guard let array = json.arrayValue else { throw .badRequest("shortcuts: the file must hold a JSON array of items") }
        guard array.count <= maxItems else { throw .badRequest("shortcuts: at most \(maxItems) static items (the file has \(array.count))") }
        var items: [ShortcutItem] = []
        for (i, v) in array.enumerated() {
            guard let o = v.objectValue else { throw .badRequest("shortcuts: item \(i) is not an object") }
            guard let type = o["type"]?.stringValue, ShortcutItem.types.contains(type) else {
                throw .badRequest("shortcuts: item \(i) needs `type` \"new_document\" or \"open_document\"")
            }
            guard let title = o["title"]?.stringValue, !title.isEmpty, title.utf8.count <= 256 else {
                throw .badRequest("shortcuts: item \(i) needs a `title` of 1 to 256 bytes")
            }
            for field in ["subtitle", "icon"] where o[field] != nil && o[field]?.stringValue == nil && o[field]?.isNull != true {
                throw .badRequest("shortcuts: item \(i): `\(field)` must be a string")
            }
            let info = o["info"]?.objectValue ?? JSONObject()
            if o["info"] != nil && o["info"]?.objectValue == nil { throw .badRequest("shortcuts: item \(i): `info` must be an object") }
            if type == ShortcutItem.openDocument && (info["doc"]?.stringValue ?? "").isEmpty {
                throw .badRequest("shortcuts: item \(i): an open_document item needs `info.doc`")
            }
            items.append(ShortcutItem(type: type, title: title, subtitle: o["subtitle"]?.stringValue, icon: o["icon"]?.stringValue, info: info))
        }
        return items
    }
}
