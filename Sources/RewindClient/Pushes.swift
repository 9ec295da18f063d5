import RewindCore

/// Another terminal's focus and selection in a document (the `presence` push).
public struct PeerPresence: Sendable, Equatable {
    public var user: String
    public var client: String
    public var node: String?
    public var start: Int?
    public var end: Int?

    init?(_ o: JSONObject) {
        guard let user = o["user"]?.stringValue, let client = o["client"]?.stringValue else { return nil }
        self.user = user
        self.client = client
        node = o["node"]?.stringValue
        let s = o["selection"]?.objectValue
        start = s?["start"]?.intValue.map(Int.init)
        end = s?["end"]?.intValue.map(Int.init)
    }
}

/// An alert the server presents to this terminal (the `prompt` push), until a `dismiss`.
public struct PresentedPrompt: Sendable, Equatable {
    public struct Action: Sendable, Equatable {
        public var id: String
        public var title: String
        /// `default`, `cancel` or `destructive`.
        public var style: String
    }

    public var id: String
    public var doc: String?
    public var title: String
    public var message: String
    public var style: String
    /// `normal` or `alert`: an alert shows above a normal prompt.
    public var level: String
    public var reason: String
    public var actions: [Action]

    init?(_ o: JSONObject, doc: String?) {
        guard let id = o["id"]?.stringValue, let title = o["title"]?.stringValue else { return nil }
        self.id = id
        self.doc = doc
        self.title = title
        message = o["message"]?.stringValue ?? ""
        style = o["style"]?.stringValue ?? "alert"
        level = o["level"]?.stringValue ?? "normal"
        reason = o["reason"]?.stringValue ?? ""
        actions = (o["actions"]?.arrayValue ?? []).compactMap { a in
            guard let a = a.objectValue, let id = a["id"]?.stringValue else { return nil }
            return Action(id: id, title: a["title"]?.stringValue ?? id, style: a["style"]?.stringValue ?? "default")
        }
    }
}

/// What this terminal's undo and redo would do (the `prompt_state` push).
public struct PromptState: Sendable, Equatable {
    public var scope: String?
    public var canUndo = false
    public var canRedo = false
    public var undoTitle = "Undo"
    public var redoTitle = "Redo"

    public init() {}

    init(_ o: JSONObject) {
        scope = o["scope"]?.stringValue
        canUndo = o["can_undo"]?.boolValue ?? false
        canRedo = o["can_redo"]?.boolValue ?? false
        undoTitle = o["undo_title"]?.stringValue ?? "Undo"
        redoTitle = o["redo_title"]?.stringValue ?? "Redo"
    }
}

/// An error reply, or a failure of the connection, as the client sees it.
public struct ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A protocol error code (`conflict`, `not_found`, …), or `disconnected`.
    public var code: String
    public var message: String
    public var details: JSON?

    public init(code: String, message: String, details: JSON? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    init(reply o: JSONObject) {
        let e = o["error"]?.objectValue
        code = e?["code"]?.stringValue ?? "internal"
        message = e?["message"]?.stringValue ?? "the server gave no reason"
        details = e?["details"]
    }

    static let disconnected = ClientError(code: "disconnected", message: "the connection to the server was lost")

    public var description: String { "\(code): \(message)" }
}
