import Foundation
import RewindCore
import XCTest

/// The README's `nc` session, run as written (sh, sed, nc) against a real
/// server, twice: every line is answered `ok` both times, and the prompt the
/// shake shows is the one line 10 answers.
final class ReadmeSessionTests: XCTestCase {
    func testTheNcSessionRunsAsWrittenAndAgainOnTheSameServer() throws {
        let readme = try String(contentsOfFile: TestDatabase.repositoryRoot + "/README.md", encoding: .utf8)
        guard let start = readme.range(of: "```sh\nTOKEN=$(awk"),
              let end = readme.range(of: "\n```", range: start.upperBound..<readme.endIndex) else {
            return XCTFail("README.md has no session block starting with TOKEN=$(awk")
        }
        let block = "TOKEN=$(awk" + readme[start.upperBound..<end.lowerBound] + "\n"
        XCTAssertTrue(block.contains("| nc 127.0.0.1 7878\n"), block)

        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let dir = NSTemporaryDirectory() + "readme-session-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir + "/.rewind", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "alice \(db.tokens["alice"]!)\nbob \(db.tokens["bob"]!)\n".write(toFile: dir + "/.rewind/demo-tokens", atomically: true, encoding: .utf8)
        // The same block, on the test's port; nc is stopped after 4 s instead of by
        // Ctrl-C. (Not `nc -q`: that half-closes the connection, and the server
        // takes a closed input for a terminal gone and drops what it had not answered.)
        let script = block.replacingOccurrences(of: "| nc 127.0.0.1 7878", with: "| timeout 4 nc 127.0.0.1 \(server.port)")
        try script.write(toFile: dir + "/session.sh", atomically: true, encoding: .utf8)

        var docs: [String] = []
        for run in 1...2 {
            let out = try shell("cd '\(dir)' && sh session.sh")
            var replies: [Int64: JSONObject] = [:]
            var promptPush: JSONObject?
            for line in out.split(separator: "\n") {
                guard let o = (try? JSONParser.parse(String(line)))?.objectValue else { continue }
                if let re = o["re"]?.intValue { replies[re] = o }
                if o["push"]?.stringValue == "prompt" { promptPush = o["prompt"]?.objectValue }
            }
            for id in 1...16 as ClosedRange<Int64> {
                XCTAssertEqual(replies[id]?["ok"]?.boolValue, true, "run \(run), line \(id): \(replies[id].map { JSONWriter.string(.object($0)) } ?? "no reply")\n\(out)")
            }
            guard let doc = replies[2]?["doc"]?.stringValue else { return XCTFail("run \(run): no document created\n\(out)") }
            docs.append(doc)
            XCTAssertEqual(replies[9]?["prompt"]?.stringValue, doc + ":p1", "run \(run): the shake's prompt is the one line 10 names")
            XCTAssertEqual(promptPush?["title"]?.stringValue, "Undo Typing")
            XCTAssertEqual(replies[6]?["action"]?.stringValue, "Typing")
            XCTAssertEqual(replies[16]?["action"]?.stringValue, "Restore Version")
            let text = try db.db.query("SELECT count(*) FROM events WHERE doc = $1", [doc]).int(0, 0)
            XCTAssertEqual(text, 7, "run \(run): create, insert, undo, redo, the prompt's undo, restore, undo")
        }
        XCTAssertNotEqual(docs[0], docs[1], "each run names a new document")
    }

    private func shell(_ command: String) throws -> String {
        let r = try ChildProcess.run("/bin/sh", ["-c", command], timeout: 120)
        return r.out + r.err
    }
}
