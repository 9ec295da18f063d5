import RewindCore
import XCTest

/// Slow and silent terminals cost others nothing.
final class ConnectionLimitTests: XCTestCase {
    func testASlowTerminalIsDisconnectedWhileOthersKeepGoing() throws {
        let db = try TestDatabase()
        // The bye waits behind what the terminal has not read: the grace before
        // the hard close outlasts the writer's 300 submits, however slow the machine.
        let server = try ServerProcess(database: db, arguments: ["--max-output-bytes", "65536", "--close-grace", "120"])
        let writer = try Terminal(port: server.port)
        try writer.hello("alice", db)
        try writer.request("create_doc", [("doc", "d")])
        try writer.share("d", "bob", "viewer")
        // A terminal that opens the document, then never reads.
        let slow = try Terminal(port: server.port, receiveBuffer: 4096)
        try slow.hello("bob", db)
        XCTAssertEqual(try slow.request("open", [("doc", "d")])["ok"], true)
        let big = String(repeating: "x", count: 20_000)
        var start = Date()
        for i in 0..<300 {
            try writer.submit("d", tx: "w\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "blob", "value": .string(big + String(i))]])
            if i == 0 { start = Date() }
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 60, "the writer was held up by the slow terminal")
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
