import RewindCore
import RewindLoop

/// Who is at a terminal: made by a successful `hello`, and from then on what
/// every handler is given — never optional, never half made. The connection
/// under it only carries bytes (`Connection`); what a subsystem keeps per
/// terminal it keeps in its own table keyed by `id` (groups: `OpenGroups`,
/// prompt states: `PromptStates`, scrubs and previews: `PastStates`, the
/// clipboard: `ChainRequests`), dropped when the terminal leaves
/// (`Server.connectionEnded`).
///
/// Identity by signed token and sessions over other transports (an HTTP
/// API) are further kinds of the same thing: whatever authenticated it, a
/// handler sees who, which terminal, and what is open.
final class Session {
    let connection: Connection
    /// The token's owner. Its name changes only when the user is erased (the pseudonym).
    var user: (id: Int64, name: String)
    /// The terminal's client id (`hello` `client`, or one made up): undo groups are per terminal.
    let client: String
    /// Wall-clock time of the `hello` (ms): a take-over announced by another instance closes only older sessions.
    let helloAt: Int64
    var openDocuments: Set<String> = []
    // The small fields last, packed together: every idle terminal holds a
    // session, and 96 bytes is an allocator size class (`IdleFootprintTests`).
    // The user's handle is not kept here (16 bytes): it is the user's name
    // but for a signed token's session, whose table keeps it (`handle`).
    let options: HelloOptions
    /// The locale for titles, as its place in `Session.locales` (a string would be 16 bytes a terminal).
    private let localeIndex: UInt16
    /// Supported locale for titles (`Titles.locale`).
    var locale: String { Session.locales[Int(localeIndex)] }
    /// Every locale a session may have: the provided ones, and the default.
    static let locales: [String] = Titles.locales.contains(Titles.locale(nil))
        ? Titles.locales : Titles.locales + [Titles.locale(nil)]

    init(connection: Connection, user: (id: Int64, name: String), client: String, helloAt: Int64, locale: String, options: HelloOptions) {
        self.connection = connection
        self.user = user
        self.client = client
        self.helloAt = helloAt
        localeIndex = UInt16(Session.locales.firstIndex(of: locale) ?? Session.locales.firstIndex(of: Titles.locale(nil))!)
        self.options = options
    }

    /// The terminal's key in every per-terminal table: its connection's id.
    var id: Int { connection.id }
    var isClosed: Bool { connection.isClosed }
    /// The user's handle (`users.name`), for logs: a signed token's session
    /// may show a display name as `user.name` instead.
    var handle: String { connection.host.handle(of: self) }
    /// Who it is, for logs: "user/client@peer".
    var label: String { "\(handle)/\(client)@\(connection.peer)" }
    var address: String { connection.address }

    // What handlers ask of the connection, said once here.
    func reply(_ bytes: [UInt8]) { connection.reply(bytes) }
    func reply(streaming s: ReplyStream) { connection.reply(streaming: s) }
    @inline(__always) func push(_ bytes: SharedBytes) { connection.push(bytes) }
    func close(reason: String, retry: Bool, message: String) { connection.close(reason: reason, retry: retry, message: message) }
    func processingGoesOn() -> Processing { connection.processingGoesOn() }
    func committing(_ reply: @escaping DocumentRuntime.Reply) -> DocumentRuntime.Reply { connection.committing(reply) }
    func afterOwnCommits(_ body: @escaping () -> Void) { connection.afterOwnCommits(body) }

    /// Answers `r` with an error; a request rejected for its content also
    /// presents an error prompt when the terminal asked for those at hello.
    func fail(_ r: Request, _ e: RewindError) {
        connection.fail(r, e)
        if options.errorPrompts && Session.promptedErrors.contains(e.code) { connection.host.presentErrorPrompt(e, for: r, to: self) }
    }

    /// Errors about what a request asked for (not framing, not the server's state).
    static let promptedErrors: Set<ErrorCode> = [.badRequest, .notFound, .conflict, .version, .forbidden, .tooLarge]
}

/// `hello`'s options (PROTOCOL.md): shake to undo, error prompts, gesture bindings.
struct HelloOptions {
    var gestures = HelloOptions.defaultGestures
    var shakeToEdit = true
    var errorPrompts = false

    init(shakeToEdit: Bool = true, errorPrompts: Bool = false, gestures: [String: String] = HelloOptions.defaultGestures) {
        self.shakeToEdit = shakeToEdit
        self.errorPrompts = errorPrompts
        self.gestures = gestures
    }
    static let defaultGestures = ["two_finger_tap": "undo", "three_finger_tap": "redo"]
}
