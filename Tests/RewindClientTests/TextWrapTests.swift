import RewindClient
import RewindTestSupport
import XCTest

/// How `rewind connect` lays text out in a box: words kept whole, every caret
/// position on a cell of its own inside the box.
final class TextWrapTests: XCTestCase {
    private func shown(_ text: String, _ width: Int) -> [String] {
        let scalars = Array(text.unicodeScalars)
        return TextWrap(scalars, width: width).lines.map { r in String(String.UnicodeScalarView(scalars[r])) }
    }

    func testLinesBreakAfterTheLastSpaceThatFitsAndAtNewlines() {
        XCTAssertEqual(shown("the quick brown fox", 10), ["the quick ", "brown fox"])
        XCTAssertEqual(shown("one\ntwo words here", 8), ["one", "two ", "words ", "here"])
        XCTAssertEqual(shown("", 5), [""])
        XCTAssertEqual(shown("a\n", 5), ["a", ""])
    }

    func testAWordWiderThanTheBoxIsCutAndAFullLineLeavesTheCaretARow() {
        XCTAssertEqual(shown("abcdefghij", 4), ["abcd", "efgh", "ij"])
        XCTAssertEqual(shown("abcd", 4), ["abcd", ""])
        let wrap = TextWrap(Array("abcd".unicodeScalars), width: 4)
        XCTAssertTrue(wrap.place(4) == (1, 0), "the caret after a full line goes to the next row")
        XCTAssertTrue(wrap.place(3) == (0, 3))
    }

    func testScrollingMovesTheLeastToShowTheRow() {
        let wrap = TextWrap(Array("1\n2\n3\n4\n5\n6\n7\n8".unicodeScalars), width: 10)
        XCTAssertEqual(wrap.scroll(0, toShow: 2, height: 3), 0)
        XCTAssertEqual(wrap.scroll(0, toShow: 7, height: 3), 5)
        XCTAssertEqual(wrap.scroll(5, toShow: 6, height: 3), 5)
        XCTAssertEqual(wrap.scroll(5, toShow: 1, height: 3), 1)
        XCTAssertEqual(wrap.scroll(40, toShow: 7, height: 3), 5, "a scroll past the end comes back")
    }

    /// Over random texts and widths: the lines cover the text in order (only
    /// newlines left out), none is wider than the box, a word that fits is never
    /// split, and every caret position lands inside the box, in reading order.
    func testRandomTextsWrapWithoutLosingOrSplittingAnything() {
        var rng = SeededRandom(seed: 29)
        let alphabet: [Unicode.Scalar] = ["a", "b", "é", "中", " ", " ", "\n"]
        for _ in 0..<2_000 {
            let width = Int(rng.next() % 12) + 1
            let text = (0..<Int(rng.next() % 60)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            let wrap = TextWrap(text, width: width)
            var next = 0
            for line in wrap.lines {
                XCTAssertLessThanOrEqual(line.count, width)
                if line.lowerBound != next {
                    XCTAssertEqual(line.lowerBound, next + 1, "only a newline between lines")
                    XCTAssertEqual(text[next], "\n")
                }
                XCTAssertFalse(text[line].contains("\n"))
                next = line.upperBound
            }
            XCTAssertEqual(next, text.count, "the lines end where the text ends")
            for (a, b) in zip(wrap.lines, wrap.lines.dropFirst()) where a.upperBound == b.lowerBound && width > 1 {
                // A soft break: after a space, or inside a word wider than the box.
                let wordStart = (text[..<a.upperBound].lastIndex { $0 == " " || $0 == "\n" }).map { $0 + 1 } ?? 0
                let wordEnd = text[a.upperBound...].firstIndex { $0 == " " || $0 == "\n" } ?? text.count
                XCTAssertTrue(text[a.upperBound - 1] == " " || wordEnd - wordStart > width - 1,
                              "a word that fits is split: \(text) at width \(width)")
            }
            var last = (row: 0, col: -1)
            for p in 0...text.count {
                let at = wrap.place(p)
                XCTAssertLessThan(at.col, width, "caret \(p) outside the box in \(text) at width \(width)")
                XCTAssertTrue(at.row > last.row || (at.row == last.row && at.col > last.col), "carets in reading order")
                last = at
            }
        }
    }
}
