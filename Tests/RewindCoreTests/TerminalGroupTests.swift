import RewindCore
import XCTest

/// `begin_group`/`end_group`/`set_action` as NSUndoManager nests them, without a server.
final class TerminalGroupTests: XCTestCase {
    func testNestedLevelsCountAndOnlyTheOutermostEndCloses() throws {
        var open: TerminalGroup?
        var ids = 0
        let fresh = { () -> String in ids += 1; return "g\(ids)" }
        let before = Selection(node: "t", start: 1, end: 1)
        XCTAssertEqual(try TerminalGroup.begin(&open, id: fresh, action: "Move", selection: before), .level(1))
        XCTAssertEqual(try TerminalGroup.begin(&open, id: fresh, action: nil, selection: nil), .level(2))
        XCTAssertEqual(ids, 1, "a nested begin is the same group")
        XCTAssertEqual(try TerminalGroup.end(&open, selection: nil), .level(1))
        let after = Selection(node: "t", start: 4, end: 4)
        guard case let .close(g, selectionAfter) = try TerminalGroup.end(&open, selection: after) else { return XCTFail("the outermost end closes") }
        XCTAssertEqual(g.id, "g1")
        XCTAssertEqual(g.action, "Move", "a nested begin without a name keeps the outer one")
        XCTAssertEqual(g.selectionBefore, before)
        XCTAssertEqual(selectionAfter, after)
        XCTAssertNil(open)
        XCTAssertThrowsError(try TerminalGroup.end(&open, selection: nil), "no group open at level 0")
    }

    func testSetActionNamesTheOpenGroupElseTheNewestInTheLog() throws {
        var open: TerminalGroup?
        XCTAssertEqual(TerminalGroup.setAction(&open, "Typing"), .renameNewest(action: "Typing"))
        _ = try TerminalGroup.begin(&open, id: { "g" }, action: "Move", selection: nil)
        XCTAssertEqual(TerminalGroup.setAction(&open, "Resize"), .level(1))
        guard case let .close(g, _) = try TerminalGroup.end(&open, selection: nil) else { return XCTFail() }
        XCTAssertEqual(g.action, "Resize", "the last name given is recorded")
    }

    func testGroupsNestAtMostAHundredLevels() throws {
        var open: TerminalGroup?
        for level in 1...TerminalGroup.maxLevels {
            XCTAssertEqual(try TerminalGroup.begin(&open, id: { "g" }, action: nil, selection: nil), .level(level))
        }
        XCTAssertThrowsError(try TerminalGroup.begin(&open, id: { "g" }, action: nil, selection: nil))
        XCTAssertEqual(open?.level, TerminalGroup.maxLevels, "a refused begin changes nothing")
    }
}
