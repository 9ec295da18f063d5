/// One character cell: the character and how it is drawn.
struct Cell: Equatable {
    var char: Character = " "
    /// ANSI foreground colour 30–37, or 0 for the terminal's default.
    var color: UInt8 = 0
    var bold = false
    var inverse = false
    var dim = false
}

/// A frame of the screen, drawn into cells; `ScreenWriter` sends only the
/// cells that differ from the frame before.
struct Canvas {
    let cols: Int
    let rows: Int
    private(set) var cells: [Cell]

    init(cols: Int, rows: Int) {
        self.cols = cols
        self.rows = rows
        cells = Array(repeating: Cell(), count: cols * rows)
    }

    subscript(x: Int, y: Int) -> Cell {
        get { cells[y * cols + x] }
        set { if x >= 0, y >= 0, x < cols, y < rows { cells[y * cols + x] = newValue } }
    }

    mutating func put(_ x: Int, _ y: Int, _ c: Character, _ style: Cell = Cell()) {
        var cell = style
        cell.char = c
        self[x, y] = cell
    }

    /// Text from (x, y), cut at `maxWidth` (a character per cell).
    mutating func text(_ x: Int, _ y: Int, _ s: String, _ style: Cell = Cell(), maxWidth: Int = .max) {
        for (i, c) in s.enumerated() where i < maxWidth { put(x + i, y, c, style) }
    }

    mutating func fill(_ x: Int, _ y: Int, _ w: Int, _ h: Int, _ style: Cell = Cell()) {
        for yy in y..<(y + max(0, h)) { for xx in x..<(x + max(0, w)) { put(xx, yy, " ", style) } }
    }

    /// A box with light lines; `double` for the focused node and for prompts.
    mutating func box(_ x: Int, _ y: Int, _ w: Int, _ h: Int, _ style: Cell = Cell(), double: Bool = false) {
        guard w >= 2, h >= 2 else { return }
        let (tl, tr, bl, br, hz, vt): (Character, Character, Character, Character, Character, Character) =
            double ? ("╔", "╗", "╚", "╝", "═", "║") : ("┌", "┐", "└", "┘", "─", "│")
        for xx in (x + 1)..<(x + w - 1) { put(xx, y, hz, style); put(xx, y + h - 1, hz, style) }
        for yy in (y + 1)..<(y + h - 1) { put(x, yy, vt, style); put(x + w - 1, yy, vt, style) }
        put(x, y, tl, style); put(x + w - 1, y, tr, style)
        put(x, y + h - 1, bl, style); put(x + w - 1, y + h - 1, br, style)
    }
}

/// Turns a canvas into ANSI output, writing only what changed since the last frame.
struct ScreenWriter {
    private var previous: Canvas?

    /// Forget the last frame (after a resize): the next one is drawn whole.
    mutating func invalidate() { previous = nil }

    mutating func output(_ next: Canvas) -> String {
        var out = ""
        let full = previous == nil || previous!.cols != next.cols || previous!.rows != next.rows
        if full { out += "\u{1B}[0m\u{1B}[2J" }
        var current: Cell?
        for y in 0..<next.rows {
            var x = 0
            while x < next.cols {
                let cell = next[x, y]
                if !full, previous![x, y] == cell { x += 1; continue }
                out += "\u{1B}[\(y + 1);\(x + 1)H"
                // A run of changed cells is one cursor move.
                while x < next.cols, full || previous![x, y] != next[x, y] {
                    let c = next[x, y]
                    if current.map({ !Self.sameStyle($0, c) }) ?? true { out += Self.sgr(c); current = c }
                    out.append(c.char)
                    x += 1
                }
            }
        }
        previous = next
        return out
    }

    private static func sameStyle(_ a: Cell, _ b: Cell) -> Bool {
        a.color == b.color && a.bold == b.bold && a.inverse == b.inverse && a.dim == b.dim
    }

    private static func sgr(_ c: Cell) -> String {
        var codes = ["0"]
        if c.bold { codes.append("1") }
        if c.dim { codes.append("2") }
        if c.inverse { codes.append("7") }
        if c.color != 0 { codes.append(String(c.color)) }
        return "\u{1B}[" + codes.joined(separator: ";") + "m"
    }
}
