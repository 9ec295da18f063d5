import Foundation
import Glibc
import RewindCore
import XCTest

/// `rewind connect` driven in tmux as a person would: keys in, the screen read back.
final class ConnectTests: XCTestCase {
    private var socketName = ""

    override func setUp() { socketName = "rewind-test-\(getpid())-\(UUID().uuidString.prefix(6))" }

    override func tearDown() { _ = try? tmux(["kill-server"]) }

    @discardableResult
    private func tmux(_ args: [String]) throws -> String {
        guard let path = ["/usr/bin/tmux", "/bin/tmux", "/usr/local/bin/tmux"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TestFailure("tmux is not installed: scripts/test installs it (apt-get install tmux)")
        }
        // system(3), not Process: Foundation's Process never saw the tmux client
        // exit once it had forked the tmux server. Output goes to a file for the same reason.
        let outPath = NSTemporaryDirectory() + "\(socketName)-out"
        defer { try? FileManager.default.removeItem(atPath: outPath) }
        let quoted = ([path, "-L", socketName] + args).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let status = system("TERM=${TERM:-xterm-256color} " + quoted.joined(separator: " ") + " </dev/null >'\(outPath)' 2>&1")
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        guard status == 0 || args.first == "kill-server" else { throw TestFailure("tmux \(args.joined(separator: " ")): status \(status): \(out)") }
        return out
    }

    private func screen(_ pane: String) throws -> String { try tmux(["capture-pane", "-p", "-t", pane]) }

    /// Waits until the pane's text satisfies `test`; the last screen is in the failure.
    @discardableResult
    private func waitFor(_ pane: String, _ what: String, timeout: Double = 10, _ test: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var last = ""
        while Date() < deadline {
            last = try screen(pane)
            if test(last) { return last }
            usleep(50_000)
        }
        throw TestFailure("pane \(pane): \(what) not seen within \(timeout) s; the screen:\n\(last)")
    }

    private func start(_ pane: String, user: String, _ f: Fixture) throws {
        try tmux(["new-session", "-d", "-s", pane, "-x", "100", "-y", "30"])
        let command = "REWIND_TOKEN=\(f.db.tokens[user]!) '\(ServerProcess.binDirectory)/rewind' connect 127.0.0.1:\(f.server.port) "
            + "--user \(user) --client term-\(user) notes; stty -a | tr ' ;' '\\n\\n' | grep -E '^-?(icanon|echo)$'; echo CONNECT-ENDED"
        try tmux(["send-keys", "-t", pane, command, "Enter"])
        try waitFor(pane, "the document, connected") { $0.contains("notes · v1 · \(user) · connected") }
    }

