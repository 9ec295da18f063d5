/// Undo and redo titles ("Undo Move"), localized per terminal (SPEC section 4).
///
/// The verbs and the server's own action names (Typing, Move, Delete, Restore
/// Version) are translated; action names given by clients are shown as given.
public enum Titles {
    public static let locales = ["en", "zh-Hant", "zh-Hans", "ja"]

    /// The server's own action names, as recorded in the log (always English).
    public enum ServerAction {
        public static let typing = "Typing"
        public static let move = "Move"
        public static let delete = "Delete"
        public static let restore = "Restore Version"
        public static let paste = "Paste"
        static let all: Set<String> = [typing, move, delete, restore, paste]
    }

    private static let table: [String: [String: String]] = [
        "en": ["Open": "Open", "Restore This Version": "Restore This Version", "Share": "Share", "Share as Editor": "Share as Editor", "Share as Viewer": "Share as Viewer", "New Document": "New Document",
               "Undo": "Undo", "Redo": "Redo", "Cancel": "Cancel", "Typing": "Typing", "Move": "Move",
               "Delete": "Delete", "Restore Version": "Restore Version", "Copy": "Copy", "Paste": "Paste",
               "Select All": "Select All", "OK": "OK", "Error": "Error", "Undo Anyway": "Undo Anyway", "Redo Anyway": "Redo Anyway",
               "conflict": "%1 changes what %2 did since"],
        "zh-Hant": ["Open": "打開", "Restore This Version": "回復此版本", "Share": "分享", "Share as Editor": "以編輯者身分分享", "Share as Viewer": "以檢視者身分分享", "New Document": "新增文件",
                    "Undo": "還原", "Redo": "重做", "Cancel": "取消", "Typing": "輸入", "Move": "移動",
                    "Delete": "刪除", "Restore Version": "回復版本", "Copy": "拷貝", "Paste": "貼上",
                    "Select All": "全選", "OK": "好", "Error": "錯誤", "Undo Anyway": "仍要還原", "Redo Anyway": "仍要重做",
                    "conflict": "「%1」會更改 %2 之後所做的變更"],
        "zh-Hans": ["Open": "打开", "Restore This Version": "恢复此版本", "Share": "共享", "Share as Editor": "以编辑者身份共享", "Share as Viewer": "以查看者身份共享", "New Document": "新建文稿",
                    "Undo": "撤销", "Redo": "重做", "Cancel": "取消", "Typing": "输入", "Move": "移动",
                    "Delete": "删除", "Restore Version": "恢复版本", "Copy": "拷贝", "Paste": "粘贴",
                    "Select All": "全选", "OK": "好", "Error": "错误", "Undo Anyway": "仍要撤销", "Redo Anyway": "仍要重做",
                    "conflict": "“%1”会更改 %2 之后所做的更改"],
        "ja": ["Open": "開く", "Restore This Version": "このバージョンを復元", "Share": "共有", "Share as Editor": "編集者として共有", "Share as Viewer": "閲覧者として共有", "New Document": "新規書類",
               "Undo": "取り消す", "Redo": "やり直す", "Cancel": "キャンセル", "Typing": "入力", "Move": "移動",
               "Delete": "削除", "Restore Version": "バージョンを復元", "Copy": "コピー", "Paste": "ペースト",
               "Select All": "すべてを選択", "OK": "OK", "Error": "エラー", "Undo Anyway": "それでも取り消す",
               "Redo Anyway": "それでもやり直す", "conflict": "「%1」は %2 がその後に行った変更を変えます"],
    ]

    /// The supported locale closest to `requested` (`zh-TW` → `zh-Hant`, `ja-JP` → `ja`), else `en`.
    public static func locale(_ requested: String?) -> String {
        guard let r = requested.map({ String($0.lowercased().map { $0 == "_" ? "-" : $0 }) }) else { return "en" }
        if r.hasPrefix("zh") {
            if r.contains("hant") || r.hasSuffix("-tw") || r.hasSuffix("-hk") || r.hasSuffix("-mo") { return "zh-Hant" }
            return "zh-Hans"
        }
        if r == "ja" || r.hasPrefix("ja-") { return "ja" }
        return "en"
    }

    /// A word of the table ("Undo", "Cancel", …) in `locale`.
    public static func word(_ w: String, locale: String) -> String { table[locale]?[w] ?? table["en"]![w] ?? w }

    /// "Undo Move", "還原 輸入", or the bare verb when the group has no name.
    public static func title(verb: String, action: String?, locale: String) -> String {
        let v = word(verb, locale: locale)
        guard let action, !action.isEmpty else { return v }
        let a = ServerAction.all.contains(action) ? word(action, locale: locale) : action
        return "\(v) \(a)"
    }

    /// The title of a conflict prompt: "Undo Move changes what alice did since".
    public static func conflict(_ title: String, names: [String], locale: String) -> String {
        let who = names.isEmpty ? "?" : names.joined(separator: ", ")
        // Split first so that neither the title nor a name is read as a placeholder.
        return word("conflict", locale: locale).split(separator: "%1", omittingEmptySubsequences: false)
            .map { $0.split(separator: "%2", omittingEmptySubsequences: false).joined(separator: who) }
            .joined(separator: title)
    }
}
