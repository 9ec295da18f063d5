import RewindCore
import RewindLoop
@testable import RewindServer
import XCTest

/// What the server holds for a terminal that said hello and then nothing:
/// with ten thousand of them connected, every byte here is ten kilobytes
/// (`scripts/bench/idle` measures the whole; these keep its parts from
/// growing back unnoticed).
final class IdleFootprintTests: XCTestCase {
    /// The connection and its session each fit the allocator's size class
    /// they were brought down to (192 and 96 bytes: one byte more costs 32
    /// and 16 with jemalloc), and nothing else was made for it: no output
    /// array kept after its reply was written, no room for a close or a
    /// refusal it never had.
    func testAnIdleTerminalHoldsOnlyItsConnectionAndSession() throws {
        let s = try SteppedServer()
        let alice = try s.terminal("alice", client: "idle-terminal-with-a-long-client-id")
        let session = try XCTUnwrap(s.server.sessions.sessions(ofUser: 1).first { $0.client == "idle-terminal-with-a-long-client-id" })
        let c = session.connection
        try s.turn(until: { !c.isDirty && c.out.bytes == 0 }, "the hello's reply to be written")
        XCTAssertLessThanOrEqual(instanceSize(Connection.self), 192, "Connection grew past the 192-byte size class")
        XCTAssertLessThanOrEqual(instanceSize(Session.self), 96, "Session grew past the 96-byte size class")
        XCTAssertEqual(c.out.queue.capacity, 0, "an idle terminal keeps no output array")
        XCTAssertFalse(c.holdsRareState)
        XCTAssertTrue(c.label.hasPrefix("alice/idle-terminal-with-a-long-client-id@127.0.0.1:"), c.label)
        _ = alice
    }

    /// Over a WebSocket too: the framing object fits 80 bytes, and after the
    /// hello it holds nothing between messages (no wslay context, no input, no message queue's
    /// storage: the hello's was kept, 48 bytes a terminal, before).
    func testAnIdleWebSocketTerminalHoldsNoFramingBuffers() throws {
        let s = try SteppedServer()
        let t = try s.connect()
        t.sendRaw(Array("GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
        func connection() -> Connection? { s.server.sessions.all.first }
        try s.turn(until: { connection()?.wire.webSocket != nil }, "the upgrade")
        let hello = Array(#"{"id":1,"type":"hello","user":"alice","token":"\#(s.tokens["alice"]!)"}"#.utf8)
        let mask: [UInt8] = [1, 2, 3, 4]
        precondition(hello.count < 126)
        t.sendRaw([0x81, 0x80 | UInt8(hello.count)] + mask + hello.enumerated().map { $0.element ^ mask[$0.offset % 4] })
        try s.turn(until: { connection()?.session != nil }, "the hello")
        let c = try XCTUnwrap(connection())
        try s.turn(until: { !c.isDirty && c.out.bytes == 0 }, "the hello's reply to be written")
        let framing = try XCTUnwrap(c.wire.webSocket)
        XCTAssertFalse(framing.holdsStorage, "the framing keeps nothing between messages")
        XCTAssertLessThanOrEqual(instanceSize(WebSocketTransport.self), 80, "the framing grew past the 80-byte size class")
        XCTAssertFalse(c.holdsRareState)
    }

    /// A terminal that leaves is freed: nothing (a request still being
    /// processed, a reply waiting for commits) keeps its connection or
    /// session alive after the server has forgotten it.
    func testATerminalThatLeavesIsFreed() throws {
        let s = try SteppedServer()
        _ = try s.terminal("alice", client: "stays")
        let bob = try s.terminal("bob", client: "leaves")
        XCTAssertTrue(try bob.request("create_doc", [("doc", "d")]).isOK)
        XCTAssertTrue(try bob.request("open", [("doc", "d")]).isOK)
        weak var connection: Connection?
        weak var session: Session?
        do {
            let found = try XCTUnwrap(s.server.sessions.sessions(ofUser: 2).first)
            connection = found.connection
            session = found
        }
        // Requests still in flight when it goes: a submit (a reply after its commit) and a ping behind it.
        _ = bob.pipeline([("submit", [("doc", "d"), ("tx", "t1"), ("base", 0), ("ops", [.obj([("op", "set"), ("node", "root"), ("key", "k"), ("value", 1)])])]), ("ping", [])])
        bob.leave()
        try s.turn(until: { s.server.sessions.count == 1 }, "the server to forget bob's connection")
        try s.turn(until: { connection == nil && session == nil }, "bob's connection and session to be freed")
    }

    /// The bytes an instance of `type` asks the allocator for (the Swift runtime's own figure).
    private func instanceSize(_ type: AnyClass) -> Int { Int(swiftClassInstanceExtents(type).positive) }
}

@_silgen_name("_swift_getSwiftClassInstanceExtents")
private func swiftClassInstanceExtents(_ type: AnyClass) -> (negative: UInt, positive: UInt)
