import Glibc
import RewindClient
import RewindCore

/// The loop of `rewind connect`: one `poll` over the keyboard and the
/// server's socket, a redraw when something changed, keys turned into edits
/// and requests of the client.
final class ConnectApp {
    enum Outcome { case quit, refused(ClientError), unreachable(String) }

    private let client: RewindClient
    private let terminal: Terminal
    private var view: DocumentView
    private var writer = ScreenWriter()
    private var keys = KeyDecoder()
    private var dirty = true
    private var quit = false
    private var everReady = false
    private var session: ClientSession { client.session }

    /// How long to keep trying a server never reached, in ms.
    private let connectTimeoutMs: Int64
    private let started = RewindClient.now()

    init(client: RewindClient, terminal: Terminal, connectTimeoutMs: Int64) {
        self.client = client
        self.terminal = terminal
        self.connectTimeoutMs = connectTimeoutMs
        view = DocumentView(doc: client.session.options.doc, user: client.session.options.user, connection: "connecting")
        client.onChange = { [unowned self] change in self.changed(change) }
    }

    func run() -> Outcome {
        while !quit {
            let wait = client.tick()
            if case let .closed(e) = session.status, !everReady { return .refused(e) }
            // A server never reached is given up after the timeout (one that was
            // reached and went away is waited for: it comes back).
            if !everReady, case let .disconnected(reason) = session.status,
               RewindClient.now() - started >= connectTimeoutMs {
                return .unreachable(reason)
            }
            var fds = [pollfd(fd: 0, events: Int16(POLLIN), revents: 0)]
            if let d = client.descriptor { fds.append(d) }
            if dirty { draw() }
            let n = poll(&fds, nfds_t(fds.count), min(wait, 1000))
            if Terminal.resized != 0 {
                Terminal.resized = 0
                writer.invalidate()
                dirty = true
            }
            guard n > 0 else { continue }
            if fds.count > 1, fds[1].revents != 0 { client.handle(fds[1].revents) }
            if fds[0].revents & Int16(POLLIN) != 0 {
                for k in keys.decode(terminal.readInput()) { press(k) }
            }
            client.flush()
        }
        return .quit
    }

    private func draw() {
        dirty = false
        let (cols, rows) = terminal.size
        let canvas = view.draw(session, cols: cols, rows: rows)
        terminal.write(writer.output(canvas))
    }

    private func changed(_ change: ClientSession.Change) {
        dirty = true
        switch change {
        case .status:
            switch session.status {
            case .connecting: view.connection = "connecting"
            case .ready:
                view.connection = "connected"
                if !everReady { everReady = true; focusFirst() }
            case let .disconnected(reason):
                guard everReady else {
                    view.message = ("cannot reach the server yet (\(reason)); trying again…", true)
                    break
                }
                view.connection = "reconnecting"
                view.message = ("connection lost (\(reason)); reconnecting…", true)
            case let .closed(e):
                view.connection = "closed"
                view.message = ("\(e.code): \(e.message) — Ctrl-Q to quit", true)
            }
        case let .failed(request, e):
            view.message = ("\(request): \(e.code): \(e.message)", true)
        default:
            break
        }
    }

    // MARK: Keys

    private func press(_ k: KeyPress) {
        dirty = true
        if k == .ctrl("q") || k == .ctrl("c") { quit = true; return }
        if view.showsHelp { view.showsHelp = false; return }
        if k == .f1 || (k == .text("?") && selection == nil) { view.showsHelp = true; return }
        if let p = DocumentView.shownPrompt(session.prompts) { return answer(p, k) }
        view.message = nil
        switch k {
        case .ctrl("z"): session.undo()
        case .ctrl("y"): session.redo()
        case .ctrl("s"): session.shake()
        case .tab: focusNext()
        case let .text(t): replaceSelection(with: Array(t.unicodeScalars))
        case .enter: replaceSelection(with: ["\n"])
        case .backspace: deleteBackward()
        case .delete: deleteForward()
        case .left, .right, .home, .end, .up, .down: moveCaret(k)
        default: break
        }
    }