    func testTwoTerminalsSeeEachOthersTypingAndAShakeUndoesIt() throws {
        let f = try Fixture(doc: "notes")
        _ = try f.alice.submit("notes", tx: "setup", base: 0, [.obj([("op", "create"), ("node", "body"), ("parent", "root"),
                                                                    ("kind", "text"), ("frame", [0, 0, 80, 20]), ("focusable", true)])])
        try start("a", user: "alice", f)
        try start("b", user: "bob", f)

        try tmux(["send-keys", "-t", "a", "-l", "Hello"])
        try waitFor("b", "alice's typing") { $0.contains("Hello") }
        // Bob's caret stayed before alice's text (an insert exactly at a caret leaves it
        // before the new text, PROTOCOL.md): End takes it after.
        try tmux(["send-keys", "-t", "b", "End"])
        try tmux(["send-keys", "-t", "b", "-l", " world"])
        let both = try waitFor("a", "bob's typing after alice's") { $0.contains("Hello world") }
        XCTAssertTrue(both.contains(" bob "), "bob's name marks his caret in the box:\n\(both)")
        try waitFor("a", "the undo title in the key line") { $0.contains("^Z Undo Typing") }

        try tmux(["send-keys", "-t", "a", "C-s"])
        let prompt = try waitFor("a", "the shake prompt") { $0.contains("Undo Typing") && $0.contains("] Undo") }
        let key = try XCTUnwrap(prompt.range(of: #"\[(\d)\] Undo"#, options: .regularExpression).map { String(prompt[$0].dropFirst().prefix(1)) })
        try tmux(["send-keys", "-t", "a", key])
        try waitFor("a", "alice's typing undone") { !$0.contains("Hello") && $0.contains(" world") && !$0.contains("] Undo") }
        try waitFor("b", "the undo, on bob's screen") { !$0.contains("Hello") && $0.contains(" world") }
        let owner = try f.terminal("alice", client: "check")
        let text = try owner.request("open", [("doc", "notes")])["state"]?.objectValue?["nodes"]?.objectValue?["body"]?.objectValue?["text"]?.stringValue
        XCTAssertEqual(text, " world")

        try tmux(["send-keys", "-t", "a", "C-q"])
        let after = try waitFor("a", "the shell again") { $0.split(separator: "\n").contains("CONNECT-ENDED") }
        let modes = after.split(separator: "\n").map(String.init)
        XCTAssertTrue(modes.contains("icanon") && modes.contains("echo"), "line editing and echo are back:\n\(after)")
        XCTAssertFalse(after.contains("notes · v"), "the alternate screen is gone:\n\(after)")
    }

    func testAnUnknownDocumentEndsWithTheReasonAndStatus1AndNoTerminalIsStatus2() throws {
        let f = try Fixture(doc: nil)
        try tmux(["new-session", "-d", "-s", "c", "-x", "100", "-y", "30"])
        try tmux(["send-keys", "-t", "c", "REWIND_TOKEN=\(f.db.tokens["alice"]!) '\(ServerProcess.binDirectory)/rewind' connect "
                  + "127.0.0.1:\(f.server.port) --user alice nope; echo status=$?", "Enter"])
        let end = try waitFor("c", "the exit status") { $0.range(of: #"status=\d"#, options: .regularExpression) != nil }
        XCTAssertTrue(end.contains("error: not_found: no document \"nope\""), end)
        XCTAssertTrue(end.contains("ask its owner to share it"), "how sharing works is said:\n\(end)")
        XCTAssertTrue(end.contains("status=1"), end)

        let piped = try runRewind(["connect", "127.0.0.1:\(f.server.port)", "--user", "alice", "--token", f.db.tokens["alice"]!, "nope"])
        XCTAssertEqual(piped.status, 2)
        XCTAssertTrue(piped.err.contains("needs a terminal"), piped.err)
    }

    func testLongTextWrapsAtWordsAndTheBoxScrollsToKeepTheCaretInView() throws {
        let f = try Fixture(doc: "notes")
        let words = (0..<40).map { String(format: "word%03d", $0) }.joined(separator: " ")
        let lines = (1...60).map { "line \($0)" }.joined(separator: "\n")
        _ = try f.alice.submit("notes", tx: "setup", base: 0, [.obj([("op", "create"), ("node", "body"), ("parent", "root"),
                                                                    ("kind", "text"), ("frame", [0, 0, 80, 20]), ("focusable", true),
                                                                    ("text", .string(words + "\n" + lines))])])
        try start("a", user: "alice", f)
        // Focusing puts the caret at the end: the box shows the last lines, and
        // typing lands where the caret is shown.
        try tmux(["send-keys", "-t", "a", "-l", " END"])
        let bottom = try waitFor("a", "typing at the last line, in view") { $0.contains("line 60 END") }
        XCTAssertTrue(bottom.contains("▲"), "more above is marked:\n\(bottom)")
        XCTAssertNil(bottom.range(of: #"line 3 +[│║▲▼]"#, options: .regularExpression), "the top is scrolled away:\n\(bottom)")
        // The screen shows keys as typed, before the server has them all: read the state until it has them (or 10 s).
        var text: String?
        let deadline = Date().addingTimeInterval(10)
        for attempt in 0... {
            let reader = try f.terminal("alice", client: "check\(attempt)")
            text = try reader.request("open", [("doc", "notes")])["state"]?.objectValue?["nodes"]?.objectValue?["body"]?.objectValue?["text"]?.stringValue
            if text?.hasSuffix("\nline 60 END") == true || Date() > deadline { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        XCTAssertTrue(text?.hasSuffix("\nline 60 END") == true, "the edit went where the caret was shown: …\(text?.suffix(40) ?? "nil")")

        // Up to the first line: the box scrolls back. 40 words of 7 letters and a
        // space do not fill the lines evenly: a wrap by characters would cut some in two.
        try tmux(["send-keys", "-t", "a", "-N", "70", "Up"])
        let top = try waitFor("a", "the top again") { $0.contains("word000") }
        for i in 0..<40 { XCTAssertTrue(top.contains(String(format: "word%03d", i)), "word \(i) whole on the screen:\n\(top)") }
        XCTAssertTrue(top.contains("▼"), "more below is marked:\n\(top)")
        XCTAssertFalse(top.contains("line 60 END"), top)
        try tmux(["send-keys", "-t", "a", "-l", "TOP "])
        try waitFor("a", "typing at the top") { $0.contains("TOP word000") }
    }

    func testF1ShowsTheKeysAndAnyKeyClosesThem() throws {
        let f = try Fixture(doc: "notes")
        _ = try f.alice.submit("notes", tx: "setup", base: 0, [.obj([("op", "create"), ("node", "body"), ("parent", "root"),
                                                                    ("kind", "text"), ("frame", [0, 0, 80, 20]), ("focusable", true)])])
        try start("a", user: "alice", f)
        try waitFor("a", "F1 in the key line") { $0.contains("F1 Help") }
        try tmux(["send-keys", "-t", "a", "F1"])
        let help = try waitFor("a", "the keys") { $0.contains(" Keys ") }
        for (key, _) in [("Ctrl-Z / Ctrl-Y", ""), ("Ctrl-S", ""), ("Tab", ""), ("Ctrl-Q, Ctrl-C", "")] {
            XCTAssertTrue(help.contains(key), "\(key) explained:\n\(help)")
        }
        try tmux(["send-keys", "-t", "a", "Escape"])
        try waitFor("a", "the help gone") { !$0.contains(" Keys ") }
        // The key that closed the help typed nothing; `?` in a focused text is text.
        try tmux(["send-keys", "-t", "a", "-l", "why?"])
        let typed = try waitFor("a", "a question mark typed") { $0.contains("why?") }
        XCTAssertFalse(typed.contains(" Keys "), typed)
    }

    func testAnUnreachableServerEndsWithStatus1AfterTheTimeout() throws {
        // A port nobody listens on: bound, then closed.
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var a = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, len) } }
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) } }
        let port = Int(UInt16(bigEndian: a.sin_port))
        close(s)
        try tmux(["new-session", "-d", "-s", "u", "-x", "100", "-y", "30"])
        let began = Date()
        try tmux(["send-keys", "-t", "u", "REWIND_TOKEN=x '\(ServerProcess.binDirectory)/rewind' connect 127.0.0.1:\(port) "
                  + "--user alice --connect-timeout 2 notes; echo status=$?", "Enter"])
        let end = try waitFor("u", "the exit status", timeout: 15) { $0.range(of: #"status=\d"#, options: .regularExpression) != nil }
        XCTAssertLessThan(Date().timeIntervalSince(began), 12)
        XCTAssertTrue(end.contains("status=1"), end)
        XCTAssertTrue(end.contains("error: unreachable: no answer from 127.0.0.1:\(port) within 2 s"), end)
    }

    func testHostAndPortAloneIsNotTakenForTheDocument() throws {
        let r = try runRewind(["connect", "127.0.0.1:7878", "--user", "alice", "--token", "x"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.err.contains("127.0.0.1:7878 is HOST:PORT, and the document is missing"), r.err)
    }
}
