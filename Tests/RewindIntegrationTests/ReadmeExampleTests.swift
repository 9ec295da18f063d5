import Foundation
import RewindCore
import XCTest

// README example begin
import RewindClient

/// Types "Hi " at the start of text node `t` of document `doc` (the `nc`
/// session's, say), as alice (her token from `scripts/run`), and returns the
/// text once it is committed.
func typeHi(port: Int, token: String, doc: String) throws -> String {
    struct Failed: Error { let message: String }
    let client = RewindClient(host: "127.0.0.1", port: port,
                              options: .init(user: "alice", token: token, doc: doc, client: "notes-app-1"))
    var failure: String?
    client.onChange = { change in
        switch change {
        case .prompts: print(client.session.prompts.last?.title ?? "")
        case let .failed(request, error): failure = "\(request) failed: \(error)"
        default: break
        }
    }
    var typed = false
    client.run {   // returns when this says so
        if client.session.status == .ready && !typed {
            typed = true
            client.session.focus("t")
            do { try client.session.edit([.insert("t", pos: 0, text: Array("Hi ".unicodeScalars))]) } catch { failure = "\(error)" }
        }
        return failure != nil || (typed && client.session.document.isSettled)
    }
    client.stop()
    if let failure { throw Failed(message: failure) }
    return client.session.document.view["t"]?.textString ?? ""
}
// README example end

/// docs/clients.md's `RewindClient` example is this file's code (between the
/// markers), compiled with the tests and run against a real server.
final class ReadmeExampleTests: XCTestCase {
    func testTheReadmeClientExampleCompilesRunsAndIsTheREADMEs() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", db)
        XCTAssertTrue(try alice.request("create_doc", [("doc", "hello")]).isOK)
        try alice.submit("hello", tx: "t1", base: 0, [.obj([("op", "create"), ("node", "t"), ("parent", "root"), ("kind", "text"),
                                                            ("frame", [0, 0, 200, 20]), ("focusable", true), ("text", "Hello")])])
        XCTAssertEqual(try typeHi(port: server.port, token: db.tokens["alice"]!, doc: "hello"), "Hi Hello")
        XCTAssertEqual(try db.db.query("SELECT count(*) FROM events WHERE doc = 'hello'").int(0, 0), 2)

        let file = try String(contentsOfFile: #filePath, encoding: .utf8)
        let readme = try String(contentsOfFile: TestDatabase.repositoryRoot + "/docs/clients.md", encoding: .utf8)
        guard let a = file.range(of: "// README example begin\n"), let b = file.range(of: "// README example end") else { return XCTFail("markers") }
        let code = String(file[a.upperBound..<b.lowerBound])
        XCTAssertTrue(readme.contains("```swift\n" + code + "```"), "docs/clients.md's RewindClient example differs from ReadmeExampleTests.swift")
    }
}
