import Foundation
import Glibc
import RewindCore
import RewindStore
import XCTest

/// Limits (docs/protocol.md, "Limits"): what a client that sends too much, too fast, too
/// slowly or too strangely gets, and that it costs the others nothing.
final class LimitTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        // Writing to a connection the server closed must fail the write, not kill the test process.
        signal(SIGPIPE, SIG_IGN)
    }

    // MARK: Helpers

    /// Resident memory of a process, in KiB (VmRSS).
    func rssKiB(_ pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Whether a line (or the end) can be read from `t` within `ms`.
    func readable(_ t: Terminal, within ms: Int32) -> Bool {
        var pfd = pollfd(fd: t.fd, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, ms) > 0
    }

    /// `request` and its round-trip time in milliseconds.
    func timed(_ t: Terminal, _ type: String) throws -> (JSONObject, Double) {
        let start = Date()
        let r = try t.request(type)
        return (r, Date().timeIntervalSince(start) * 1000)
    }

    /// Sends one request written by hand (numbers as a client may spell them) and returns its reply.
    func raw(_ t: Terminal, _ id: Int64, _ line: String) throws -> JSONObject {
        t.sendRaw(Array(line.utf8) + [0x0A])
        return try t.reply(to: id)
    }

    /// Writes `bytes` on another thread (the server may stop reading long before the end);
    /// `wait` returns once the writer gave up, after the socket was shut down.
    final class BackgroundWriter: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)

        init(fd: Int32, bytes: [UInt8]) {
            Thread { [done] in
                var sent = 0
                while sent < bytes.count {
                    let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if n <= 0 { break }
                    sent += n
                }
                done.signal()
            }.start()
        }

        func wait() { done.wait() }
    }

    // MARK: Requests per connection

    func testRequestsPastTheRateAreRefusedWithAWaitThenServedAgain() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--requests-per-second", "50"])
        let t = try Terminal(port: server.port)
        try t.hello("alice", db)
        let replies = try t.pipeline((1000..<1300).map { ["id": .int($0), "type": "ping"] })
        let ok = replies.values.filter { $0["ok"] == true }
        let limited = replies.values.filter { $0.errorCode == "rate_limited" }
        print("300 pipelined pings at 50/s (burst 100): \(ok.count) ok, \(limited.count) rate_limited")
        XCTAssertEqual(ok.count + limited.count, 300)
        XCTAssertGreaterThan(ok.count, 50, "the burst lets about 100 through at once")
        XCTAssertLessThan(ok.count, 200)
        XCTAssertGreaterThan(limited.count, 0)
        for r in limited {
            let wait = r["error"]?.objectValue?["details"]?.objectValue?["retry_after_ms"]?.intValue
            XCTAssertNotNil(wait, JSONWriter.string(.object(r)))
            XCTAssertGreaterThan(wait ?? 0, 0)
        }
        sleep(1)
        XCTAssertEqual(try t.request("ping")["ok"], true, "after waiting, the connection is served again")
    }

    // MARK: Connections

    func testAUserPastItsConnectionLimitIsToldRateLimited() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--max-connections-per-user", "2"])
        let first = try Terminal(port: server.port), second = try Terminal(port: server.port)
        try first.hello("alice", db)
        try second.hello("alice", db)
        let third = try Terminal(port: server.port)
        third.send(["id": 1, "type": "hello", "user": "alice", "token": .string(db.tokens["alice"]!)])
        let bye = try third.push("bye")
        XCTAssertEqual(bye["reason"], "rate_limited")
        XCTAssertNil(third.readLine(), "the connection ends after the bye")
        XCTAssertEqual(try first.request("ping")["ok"], true)
        XCTAssertEqual(try second.request("ping")["ok"], true)
        // The limit is per user: bob connects as usual.
        let bob = try Terminal(port: server.port)
        XCTAssertEqual(try bob.hello("bob", db)["user"], "bob")
        // Once alice closes one, she may connect again.
        first.disconnect()
        var admitted = false
        let deadline = Date().addingTimeInterval(3)
        while !admitted && Date() < deadline {
            let t = try Terminal(port: server.port)
            t.send(["id": 1, "type": "hello", "user": "alice", "token": .string(db.tokens["alice"]!)])
            admitted = try t.next()["ok"] == true
            if !admitted { usleep(100_000) }
        }
        XCTAssertTrue(admitted, "a connection closed by alice still counted against her")
    }

    func testConnectionsThatHaveNotSaidHelloAreBoundedPerAddress() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--max-handshakes-per-address", "3"])
        let silent = try (0..<3).map { _ in try Terminal(port: server.port) }
        usleep(200_000)
        for t in silent { XCTAssertFalse(readable(t, within: 0), "a connection within the limit is left alone") }
        // A fourth that speaks NDJSON is told at once, in NDJSON; its hello is not read.
        var start = Date()
        let fourth = try Terminal(port: server.port)
        fourth.send(["id": 1, "type": "hello", "user": "alice", "token": .string(db.tokens["alice"]!)])
        let bye = try fourth.next()
        XCTAssertEqual(bye["push"], "bye", "\(bye)")
        XCTAssertEqual(bye["reason"], "rate_limited")
        XCTAssertLessThan(Date().timeIntervalSince(start), 1, "told at once")
        XCTAssertNil(fourth.readLine())
        // One that speaks HTTP (a browser opening the WebSocket) is answered in HTTP: 503, and when to try again.
        start = Date()
        let browser = try WebSocketTerminal(port: server.port)
        XCTAssertEqual(browser.status, 503, browser.responseHead)
        XCTAssertTrue(browser.responseHead.contains("Retry-After: 1"), browser.responseHead)
        XCTAssertLessThan(Date().timeIntervalSince(start), 1, "told at once")
        // One that says nothing is told in NDJSON after a second or two.
        let silentFourth = try Terminal(port: server.port)
        XCTAssertEqual(try silentFourth.push("bye")["reason"], "rate_limited")
        XCTAssertNil(silentFourth.readLine())
        // The three may still say hello; and once one has, another connection is admitted.
        XCTAssertEqual(try silent[0].hello("alice", db)["user"], "alice")
        let fifth = try Terminal(port: server.port)
        XCTAssertEqual(try fifth.hello("bob", db)["user"], "bob")
    }

    /// Ten wrong tokens from one address throttle it: each connection then
    /// has one try (a wrong token ends it with `bye` `rate_limited`), but the
    /// right token still gets in at once — users behind one NAT address are
    /// not locked out by someone else's guesses.
    func testFailedHellosAreThrottledPerAddressButTheRightTokenGetsIn() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let t = try Terminal(port: server.port)
        var codes: [String?] = []
        for i in 0..<11 {
            let r = try t.request("hello", [("user", "alice"), ("token", .string("guess-\(i)"))])
            codes.append(r.errorCode)
        }
        XCTAssertEqual(codes, Array(repeating: "unauthorized", count: 11))
        let bye = try t.push("bye")
        XCTAssertEqual(bye["reason"], "rate_limited", "the eleventh wrong token, while throttled, ends the connection")
        XCTAssertNil(t.readLine())
        // Still throttled: the right token is accepted at once.
        let another = try Terminal(port: server.port)
        XCTAssertEqual(try another.hello("alice", db)["user"], "alice")
        // A wrong one costs its connection.
        let guesser = try Terminal(port: server.port)
        XCTAssertEqual(try guesser.request("hello", [("user", "alice"), ("token", "guess-again")]).errorCode, "unauthorized")
        XCTAssertEqual(try guesser.push("bye")["reason"], "rate_limited")
    }

    // MARK: Incomplete lines

    func testTricklingBytesWithoutANewlineDoesNotKeepAConnectionAlive() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--idle-timeout", "2", "--handshake-timeout", "60"])
        let t = try Terminal(port: server.port)
        try t.hello("alice", db)
        let start = Date()
        var bye: JSONObject?
        while bye == nil && Date().timeIntervalSince(start) < 8 {
            t.sendRaw(Array("x".utf8))
            if readable(t, within: 300) { bye = try t.push("bye") }
        }
        let after = Date().timeIntervalSince(start)
        print("a trickle of one byte per 300 ms was closed after \(Int(after * 1000)) ms")
        XCTAssertEqual(bye?["reason"], "idle")
        XCTAssertLessThan(after, 4.5)
    }

    func testAnIncompleteLineHeldTooLongClosesTheConnection() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--handshake-timeout", "1"])
        let t = try Terminal(port: server.port), other = try Terminal(port: server.port)
        try t.hello("alice", db)
        try other.hello("bob", db)
        let start = Date()
        t.sendRaw(Array(#"{"id":2,"type":"pi"#.utf8))
        let bye = try t.push("bye")
        let after = Date().timeIntervalSince(start)
        print("an incomplete line was closed after \(Int(after * 1000)) ms")
        XCTAssertEqual(bye["reason"], "partial_line")
        XCTAssertLessThan(after, 3)
        XCTAssertNil(t.readLine())
        // A connection sending whole lines is not affected by the short handshake timeout.
        XCTAssertEqual(try other.request("ping")["ok"], true)
    }

    func testIncompleteLinesAreBoundedOverAllConnections() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--max-partial-bytes", "1000000"])
        let ts = try (0..<3).map { _ in try Terminal(port: server.port) }
        for t in ts { try t.hello("alice", db) }
        // Each one a ping with 600,000 bytes of padding, its end not sent yet.
        let start = Array(#"{"id":50,"type":"ping","pad":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 600_000)
        ts[0].sendRaw(start)
        usleep(500_000)  // the server holds the first one's 600 kB
        ts[1].sendRaw(start)
        let bye = try ts[1].push("bye")
        XCTAssertEqual(bye["reason"], "rate_limited")
        ts[2].sendRaw(start)
        // The first finishes its line and is answered, then answered again.
        ts[0].sendRaw(Array("\"}\n".utf8))
        XCTAssertEqual(try ts[0].reply(to: 50)["ok"], true)
        XCTAssertEqual(try ts[0].request("ping")["ok"], true)
    }

    // MARK: Output bound

    /// Pings from `pinger` 20 times, 50 ms apart: the slowest round trip (ms) and the peak RSS of `pid` (KiB) meanwhile.
    func pingWhileFlooding(_ pinger: Terminal, _ pid: Int32) throws -> (slowest: Double, peak: Int) {
        var slowest = 0.0, peak = rssKiB(pid)
        for _ in 0..<20 {
            let (r, ms) = try timed(pinger, "ping")
            XCTAssertEqual(r["ok"], true)
            slowest = max(slowest, ms)
            peak = max(peak, rssKiB(pid))
            usleep(50_000)
        }
        return (slowest, peak)
    }

    /// Document `h` whose history for alice holds `groups` undo groups (each history reply lists them all).
    func createHistory(_ alice: Terminal, groups: Int) throws {
        XCTAssertEqual(try alice.request("create_doc", [("doc", "h")])["ok"], true)
        let edits = try alice.pipeline((1...groups).map { i in
            ["id": .int(10_000 + Int64(i)), "type": "submit", "doc": "h", "tx": .string("h\(i)"), "base": 0, "action": .string("Edit \(i)"),
             "ops": [["op": "set", "node": "root", "key": .string("k\(i)"), "value": .int(Int64(i))]]]
        })
        XCTAssertTrue(edits.values.allSatisfy { $0["ok"] == true })
        XCTAssertEqual(try alice.request("open", [("doc", "h")])["ok"], true)
        XCTAssertEqual(try alice.request("history", [("doc", "h")])["undo"]?.arrayValue?.count, groups)
    }

    /// `open h` followed by `count` `history h`, in one buffer.
    func historyFlood(_ count: Int) -> [UInt8] {
        var flood = Message.line(["id": 1, "type": "open", "doc": "h"])
        let one = Message.line(["id": 2, "type": "history", "doc": "h"])
        flood.reserveCapacity(flood.count + one.count * count)
        for _ in 0..<count { flood += one }
        return flood
    }

    func testAClientThatPipelinesAndNeverReadsCannotGrowTheServer() throws {
        let db = try TestDatabase()
        // A high request rate: only the output bound holds the flood back.
        let server = try ServerProcess(database: db, arguments: ["--requests-per-second", "1000000"])
        let pid = server.pid
        let alice = try Terminal(port: server.port, timeout: 60)
        try alice.hello("alice", db)
        try alice.createLargeDocument("d", nodes: 20)
        let pinger = try Terminal(port: server.port)
        try pinger.hello("bob", db)

        // 1. 3,000 opens of a 4 MB document, never read.
        let opener = try Terminal(port: server.port)
        try opener.hello("alice", db)
        let opens = (1...3000).flatMap { Message.line(["id": .int(Int64($0)), "type": "open", "doc": "d"]) }
        var before = rssKiB(pid)
        let openWriter = BackgroundWriter(fd: opener.fd, bytes: opens)
        var (slowest, peak) = try pingWhileFlooding(pinger, pid)
        print("3,000 unread opens of a 4 MB document: RSS \(before / 1024) MiB before, peak \(peak / 1024) MiB (+\((peak - before) / 1024) MiB); slowest of 20 pings \(String(format: "%.1f", slowest)) ms")
        XCTAssertLessThan(slowest, 100, "pings wait behind the flood")
        XCTAssertLessThan(peak - before, 128 << 10, "the server's memory grew with the unread replies")
        opener.disconnect()
        openWriter.wait()
        XCTAssertEqual(try pinger.request("ping")["ok"], true)

        // 2. 200,000 `history` requests, each answered with 20 undo groups (about 1.7 kB; 340 MB in all), never read.
        try createHistory(alice, groups: 20)
        let flooder = try Terminal(port: server.port)
        try flooder.hello("alice", db)
        let flood = historyFlood(200_000)
        before = rssKiB(pid)
        let floodWriter = BackgroundWriter(fd: flooder.fd, bytes: flood)
        (slowest, peak) = try pingWhileFlooding(pinger, pid)
        print("200,000 unread history requests (\(flood.count / 1_000_000) MB): RSS \(before / 1024) MiB before, peak \(peak / 1024) MiB (+\((peak - before) / 1024) MiB); slowest of 20 pings \(String(format: "%.1f", slowest)) ms")
        XCTAssertLessThan(slowest, 100)
        XCTAssertLessThan(peak - before, 128 << 10)
        flooder.disconnect()
        floodWriter.wait()
        XCTAssertEqual(try pinger.request("ping")["ok"], true)
    }

    func testRequestsWaitingForTheirDocumentAreBoundedToo() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--requests-per-second", "1000000"])
        let pid = server.pid
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", db)
        try createHistory(alice, groups: 20)
        let pinger = try Terminal(port: server.port)
        try pinger.hello("bob", db)
        let flooder = try Terminal(port: server.port)
        try flooder.hello("alice", db)
        // The storage is slow for a second: the `open` at the head of the flood waits for
        // its head check, and the history requests behind it wait for the document.
        let locker = try Database(db.conninfo)
        try locker.query("BEGIN")
        try locker.query("LOCK TABLE documents IN ACCESS EXCLUSIVE MODE")
        let flood = historyFlood(200_000)
        let before = rssKiB(pid)
        let floodWriter = BackgroundWriter(fd: flooder.fd, bytes: flood)
        sleep(1)
        let waiting = rssKiB(pid)
        try locker.query("COMMIT")
        let (slowest, peak) = try pingWhileFlooding(pinger, pid)
        print("200,000 history requests behind a slow open: RSS \(before / 1024) MiB before, \(waiting / 1024) MiB while it waits, peak \(peak / 1024) MiB after (+\((peak - before) / 1024) MiB); slowest of 20 pings \(String(format: "%.1f", slowest)) ms")
        XCTAssertLessThan(waiting - before, 16 << 10, "requests queued behind the open")
        XCTAssertLessThan(peak - before, 128 << 10, "the queued requests were all answered at once, past the output bound")
        XCTAssertLessThan(slowest, 100, "the queued requests were all answered in one loop turn")
        // The flooder was held back, not dropped: once it reads, its replies come in order.
        XCTAssertEqual(try flooder.reply(to: 1)["ok"], true)
        XCTAssertEqual(try flooder.reply(to: 2)["undo"]?.arrayValue?.count, 20)
        flooder.disconnect()
        floodWriter.wait()
    }

    // MARK: Strictness

    func testMalformedNumbersEmptyTransactionsAndOversizedPropsAppendNothing() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let t = try Terminal(port: server.port)
        XCTAssertEqual(try t.request("ping").errorCode, "unauthorized", "ping before hello")
        try t.hello("alice", db)
        XCTAssertEqual(try t.request("create_doc", [("doc", "d")])["ok"], true)
        try t.submit("d", tx: "seed", base: 0, [["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text",
                                                 "frame": [0, 0, 100, 20], "focusable": true, "text": "hello"]])
        let set = #"[{"op":"set","node":"root","key":"k","value":1}]"#
        let cases: [(String, String, String)] = [
            ("base 1e2", #"{"id":10,"type":"submit","doc":"d","tx":"a","base":1e2,"ops":\#(set)}"#, "bad_request"),
            ("pos 1.0", #"{"id":11,"type":"submit","doc":"d","tx":"b","base":1,"ops":[{"op":"insert","node":"t","pos":1.0,"text":"a"}]}"#, "bad_request"),
            ("empty ops", #"{"id":12,"type":"submit","doc":"d","tx":"c","base":1,"ops":[]}"#, "bad_request"),
            ("selection on a missing node", #"{"id":13,"type":"submit","doc":"d","tx":"d","base":1,"ops":\#(set),"selection":{"node":"ghost","start":0,"end":0}}"#, "not_found"),
            ("selection past the text", #"{"id":14,"type":"submit","doc":"d","tx":"e","base":1,"ops":\#(set),"selection":{"node":"t","start":0,"end":6}}"#, "bad_request"),
            ("a 300,000-byte prop", #"{"id":15,"type":"submit","doc":"d","tx":"f","base":1,"ops":[{"op":"set","node":"t","key":"big","value":"\#(String(repeating: "z", count: 300_000))"}]}"#, "too_large"),
            ("open since 1.5", #"{"id":16,"type":"open","doc":"d","since":1.5}"#, "bad_request"),
        ]
        for (what, line, code) in cases {
            let id = try JSONParser.parse(Array(line.utf8)).objectValue!["id"]!.intValue!
            let r = try raw(t, id, line)
            XCTAssertEqual(r.errorCode, code, "\(what): \(JSONWriter.string(.object(r)).prefix(300))")
        }
        XCTAssertEqual(try db.eventCount("d"), 1, "nothing refused was appended")
        XCTAssertEqual(try t.request("open", [("doc", "d")])["version"], 1)
        // The same requests written properly go through: the refusals were about the spelling.
        XCTAssertEqual(try raw(t, 20, #"{"id":20,"type":"submit","doc":"d","tx":"g","base":1,"ops":[{"op":"insert","node":"t","pos":1,"text":"a"}],"selection":{"node":"t","start":0,"end":5}}"#)["ok"], true)
        XCTAssertEqual(try raw(t, 21, #"{"id":21,"type":"submit","doc":"d","tx":"h","base":100,"ops":\#(set)}"#).errorCode, "version")
    }

    // MARK: Large documents

    func testALargeDocumentOpensIntact() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let alice = try Terminal(port: server.port, timeout: 60)
        try alice.hello("alice", db)
        try alice.createLargeDocument("d", nodes: 15)
        let reader = try Terminal(port: server.port, timeout: 60)
        try reader.hello("alice", db)
        // Read with large reads (the harness reads line by line) until the line starting with `head` is complete.
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var lineStart = 0
        func readLine(startingWith head: String) throws -> ArraySlice<UInt8> {
            let head = Array(head.utf8)
            while true {
                while let nl = data[lineStart...].firstIndex(of: 0x0A) {
                    let line = data[lineStart..<nl]
                    lineStart = nl + 1
                    XCTAssertNotNil(try? JSONParser.parse(Array(line)).objectValue, "a broken line: \(String(decoding: line.prefix(200), as: UTF8.self))")
                    if line.starts(with: head) { return line }
                }
                let n = read(reader.fd, &chunk, chunk.count)
                guard n > 0 else { throw TestFailure("the connection ended after \(data.count) bytes") }
                data += chunk[..<n]
            }
        }
        let start = Date()
        reader.send(["id": 99, "type": "open", "doc": "d"])
        let line = try readLine(startingWith: #"{"re":99,"#)
        let received = Date()
        let r = try JSONParser.parse(Array(line)).objectValue!
        let replayed = try Replay.document("d", db: db.db)
        let sent = JSONWriter.string(r["state"] ?? .null)
        print("open of a \(line.count / 1_000_000) MB document: reply received in \(Int(received.timeIntervalSince(start) * 1000)) ms, parsed and compared in \(Int(Date().timeIntervalSince(received) * 1000)) ms")
        XCTAssertEqual(r["version"], 4)
        XCTAssertEqual(r["state"]?.objectValue?["nodes"]?.objectValue?.keys.count, 16)
        XCTAssertGreaterThan(sent.utf8.count, 3_000_000)
        XCTAssertTrue(sent == JSONWriter.string(replayed.document.json), "the state sent differs from the replayed state")
        // The reply ended where it should: the lines after it are whole, and the connection goes on.
        reader.send(["id": 100, "type": "ping"])
        XCTAssertEqual(try JSONParser.parse(Array(try readLine(startingWith: #"{"re":100,"#))).objectValue?["ok"], true)
        // A peek of it is streamed the same way: the same state, then the connection goes on.
        reader.send(["id": 101, "type": "peek", "doc": "d"])
        let peeked = try JSONParser.parse(Array(try readLine(startingWith: #"{"re":101,"#))).objectValue!
        XCTAssertEqual(peeked["preview"], "pv1")
        XCTAssertTrue(JSONWriter.string(peeked["state"] ?? .null) == sent, "the peeked state differs from the opened one")
        reader.send(["id": 102, "type": "ping"])
        XCTAssertEqual(try JSONParser.parse(Array(try readLine(startingWith: #"{"re":102,"#))).objectValue?["ok"], true)
    }

    /// A server allowed 100 descriptors cannot hold `--max-connections 1000`:
    /// it says so at start, accepts 100 − 64 (kept in reserve) connections,
    /// and tells the next one why with a `bye` instead of dropping it silently.
    func testTheDescriptorLimitLowersTheCapWithAWarningAndByesTheRest() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--max-connections", "1000"], descriptorLimit: 100)
        XCTAssertTrue(server.log.contains("descriptor limit"), server.log)
        XCTAssertTrue(server.log.contains("accepting at most 36 connections"), server.log)
        var held: [Terminal] = []
        for _ in 0..<36 { held.append(try Terminal(port: server.port)) }
        XCTAssertEqual(try held[35].request("hello", [("token", .string(db.tokens["alice"]!))])["ok"], true, "the 36th is served")
        let extra = try Terminal(port: server.port)
        let bye = try extra.push("bye")
        XCTAssertEqual(bye["reason"], "rate_limited")
        XCTAssertEqual(bye["retry"], true)
        XCTAssertEqual(try held[0].request("hello", [("token", .string(db.tokens["bob"]!))])["ok"], true, "the others are untouched")
    }
}
