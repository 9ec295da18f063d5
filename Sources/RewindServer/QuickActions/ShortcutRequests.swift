import RewindCore
import RewindStore

/// A quick action chosen by the user: `{type, info}`, sent with `shortcut` or
/// at `hello` (the app was launched from it).
struct LaunchShortcut {
    var type: String
    var info: JSONObject

    init(_ v: JSON) throws(RewindError) {
        guard let o = v.objectValue, let type = o["type"]?.stringValue, !type.isEmpty else {
            throw .badRequest("`shortcut` must be an object {type, info} naming a quick action")
        }
        guard ShortcutItem.types.contains(type) else {
            throw .badRequest("unknown shortcut type \"\(type)\" (this server runs new_document and open_document)",
                              details: ["type": .string(type)])
        }
        if let i = o["info"], !i.isNull, i.objectValue == nil { throw .badRequest("shortcut: `info` must be an object") }
        self.type = type
        info = o["info"]?.objectValue ?? JSONObject()
    }
}

/// `shortcut`, and the quick action an app was launched with (`hello`).
final class ShortcutRequests {
    let store: EventStore
    /// `Server.dispatch`: an open_document shortcut runs as the `open` it stands for, by the same rule (set by `Server.wire`).
    var dispatch: (Request, Session) throws(RewindError) -> Void = { _, _ throws(RewindError) in }
    /// Why `c` may not create a document (nil: it may; `DocumentRequests.creationRefusal`).
    var creationRefusal: (_ doc: String?, _ c: Session) -> RewindError? = { _, _ in nil }

    init(store: EventStore) { self.store = store }

    /// `shortcut {shortcut: {type, info}}`: a quick action chosen on the home screen.
    func shortcut(_ r: Request, _ c: Session) throws(RewindError) {
        guard let v = r.body["shortcut"] else { throw .badRequest("shortcut: missing field `shortcut` ({type, info})") }
        run(try LaunchShortcut(v), answering: r, c)
    }

    /// Runs a quick action as the request `r` (a `shortcut`, or the `hello`
    /// the app was launched with, whose id the result answers, tagged
    /// `"shortcut": true`).
    func run(_ s: LaunchShortcut, answering r: Request, _ c: Session) {
        var answer = r
        if r.type == "hello" { answer.replyTag = [("shortcut", .bool(true))] }
        do throws(RewindError) {
            switch s.type {
            case ShortcutItem.newDocument:
                try newDocument(title: s.info["title"], answering: answer, c)
            default:  // open_document, as `open` (access checked as for `open`)
                guard let doc = s.info["doc"]?.stringValue, !doc.isEmpty else {
                    throw .badRequest("shortcut: an open_document shortcut needs `info.doc`")
                }
                var open = Request(id: answer.id, type: "open", body: JSONObject([("doc", .string(doc))]))
                open.replyTag = answer.replyTag
                try dispatch(open, c)
            }
        } catch {
            c.fail(answer, error)
        }
    }

    /// `new_document`: a document with a fresh id, owned by the caller → `{doc, version: 0}`.
    private func newDocument(title: JSON?, answering r: Request, _ c: Session) throws(RewindError) {
        var name: String?
        if let t = title, !t.isNull {
            guard let s = t.stringValue, s.utf8.count <= 1024 else { throw .badRequest("shortcut: `info.title` must be a string of at most 1024 bytes") }
            name = s
        }
        if let refusal = creationRefusal(nil, c) { throw refusal }
        let doc = "doc-" + UUID.random()
        let processing = c.processingGoesOn()  // the terminal's next request may be about the new document
        store.createDocument(doc, title: name, owner: c.user.id) { result in
            defer { processing.end() }
            switch result {
            case let .failure(e): c.fail(r, e)
            case .success(false): c.fail(r, RewindError(.internal, "a fresh document id was taken: \(doc)"))
            case .success(true): c.reply(Message.reply(to: r, [("doc", .string(doc)), ("version", 0), ("title", name.map { .string($0) })]))
            }
        }
    }
}
