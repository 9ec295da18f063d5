/// The explicit undo group one terminal holds open on one document with
/// `begin_group` (NSUndoManager's grouping level). Nested begins and ends
/// only count levels; the outermost `end_group` is what the log records.
public struct TerminalGroup: Sendable, Equatable {
    public let id: String
    public private(set) var level: Int
    /// The name recorded when the group closes (the last one given wins).
    public private(set) var action: String?
    /// The selection before the group's first edit: what its undo hands back.
    public let selectionBefore: Selection?

    public static let maxLevels = 100

    /// What `begin_group`, `end_group` or `set_action` comes to.
    public enum Effect: Sendable, Equatable {
        /// Answer with this level; nothing is recorded (yet).
        case level(Int)
        /// The outermost level ended: record the group's close, with its
        /// name and the selection after it, then answer level 0.
        case close(TerminalGroup, selectionAfter: Selection?)
        /// No group is open: `set_action` names the terminal's newest group in the log instead.
        case renameNewest(action: String)
    }

    /// `begin_group`: a group at level 1 (with a fresh `id`), or one level deeper.
    public static func begin(_ open: inout TerminalGroup?, id: () -> String, action: String?, selection: Selection?) throws(RewindError) -> Effect {
        guard var g = open else {
            open = TerminalGroup(id: id(), level: 1, action: action, selectionBefore: selection)
            return .level(1)
        }
        guard g.level < maxLevels else { throw .badRequest("begin_group: groups nest at most \(maxLevels) levels") }
        g.level += 1
        if let action { g.action = action }
        open = g
        return .level(g.level)
    }

    /// `end_group`: one level up; the outermost closes the group.
    public static func end(_ open: inout TerminalGroup?, selection: Selection?) throws(RewindError) -> Effect {
        guard var g = open else { throw .badRequest("end_group at level 0: no group is open") }
        g.level -= 1
        guard g.level == 0 else {
            open = g
            return .level(g.level)
        }
        open = nil
        return .close(g, selectionAfter: selection)
    }

    /// `set_action`: names the open group (recorded when it closes), else the newest closed one.
    public static func setAction(_ open: inout TerminalGroup?, _ action: String) -> Effect {
        guard var g = open else { return .renameNewest(action: action) }
        g.action = action
        open = g
        return .level(g.level)
    }
}
