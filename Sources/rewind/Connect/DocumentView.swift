import RewindClient
import RewindCore

/// Everything `rewind connect` shows, drawn from the client's state into a
/// canvas: a title line, the document's nodes as boxes at their frames
/// (scaled to the terminal), text with carets, others' presence in colour,
/// the prompt on top, a message line and the key line.
struct DocumentView {
    var doc: String
    var user: String
    var connection: String
    var message: (text: String, isError: Bool)?
    /// The keys, drawn over everything (F1, or `?` with nothing focused).
    var showsHelp = false
    /// Each text node's first visible line.
    private(set) var scroll: [Key: Int] = [:]

    /// Colours for others' terminals, by a stable hash of their client id.
    static func color(for client: String) -> UInt8 {
        let palette: [UInt8] = [31, 32, 33, 34, 35, 36]
        let h = client.unicodeScalars.reduce(UInt32(5381)) { ($0 &* 33) &+ $1.value }
        return palette[Int(h % UInt32(palette.count))]
    }

    mutating func draw(_ s: ClientSession, cols: Int, rows: Int) -> Canvas {
        var c = Canvas(cols: cols, rows: rows)
        let version = s.document.version
        let head = " rewind · \(doc) · v\(version) · \(user) · \(connection) "
        c.fill(0, 0, cols, 1, Cell(inverse: true))
        c.text(0, 0, head, Cell(inverse: true), maxWidth: cols)
        drawDocument(s, into: &c, top: 1, height: max(0, rows - 3))
        if let m = message {
            c.text(0, rows - 2, m.text, Cell(color: m.isError ? 31 : 0, bold: m.isError), maxWidth: cols)
        }
        let st = s.promptState
        var x = 0
        for (key, label, enabled) in [("^Z", st.undoTitle, st.canUndo), ("^Y", st.redoTitle, st.canRedo),
                                      ("^S", "Shake", true), ("Tab", "Focus", true), ("F1", "Help", true), ("^Q", "Quit", true)] {
            c.text(x, rows - 1, key, Cell(inverse: true), maxWidth: max(0, cols - x))
            x += key.count
            let item = " \(label)  "
            c.text(x, rows - 1, item, Cell(dim: !enabled), maxWidth: max(0, cols - x))
            x += item.count
        }
        if let p = Self.shownPrompt(s.prompts) { drawPrompt(p, into: &c) }
        if showsHelp { drawHelp(into: &c) }
        return c
    }

    /// The prompt on top: an `alert`-level one above a `normal` one.
    static func shownPrompt(_ prompts: [PresentedPrompt]) -> PresentedPrompt? {
        prompts.last { $0.level == "alert" } ?? prompts.last
    }

    // MARK: Nodes

    private mutating func drawDocument(_ s: ClientSession, into c: inout Canvas, top: Int, height: Int) {
        let d = s.document.view
        var origin: [Key: (Double, Double)] = [Document.rootID: (0, 0)]
        var order: [Key] = []
        var maxX = 1.0, maxY = 1.0
        func visit(_ id: Key) {
            guard let n = d[id] else { return }
            for child in n.children {
                guard let cn = d[child] else { continue }
                let f = cn.frame.map { $0.doubleValue ?? 0 }
                let (px, py) = origin[id] ?? (0, 0)
                origin[child] = (px + (f.count > 0 ? f[0] : 0), py + (f.count > 1 ? f[1] : 0))
                let (ax, ay) = origin[child]!
                maxX = max(maxX, ax + (f.count > 2 ? f[2] : 0))
                maxY = max(maxY, ay + (f.count > 3 ? f[3] : 0))
                order.append(child)
                visit(child)
            }
        }
        visit(Document.rootID)
        let sx = Double(c.cols) / maxX, sy = Double(height) / maxY
        for id in order {
            guard let n = d[id], let (ax, ay) = origin[id] else { continue }
            let f = n.frame.map { $0.doubleValue ?? 0 }
            let x = Int((ax * sx).rounded(.down)), y = top + Int((ay * sy).rounded(.down))
            let w = max(4, Int(((ax + (f.count > 2 ? f[2] : 0)) * sx).rounded(.down)) - x)
            let h = max(3, top + Int(((ay + (f.count > 3 ? f[3] : 0)) * sy).rounded(.down)) - y)
            drawNode(n, s, x: x, y: y, w: min(w, c.cols - x), h: min(h, top + height - y), into: &c)
        }
        if order.isEmpty {
            c.text(2, top + 1, "(empty document: nothing to draw)", Cell(dim: true))
        }
    }

