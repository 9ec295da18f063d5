/// How a text is laid out in a box `width` cells wide, as an editor does it:
/// a line ends at each "\n"; a longer one breaks after the last space that
/// fits, and a word wider than the box is cut at the width. The last line of
/// each paragraph keeps a cell free for the caret after its last character,
/// so every caret position (0...count) has a cell of its own.
public struct TextWrap: Sendable, Equatable {
    /// The scalars each visual line shows (never a "\n").
    public let lines: [Range<Int>]
    public let width: Int

    public init(_ text: [Unicode.Scalar], width: Int) {
        let w = max(1, width)
        self.width = w
        var lines: [Range<Int>] = []
        var start = 0
        while true {
            let end = text[start...].firstIndex(of: "\n") ?? text.count
            var s = start
            // `>= w`: a line as wide as the box leaves no cell for a caret at its end.
            while end - s >= w, w > 1 {
                let fits = s..<min(end, s + w)
                if let space = text[fits].lastIndex(of: " ") {
                    lines.append(s..<(space + 1))
                    s = space + 1
                } else {
                    lines.append(s..<(s + w))
                    s += w
                }
            }
            if w == 1 {
                while s < end { lines.append(s..<(s + 1)); s += 1 }
            }
            lines.append(s..<end)
            guard end < text.count else { break }
            start = end + 1
        }
        self.lines = lines
    }

    /// The row and column where the caret at `position` (0...count) is drawn.
    public func place(_ position: Int) -> (row: Int, col: Int) {
        var lo = 0, hi = lines.count - 1
        while lo < hi {   // the last line starting at or before `position`
            let mid = (lo + hi + 1) / 2
            if lines[mid].lowerBound <= position { lo = mid } else { hi = mid - 1 }
        }
        return (lo, position - lines[lo].lowerBound)
    }

    /// The first row to show so that `row` is visible in `height` rows, moving
    /// `current` as little as possible (an editor's scrolling).
    public func scroll(_ current: Int, toShow row: Int, height: Int) -> Int {
        let h = max(1, height)
        var top = min(current, max(0, lines.count - h))
        if row < top { top = row }
        if row >= top + h { top = row - h + 1 }
        return max(0, top)
    }
}
