import RewindCore
import XCTest

final class EditorNotesTests: XCTestCase {
    func testAPairIsNotedOnceEveryFiveSecondsOfItsEdits() {
        var notes = EditorNotes()
        XCTAssertTrue(notes.take(doc: "d", user: 1, timeMs: 10_000), "the first edit is noted")
        XCTAssertFalse(notes.take(doc: "d", user: 1, timeMs: 10_001))
        XCTAssertFalse(notes.take(doc: "d", user: 1, timeMs: 14_999), "still within 5 s of the note")
        XCTAssertTrue(notes.take(doc: "d", user: 1, timeMs: 15_000), "5 s after the note")
        XCTAssertFalse(notes.take(doc: "d", user: 1, timeMs: 19_999))
        XCTAssertTrue(notes.take(doc: "d", user: 2, timeMs: 19_999), "another user of the same document")
        XCTAssertTrue(notes.take(doc: "e", user: 1, timeMs: 19_999), "another document of the same user")
        XCTAssertFalse(notes.take(doc: "d", user: 1, timeMs: 12_000), "a clock that went back notes nothing again")
    }

    /// Property: over any sequence of edits, a pair is noted at its first edit
    /// and then exactly when 5 s have passed since its last note — what the
    /// trigger it replaces did against the table — and the table stays about
    /// the pairs of the last 5 seconds, however many pairs went by.
    func testNotesMatchAModelAndForgetOldPairs() {
        var rng = SeededRandom(seed: 51)
        var notes = EditorNotes(trimAt: 64)
        var model: [String: Int64] = [:]
        var time: Int64 = 0
        for i in 0..<20_000 {
            time += Int64(rng.next() % 40)
            let doc = "d\(i < 10_000 ? rng.next() % 20 : 100 + UInt64(i / 50))", user = Int64(rng.next() % 3)
            let key = "\(doc)/\(user)"
            let expected = model[key].map { time - $0 >= EditorNotes.interval } ?? true
            if expected { model[key] = time }
            XCTAssertEqual(notes.take(doc: doc, user: user, timeMs: time), expected, "edit \(i) of \(key) at \(time)")
        }
        let recent = model.values.filter { time - $0 < EditorNotes.interval }.count
        XCTAssertLessThanOrEqual(notes.count, max(64, recent * 2) + 1, "old pairs are let go (\(model.count) pairs seen)")
    }
}