    private mutating func drawNode(_ n: Node, _ s: ClientSession, x: Int, y: Int, w: Int, h: Int, into c: inout Canvas) {
        guard w >= 2, h >= 2 else { return }
        let focused = s.focused == n.id
        let style = Cell(color: focused ? 33 : 0, bold: focused)
        c.fill(x + 1, y + 1, w - 2, h - 2)
        c.box(x, y, w, h, style, double: focused)
        c.text(x + 1, y, " \(n.id) ", style, maxWidth: max(0, w - 2))
        // Others' carets in this node, and their names on the bottom edge.
        let others = s.presence.values.filter { $0.node == n.id.string }.sorted { $0.client < $1.client }
        var labelX = x + 1
        for p in others {
            let label = " \(p.user) "
            c.text(labelX, y + h - 1, label, Cell(color: Self.color(for: p.client), bold: true), maxWidth: max(0, x + w - 1 - labelX))
            labelX += label.count
        }
        // Text, wrapped at words to the box and scrolled so that my caret stays in it.
        var mine: ClosedRange<Int>?
        if focused, let sel = s.document.selection, sel.node == n.id { mine = sel.start...max(sel.start, sel.end) }
        let innerW = w - 2, innerH = h - 2
        guard innerW > 0, innerH > 0 else { return }
        let wrap = TextWrap(n.text, width: innerW)
        var top = scroll[n.id] ?? 0
        if let m = mine {
            top = wrap.scroll(top, toShow: wrap.place(m.lowerBound).row, height: innerH)
        } else {
            top = min(top, max(0, wrap.lines.count - innerH))
        }
        scroll[n.id] = top
        func mark(_ i: Int) -> Cell? {
            if let m = mine, m.contains(i), i == m.lowerBound || i < m.upperBound { return Cell(inverse: true) }
            if let p = others.first(where: { $0.start == i }) { return Cell(color: Self.color(for: p.client), inverse: true) }
            return nil
        }
        for row in 0..<innerH where top + row < wrap.lines.count {
            let line = wrap.lines[top + row]
            for (col, i) in line.enumerated() {
                c.put(x + 1 + col, y + 1 + row, Character(n.text[i]), mark(i) ?? Cell())
            }
            // The cell after a paragraph's last character: a caret there, or the newline selected.
            let next = top + row + 1
            if next == wrap.lines.count || wrap.lines[next].lowerBound != line.upperBound, let m = mark(line.upperBound) {
                c.put(x + 1 + line.count, y + 1 + row, " ", m)
            }
        }
        // More above or below: arrows on the right edge.
        if top > 0 { c.put(x + w - 1, y + 1, "▲", style) }
        if top + innerH < wrap.lines.count { c.put(x + w - 1, y + h - 2, "▼", style) }
    }

    // MARK: Help

    static let helpLines: [(String, String)] = [
        ("typing, Enter", "edit the focused text node (your caret is the inverse cell)"),
        ("Backspace, Delete", "remove before / after the caret"),
        ("arrows, Home, End", "move the caret; the box scrolls to keep it in view"),
        ("Tab", "focus the next focusable node"),
        ("Ctrl-Z / Ctrl-Y", "undo / redo your own edits (the bottom line says what)"),
        ("Ctrl-S", "shake: the \"Undo …?\" prompt"),
        ("1–9, Esc", "in a prompt: choose an action, cancel"),
        ("F1 (or ? unfocused)", "this help; any key closes it"),
        ("Ctrl-Q, Ctrl-C", "quit, the terminal as it was"),
    ]

    private func drawHelp(into c: inout Canvas) {
        let keyWidth = Self.helpLines.map { $0.0.count }.max()! + 2
        let width = min(c.cols - 2, keyWidth + Self.helpLines.map { $0.1.count }.max()! + 4)
        let height = Self.helpLines.count + 4
        let x = max(0, (c.cols - width) / 2), y = max(1, (c.rows - height) / 2)
        c.fill(x, y, width, height)
        c.box(x, y, width, height, Cell(bold: true), double: true)
        c.text(x + 2, y, " Keys ", Cell(bold: true), maxWidth: width - 4)
        for (i, (key, what)) in Self.helpLines.enumerated() {
            c.text(x + 2, y + 2 + i, key, Cell(bold: true), maxWidth: width - 4)
            c.text(x + 2 + keyWidth, y + 2 + i, what, Cell(), maxWidth: max(0, width - 4 - keyWidth))
        }
    }

    // MARK: PresentedPrompt

    private func drawPrompt(_ p: PresentedPrompt, into c: inout Canvas) {
        let keys = p.actions.enumerated().map { "[\($0.offset + 1)] \($0.element.title)" }.joined(separator: "  ")
        let width = min(c.cols - 2, max(p.title.count, p.message.count, keys.count) + 6)
        let height = p.message.isEmpty ? 5 : 6
        let x = (c.cols - width) / 2, y = max(1, (c.rows - height) / 2)
        let style = Cell(color: p.reason == "error" ? 31 : 0, bold: true)
        c.fill(x, y, width, height)
        c.box(x, y, width, height, style, double: true)
        func centred(_ s: String, _ row: Int, _ st: Cell) -> Void {
            c.text(x + max(1, (width - s.count) / 2), row, s, st, maxWidth: width - 2)
        }
        centred(p.title, y + 1, Cell(bold: true))
        if !p.message.isEmpty { centred(p.message, y + 2, Cell()) }
        centred(keys, y + height - 2, Cell())
    }
}