    /// In a prompt: 1–9 pick an action, Esc cancels (when the prompt can be cancelled).
    private func answer(_ p: PresentedPrompt, _ k: KeyPress) {
        var chosen: PresentedPrompt.Action?
        if case let .text(t) = k, let n = Int(t), (1...p.actions.count).contains(n) { chosen = p.actions[n - 1] }
        if k == .escape { chosen = p.actions.first { $0.id == "cancel" } }
        if let a = chosen { session.respond(prompt: p.id, action: a.id) }
    }

    /// Focusable nodes in drawing order (depth first, back to front).
    private var focusable: [Key] {
        let d = session.document.view
        var out: [Key] = []
        func visit(_ id: Key) {
            for c in d[id]?.children ?? [] {
                if d[c]?.focusable == true { out.append(c) }
                visit(c)
            }
        }
        visit(Document.rootID)
        return out
    }

    private func focusFirst() {
        if session.focused == nil, let first = focusable.first { session.focus(first) }
        if focusable.isEmpty { view.message = ("nothing here can be focused (no node with focusable: true)", false) }
    }

    private func focusNext() {
        let all = focusable
        guard !all.isEmpty else { return }
        let i = session.focused.flatMap { all.firstIndex(of: $0) }.map { ($0 + 1) % all.count } ?? 0
        session.focus(all[i])
    }

    private var selection: LocalDocument.Selection? {
        guard let node = session.focused, let s = session.document.selection, s.node == node,
              session.document.view[node] != nil else { return nil }
        return s
    }

    private func replaceSelection(with text: [Unicode.Scalar]) {
        guard let s = selection else { return noFocus() }
        var ops: [Op] = []
        if s.end > s.start { ops.append(.remove(s.node, pos: s.start, len: s.end - s.start)) }
        if !text.isEmpty { ops.append(.insert(s.node, pos: s.start, text: text)) }
        edit(ops, caret: .init(node: s.node, start: s.start + text.count, end: s.start + text.count))
    }

    private func deleteBackward() {
        guard let s = selection else { return noFocus() }
        if s.end > s.start { return replaceSelection(with: []) }
        guard s.start > 0 else { return }
        edit([.remove(s.node, pos: s.start - 1, len: 1)], caret: .init(node: s.node, start: s.start - 1, end: s.start - 1))
    }

    private func deleteForward() {
        guard let s = selection, let n = session.document.view[s.node] else { return noFocus() }
        if s.end > s.start { return replaceSelection(with: []) }
        guard s.start < n.text.count else { return }
        edit([.remove(s.node, pos: s.start, len: 1)], caret: s)
    }

    private func edit(_ ops: [Op], caret: LocalDocument.Selection) {
        guard !ops.isEmpty else { return }
        do {
            try session.edit(ops)
            session.select(caret)
        } catch {
            view.message = ("\(error.code.rawValue): \(error.message)", true)
        }
    }

    private func moveCaret(_ k: KeyPress) {
        guard let s = selection, let n = session.document.view[s.node] else { return noFocus() }
        let text = n.text
        var p = s.start
        switch k {
        case .left: p = max(0, s.start - 1)
        case .right: p = min(text.count, s.end + 1)
        case .home: p = (text[..<s.start].lastIndex(of: "\n").map { $0 + 1 }) ?? 0
        case .end: p = text[s.start...].firstIndex(of: "\n") ?? text.count
        case .up, .down:
            let lineStart = (text[..<s.start].lastIndex(of: "\n").map { $0 + 1 }) ?? 0
            let column = s.start - lineStart
            if k == .up {
                guard lineStart > 0 else { p = 0; break }
                let prevStart = (text[..<(lineStart - 1)].lastIndex(of: "\n").map { $0 + 1 }) ?? 0
                p = min(prevStart + column, lineStart - 1)
            } else {
                guard let nl = text[s.start...].firstIndex(of: "\n") else { p = text.count; break }
                let nextEnd = text[(nl + 1)...].firstIndex(of: "\n") ?? text.count
                p = min(nl + 1 + column, nextEnd)
            }
        default: break
        }
        session.select(.init(node: s.node, start: p, end: p))
    }

    private func noFocus() {
        view.message = ("nothing is focused: Tab focuses the next focusable node", false)
    }
}
