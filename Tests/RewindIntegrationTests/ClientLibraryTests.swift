import Foundation
import Glibc
import RewindClient
import RewindCore
import XCTest

/// `RewindClient` against the real server: what an app built on the library sees.
final class ClientLibraryTests: XCTestCase {
    /// Pumps the clients' sockets and timers until `done`, at most `timeout` seconds.
    private func run(_ clients: [RewindClient], timeout: Double = 15, until done: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !done() {
            guard Date() < deadline else { throw TestFailure("not done within \(timeout) s: \(clients.map(\.session.status))") }
            step(clients)
        }
    }

    private func step(_ clients: [RewindClient]) {
        for c in clients {
            c.tick()
            if var d = c.descriptor, poll(&d, 1, 2) > 0 { c.handle(d.revents) }
            c.flush()
        }
    }

    private func client(_ user: String, _ db: TestDatabase, port: Int, doc: String = "d", id: String) -> RewindClient {
        RewindClient(host: "127.0.0.1", port: port, options: .init(user: user, token: db.tokens[user]!, doc: doc, client: id))
    }

    private func serverText(_ t: Terminal, _ doc: String = "d", node: String = "t") throws -> String? {
        let o = try t.request("open", [("doc", .string(doc))])
        return o["state"]?.objectValue?["nodes"]?.objectValue?[node]?.objectValue?["text"]?.stringValue
    }

    private static let textNode: JSON = .obj([("op", "create"), ("node", "t"), ("parent", "root"), ("kind", "text"),
                                              ("frame", [0, 0, 100, 20]), ("focusable", true)])

    func testTwoClientsTypingAtOnceEndWithExactlyTheServersText() throws {
        let f = try Fixture()
        _ = try f.alice.submit("d", tx: "setup", base: 0, [Self.textNode])
        let a = client("alice", f.db, port: f.server.port, id: "ca")
        let b = client("bob", f.db, port: f.server.port, id: "cb")
        try run([a, b]) { a.session.status == .ready && b.session.status == .ready }
        a.session.focus("t")
        b.session.focus("t")
        var rng = SystemRandomNumberGenerator()
        for i in 0..<40 {
            for (c, ch) in [(a, "a"), (b, "b")] {
                let n = c.session.document.view["t"]!.text.count
                try c.session.edit([.insert("t", pos: Int.random(in: 0...n, using: &rng), text: Array("\(ch)\(i % 10)".unicodeScalars))])
            }
            step([a, b])   // no waiting for acknowledgements: edits pile up behind the one in flight
        }
        try run([a, b]) {
            a.session.document.isSettled && b.session.document.isSettled && a.session.document.version == b.session.document.version
                && a.session.document.view["t"]?.text.count == 160 && b.session.document.view["t"]?.text.count == 160
        }
        let server = try serverText(f.alice)
        XCTAssertEqual(server?.unicodeScalars.count, 160, "every keystroke committed once")
        XCTAssertEqual(a.session.document.view["t"]?.textString, server)
        XCTAssertEqual(b.session.document.view["t"]?.textString, server)
        XCTAssertEqual(a.session.document.confirmed, b.session.document.confirmed)
    }

    func testEditsMadeWhileTheServerIsDownAreCommittedOnceWhenItIsBack() throws {
        let db = try TestDatabase()
        var server = try ServerProcess(database: db)
        let port = server.port
        let setup = try Terminal(port: port)
        try setup.hello("alice", db)
        try setup.request("create_doc", [("doc", "d")])
        _ = try setup.submit("d", tx: "setup", base: 0, [Self.textNode])
        let a = client("alice", db, port: port, id: "ca")
        try run([a]) { a.session.status == .ready }
        a.session.focus("t")
        try a.session.edit([.insert("t", pos: 0, text: Array("abc".unicodeScalars))])
        try run([a]) { a.session.document.isSettled }

        XCTAssertEqual(server.terminate(), 0)
        try run([a]) { if case .disconnected = a.session.status { return true }; return false }
        try a.session.edit([.insert("t", pos: 3, text: Array("def".unicodeScalars))])   // typed while the server is away
        XCTAssertEqual(a.session.document.view["t"]?.textString, "abcdef")
        for _ in 0..<20 { step([a]) }

        server = try ServerProcess(database: db, arguments: ["--listen", "127.0.0.1:\(port)"])
        try run([a], timeout: 20) { a.session.status == .ready && a.session.document.isSettled }
        let check = try Terminal(port: port)
        try check.hello("bob", db)
        let owner = try Terminal(port: port)
        try owner.hello("alice", db)
        XCTAssertEqual(try serverText(owner), "abcdef")
        XCTAssertEqual(try db.eventCount("d"), 3, "the create, abc, def: nothing twice")
        XCTAssertEqual(a.session.document.version, 3)
    }
}
