#if SWIFT_PACKAGE
import RewindLocalizations
#endif

/// Undo and redo titles ("Undo Move", "移動を取り消す"), localized per terminal
/// (SPEC section 4), and the other words a terminal is shown.
///
/// The words live in the package's localization resources (RewindLocalizations:
/// `<locale>.lproj/Localizable.strings`), not here. A title is its locale's
/// pattern ("Undo %@", "%@を取り消す") around the action's name: the server's own
/// action names (Typing, Move, Delete, Restore Version, Paste) are translated,
/// names given by clients are shown as given.
public enum Titles {
    /// The server's own action names, as recorded in the log (always English).
    public enum ServerAction {
        public static let typing = "Typing"
        public static let move = "Move"
        public static let delete = "Delete"
        public static let restore = "Restore Version"
        public static let paste = "Paste"
        static let all: Set<String> = [typing, move, delete, restore, paste]
    }

    /// The locales the resources provide.
    public static var locales: [String] { Wording.shipped.locales }

    /// The provided locale closest to `requested` (`zh-TW` → `zh-Hant`, `ja-JP` → `ja`,
    /// `de-AT` → `de`), else the default (`en`).
    public static func locale(_ requested: String?) -> String { Wording.shipped.locale(requested) }

    /// A word of the resources ("Undo", "Cancel", …) in `locale`; the English key if no table has it.
    public static func word(_ w: String, locale: String) -> String { Wording.shipped.word(w, locale: locale) }

    /// "Undo Move", "移動を取り消す", "還原「輸入」", or the bare verb when the group has no name.
    public static func title(verb: String, action: String?, locale: String) -> String {
        Wording.shipped.title(verb: verb, action: action, locale: locale)
    }

    /// The title of a conflict prompt: "Undo Move changes what alice did since".
    public static func conflict(_ title: String, names: [String], locale: String) -> String {
        Wording.shipped.conflict(title, names: names, locale: locale)
    }
}

/// Titles and words from one set of localization tables (the package's own, or any bundle's).
public struct Wording: Sendable {
    public let tables: [String: [String: String]]
    /// The provided locales by their lower-cased tags (what `locale` matches against, every hello).
    private let byLowercased: [String: String]

    public static let shipped = Wording(Localizations.shipped)

    public init(_ localizations: Localizations) {
        tables = localizations.tables
        byLowercased = Dictionary(tables.keys.map { ($0.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })
    }

    public var locales: [String] { tables.keys.sorted() }

    public func locale(_ requested: String?) -> String {
        LocaleMatch.best(requested, among: byLowercased, default: Localizations.defaultLocale)
    }

    public func word(_ key: String, locale: String) -> String { word(key, locale: locale, english: key) }

    public func title(verb: String, action: String?, locale: String) -> String {
        guard let action, !action.isEmpty else { return word(verb, locale: locale) }
        // A locale without the pattern shows the whole title in the default one, not half of each.
        let locale = tables[locale]?[verb + " %@"] == nil ? Localizations.defaultLocale : locale
        let name = Titles.ServerAction.all.contains(action) ? word("action:" + action, locale: locale, english: action) : action
        return Placeholders.fill(word(verb + " %@", locale: locale), [name])
    }

    public func conflict(_ title: String, names: [String], locale: String) -> String {
        let who = names.isEmpty ? "?" : names.joined(separator: ", ")
        return Placeholders.fill(word("%1$@ changes what %2$@ did since", locale: locale), [title, who])
    }

    private func word(_ key: String, locale: String, english: String) -> String {
        tables[locale]?[key] ?? tables[Localizations.defaultLocale]?[key] ?? english
    }
}

/// `%@` (in order) and `%1$@`, `%2$@` (by position) filled with values that are
/// inserted as they are: a name containing `%@` is not read as a placeholder.
enum Placeholders {
    static func fill(_ pattern: String, _ values: [String]) -> String {
        var out = ""
        var next = 0
        var rest = Substring(pattern)
        while let percent = rest.firstIndex(of: "%") {
            out += rest[..<percent]
            let after = rest[rest.index(after: percent)...]
            if after.hasPrefix("@") {
                out += next < values.count ? values[next] : ""
                next += 1
                rest = after.dropFirst()
            } else if let dollar = after.firstIndex(of: "$"), let n = Int(after[..<dollar]), after[after.index(after: dollar)...].hasPrefix("@") {
                out += n >= 1 && n <= values.count ? values[n - 1] : ""
                rest = after[after.index(dollar, offsetBy: 2)...]
            } else if after.hasPrefix("%") {
                out += "%"
                rest = after.dropFirst()
            } else {
                out += "%"
                rest = after
            }
        }
        return out + rest
    }
}

/// Picks a provided locale for a requested BCP 47 tag: the tag itself, then its
/// language and script (Chinese: the script its region writes, as CLDR's likely
/// subtags say), then its language alone.
enum LocaleMatch {
    /// `byLower`: the provided locales keyed by their lower-cased tags.
    static func best(_ requested: String?, among byLower: [String: String], default fallback: String) -> String {
        guard let requested, !requested.isEmpty else { return fallback }
        let parts = requested.lowercased().split(whereSeparator: { $0 == "-" || $0 == "_" }).map(String.init)
        guard let language = parts.first else { return fallback }
        var script = parts.dropFirst().first { $0.count == 4 }
        if script == nil && language == "zh" {
            let region = parts.dropFirst().first { $0.count == 2 }
            script = ["tw", "hk", "mo"].contains(region ?? "") ? "hant" : "hans"
        }
        var candidates = [parts.joined(separator: "-")]
        if let script { candidates.append(language + "-" + script) }
        candidates.append(language)
        for c in candidates { if let hit = byLower[c] { return hit } }
        return fallback
    }
}
