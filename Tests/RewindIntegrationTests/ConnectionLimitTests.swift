import Glibc
import RewindCore
import XCTest

/// Slow and silent terminals cost others nothing.
final class ConnectionLimitTests: XCTestCase {
    func testASlowTerminalIsDisconnectedWhileOthersKeepGoing() throws {
        let db = try TestDatabase()
        // The bye waits behind what the terminal has not read: the grace before
        // the hard close outlasts the writer's 300 submits, however slow the machine.
        let (server, writer, slow) = try writerAndViewerThatDoesNotRead(db, ["--max-output-bytes", "65536", "--close-grace", "120"])
        let start = Date()
        try writeBigEvents(writer)
        XCTAssertLessThan(Date().timeIntervalSince(start), 60, "the writer was held up by the slow terminal")
        withExtendedLifetime(server) {}
        // The slow terminal finds, after what fit in its buffers, a bye saying why.
        var bye: JSONObject?
        var versions: [Int64] = []
        while let line = slow.readLine() {
            let m = try JSONParser.parse(line).objectValue!
            if m["push"] == "bye" { bye = m }
            if m["push"] == "events" { versions += m["events"]!.arrayValue!.map { $0.objectValue!["version"]!.intValue! } }
        }
        XCTAssertEqual(bye?["reason"], "slow")
        XCTAssertEqual(bye?["retry"], true)
        XCTAssertLessThan(versions.count, 300)
        XCTAssertEqual(versions, versions.isEmpty ? [] : Array(1...Int64(versions.count)), "pushes before the bye arrive in order without gaps")
    }

    /// A terminal that does not read even its `bye` is closed hard once the
    /// close grace is over: reset, so its reads end in an error, never in a
    /// clean end of stream in the middle of a message (issue 44: the docs
    /// said reset; the server ended the stream normally, cut mid-line).
    func testAPeerThatDoesNotReadIsResetAfterTheCloseGrace() throws {
        let db = try TestDatabase()
        let (server, writer, slow) = try writerAndViewerThatDoesNotRead(db, ["--max-output-bytes", "65536", "--slow-timeout", "1", "--close-grace", "1"])
        try writeBigEvents(writer)
        defer { withExtendedLifetime(server) {} }
        sleep(5)  // over the bound for the slow timeout (1 s, swept each second), then the close grace (1 s)
        var chunk = [UInt8](repeating: 0, count: 65536)
        var received = 0
        var ending: Int32 = 0
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(slow.fd, $0.baseAddress, $0.count) }
            if n > 0 { received += n; continue }
            ending = n == 0 ? 0 : errno
            break
        }
        XCTAssertEqual(ending, ECONNRESET, "after \(received) bytes the stream \(ending == 0 ? "ended cleanly" : "failed with errno \(ending)")")
    }

    /// A server with `arguments`, alice's terminal on document `d`, and bob's
    /// (a viewer of it) with the document open and a small receive buffer, which it never reads.
    private func writerAndViewerThatDoesNotRead(_ db: TestDatabase, _ arguments: [String]) throws -> (ServerProcess, Terminal, Terminal) {
        let server = try ServerProcess(database: db, arguments: arguments)
        let writer = try Terminal(port: server.port)
        try writer.hello("alice", db)
        try writer.request("create_doc", [("doc", "d")])
        try writer.share("d", "bob", "viewer")
        let slow = try Terminal(port: server.port, receiveBuffer: 4096)
        try slow.hello("bob", db)
        XCTAssertEqual(try slow.request("open", [("doc", "d")])["ok"], true)
        return (server, writer, slow)
    }

    /// 300 events of 20 KB on `d`, each acknowledged before the next: more than
    /// the kernel's buffers on both sides hold (several MB on loopback), so the rest waits in the server.
    private func writeBigEvents(_ writer: Terminal) throws {
        let big = String(repeating: "x", count: 20_000)
        for i in 0..<300 {
            try writer.submit("d", tx: "w\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "blob", "value": .string(big + String(i))]])
        }
    }

    func testASilentConnectionIsClosedAsIdle() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--idle-timeout", "1"])
        let t = try Terminal(port: server.port)
        try t.hello("alice", db)
        let bye = try t.push("bye")
        XCTAssertEqual(bye["reason"], "idle")
        XCTAssertNil(t.readLine())
    }
}
