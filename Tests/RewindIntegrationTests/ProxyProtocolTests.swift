import Foundation
import RewindCore
import XCTest

/// Behind a TCP load balancer every connection comes from the balancer's
/// address; with `--proxy-protocol-from` the PROXY header it sends names the
/// client, and the per-address limits count clients, not the balancer.
final class ProxyProtocolTests: XCTestCase {
    /// A connection as HAProxy makes it: the v1 header naming `client`, then the terminal's own bytes.
    private func viaBalancer(_ server: ServerProcess, client: String) throws -> Terminal {
        let t = try Terminal(port: server.port)
        t.sendRaw(Array("PROXY TCP4 \(client) 127.0.0.1 40000 7400\r\n".utf8))
        return t
    }

    func testFailedHellosOfOneClientDoNotThrottleTheOthersBehindTheBalancer() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--proxy-protocol-from", "127.0.0.1", "--log-level", "notice"])
        let guesser = try viaBalancer(server, client: "203.0.113.66")
        var codes: [String?] = []
        for i in 0..<11 { codes.append(try guesser.request("hello", [("user", "alice"), ("token", .string("guess-\(i)"))]).errorCode) }
        XCTAssertEqual(codes, Array(repeating: "unauthorized", count: 11))
        XCTAssertEqual(try guesser.push("bye")["reason"], "rate_limited", "the guessing client is throttled: its eleventh try ends its connection")
        // Another client through the same balancer is not.
        let bob = try viaBalancer(server, client: "198.51.100.20")
        XCTAssertEqual(try bob.hello("bob", db)["user"], "bob")
        // And a v2 header works the same (HAProxy send-proxy-v2).
        let v2 = try Terminal(port: server.port)
        let address: [UInt8] = [198, 51, 100, 21, 127, 0, 0, 1, 0x9C, 0x40, 0x1C, 0xE8]
        v2.sendRaw(ProxyHeader.signature + [0x21, 0x11, 0x00, UInt8(address.count)] + address)
        XCTAssertEqual(try v2.hello("alice", db)["user"], "alice")
        XCTAssertTrue(server.log.contains("203.0.113.66"), "the refusals are logged with the client's address: \(server.log)")
    }

    /// A header cut across reads is held until it is whole, and what follows it
    /// in the last piece is the terminal's own first bytes.
    func testAHeaderArrivingInPiecesIsReadWhole() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--proxy-protocol-from", "127.0.0.1"])
        let t = try Terminal(port: server.port)
        let bytes = Array("PROXY TCP4 203.0.113.9 127.0.0.1 40000 7400\r\n{\"id\":1,\"type\":\"ping\"}\n".utf8)
        for (from, to) in [(0, 3), (3, 20), (20, 47), (47, bytes.count)] {
            t.sendRaw(Array(bytes[from..<to]))
            usleep(30_000)
        }
        XCTAssertEqual(try t.next()["re"], 1, "the request behind the header is answered")
        XCTAssertEqual(try t.hello("alice", db)["user"], "alice")
    }

    func testATrustedBalancerThatSendsNoHeaderIsRefused() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--proxy-protocol-from", "127.0.0.1"])
        let t = try Terminal(port: server.port)
        t.send(.obj([("id", 1), ("type", "ping")]))
        let bye = try t.next()
        XCTAssertEqual(bye["push"], "bye")
        XCTAssertEqual(bye["reason"], "bad_frames")
        XCTAssertEqual(bye["retry"], false)
        XCTAssertNil(t.readLine(), "closed after the bye")
    }

    func testWithoutTheOptionAHeaderIsJustABadFrame() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let t = try viaBalancer(server, client: "203.0.113.66")
        let r = try t.next()
        XCTAssertEqual(r.errorCode, "bad_frame", "a PROXY line from an untrusted peer is not taken: \(JSONWriter.string(.object(r)))")
    }
}
