import XCTest
@testable import RewindCore

/// The HTTP side of the listening port (PROTOCOL.md "WebSocket and the web"):
/// the request head parser and what each request is answered, refusal by refusal.
final class WebRouteTests: XCTestCase {
    func head(_ lines: [String]) -> [UInt8] { Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) }

    let upgrade = ["GET /ws HTTP/1.1", "Host: example.com:7878", "Upgrade: websocket", "Connection: keep-alive, Upgrade",
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]

    func route(_ lines: [String], origins: WebRoute.Origins = .listed([]), publicOrigins: String? = nil) -> WebRoute? {
        guard case let .request(r, _) = HTTPRequest.parse(head(lines)) else { return nil }
        return WebRoute.decide(r, origins: origins, publicOrigins: WebRoute.publicOrigins(publicOrigins))
    }

    func status(_ lines: [String], origins: WebRoute.Origins = .listed([]), publicOrigins: String? = nil) -> Int? {
        switch route(lines, origins: origins, publicOrigins: publicOrigins) {
        case .upgrade?: return 101
        case .file?: return 200
        case let .refuse(s, _, _)?: return s
        case nil: return nil
        }
    }

    func testTheHeadIsParsedWhenCompleteAndNotBefore() {
        let bytes = head(upgrade) + Array("\u{81}\u{85}more".utf8)
        for cut in [0, 3, 20, bytes.count - 12] { XCTAssertEqual(HTTPRequest.parse(Array(bytes[..<cut])), .needMore, "cut at \(cut)") }
        guard case let .request(r, length) = HTTPRequest.parse(bytes) else { return XCTFail() }
        XCTAssertEqual(length, head(upgrade).count, "what follows the head is left for the WebSocket")
        XCTAssertEqual(r.method, "GET")
        XCTAssertEqual(r.path, "/ws")
        XCTAssertEqual(r.header("host"), "example.com:7878")
        XCTAssertTrue(r.header("connection", contains: "upgrade"))
        // A hand-typed head ends at an empty line of bare newlines too; a query string is not part of the path.
        guard case let .request(q, _) = HTTPRequest.parse(Array("GET /?x=1 HTTP/1.0\nHost: a\n\n".utf8)) else { return XCTFail() }
        XCTAssertEqual(q.path, "/")
    }

    func testMalformedHeadsAreRefusedWith400AndLargeOnesWith431() {
        for bad in ["GET /ws", "get /ws HTTP/1.1", "GET ws HTTP/1.1", "GET /ws HTTP/2.0", "GET  /ws HTTP/1.1"] {
            guard case .refused(400, _) = HTTPRequest.parse(head([bad])) else { return XCTFail(bad) }
        }
        guard case .refused(400, _) = HTTPRequest.parse(head(["GET / HTTP/1.1", "no colon here"])) else { return XCTFail() }
        guard case .refused(400, _) = HTTPRequest.parse(head(["GET / HTTP/1.1", "Bad Name: x"])) else { return XCTFail() }
        let big = head(["GET / HTTP/1.1"] + (0..<100).map { "X-\($0): " + String(repeating: "a", count: 90) })
        guard case .refused(431, _) = HTTPRequest.parse(big) else { return XCTFail() }
        // Past the bound before the head is even complete: 431 at once, nothing more is read.
        guard case .refused(431, _) = HTTPRequest.parse(Array(big[..<(HTTPRequest.maxBytes + 1)])) else { return XCTFail() }
    }

    func testEveryRefusalOfTheUpgrade() {
        XCTAssertEqual(status(upgrade), 101)
        XCTAssertEqual(status(upgrade.filter { !$0.hasPrefix("Upgrade") }), 400, "no Upgrade")
        XCTAssertEqual(status(upgrade.filter { !$0.hasPrefix("Connection") }), 400, "no Connection: Upgrade")
        XCTAssertEqual(status(upgrade.filter { !$0.hasPrefix("Sec-WebSocket-Key") }), 400, "no key")
        XCTAssertEqual(status(upgrade.map { $0.hasPrefix("Sec-WebSocket-Key") ? "Sec-WebSocket-Key: c2hvcnQ=" : $0 }), 400, "a key of 5 bytes")
        XCTAssertEqual(status(upgrade.map { $0.hasPrefix("Sec-WebSocket-Key") ? "Sec-WebSocket-Key: !!!!" : $0 }), 400, "not base64")
        XCTAssertEqual(status(["GET /ws HTTP/1.0"] + upgrade.dropFirst()), 400, "HTTP/1.0")
        guard case let .refuse(426, _, headers)? = route(upgrade.map { $0.hasPrefix("Sec-WebSocket-Version") ? "Sec-WebSocket-Version: 8" : $0 }) else { return XCTFail() }
        XCTAssertEqual(headers, ["Sec-WebSocket-Version: 13"])
        XCTAssertEqual(status(upgrade.filter { !$0.hasPrefix("Sec-WebSocket-Version") }), 426)
        XCTAssertEqual(status(["POST /ws HTTP/1.1"] + upgrade.dropFirst()), 405)
        XCTAssertEqual(status(["GET /other HTTP/1.1", "Host: x"]), 404)
        XCTAssertEqual(status(["DELETE / HTTP/1.1", "Host: x"]), 405)
        XCTAssertEqual(status(["GET / HTTP/1.1", "Host: x"]), 200)
        XCTAssertEqual(status(["GET /rewind.js HTTP/1.1", "Host: x"]), 200)
        XCTAssertEqual(status(["GET /local-document.js HTTP/1.1", "Host: x"]), 200, "a module of the editor")
        XCTAssertEqual(status(["GET /editor.css HTTP/1.1", "Host: x"]), 200)
        for path in ["/../etc/passwd", "/..js", "/.js", "/-x.js", "/a/b.js", "/A.js", "/x.html", "/x.js.map", "/%2e%2e.js", "/x.JS"] {
            XCTAssertEqual(status(["GET \(path) HTTP/1.1", "Host: x"]), 404, "\(path): nothing outside the folder's own .js and .css")
        }
    }

    func testOrigins() {
        func at(_ host: String) -> [String] { upgrade.map { $0.hasPrefix("Host:") ? "Host: " + host : $0 } }
        // The page the server served, at a loopback name or an IP literal: its own origin.
        XCTAssertEqual(status(at("127.0.0.1:7878") + ["Origin: http://127.0.0.1:7878"]), 101, "the server's own page")
        XCTAssertEqual(status(at("127.0.0.1:7878") + ["Origin: https://127.0.0.1:7878"]), 101, "behind a TLS proxy")
        XCTAssertEqual(status(at("LOCALHOST:7878") + ["Origin: http://localhost:7878"]), 101, "without case")
        XCTAssertEqual(status(at("[::1]:7878") + ["Origin: http://[::1]:7878"]), 101)
        XCTAssertEqual(status(at("10.1.2.3") + ["Origin: http://10.1.2.3"]), 101)
        XCTAssertEqual(status(at("127.0.0.1:7878") + ["Origin: http://evil.example"]), 403)
        XCTAssertEqual(status(at("127.0.0.1:7878") + ["Origin: null"]), 403)
        // A name in Host proves nothing: a page at evil.example whose name an
        // attacker points at this server sends Host and Origin alike (DNS rebinding).
        XCTAssertEqual(status(at("evil.example") + ["Origin: http://evil.example"]), 403)
        XCTAssertEqual(status(upgrade + ["Origin: http://example.com:7878"]), 403, "a name must be given with --public-origin")
        guard case let .refuse(_, reason, _)? = route(upgrade + ["Origin: http://example.com:7878"]) else { return XCTFail() }
        XCTAssertTrue(reason.contains("--public-origin"), reason)
        // Named with --public-origin (case and a trailing slash do not matter); then only those are the server's own.
        let named = "https://Example.com:7878/, http://example.com:7878"
        XCTAssertEqual(status(upgrade + ["Origin: https://EXAMPLE.com:7878"], publicOrigins: named), 101)
        XCTAssertEqual(status(at("evil.example") + ["Origin: http://example.com:7878"], publicOrigins: named), 101, "whatever Host says")
        XCTAssertEqual(status(at("evil.example") + ["Origin: http://evil.example"], publicOrigins: named), 403)
        XCTAssertEqual(status(at("127.0.0.1:7878") + ["Origin: http://127.0.0.1:7878"], publicOrigins: named), 403, "Host no longer decides")
        // Others, listed.
        XCTAssertEqual(status(upgrade + ["Origin: https://app.example"], origins: WebRoute.Origins("https://app.example, https://b.example")), 101)
        XCTAssertEqual(status(upgrade + ["Origin: https://c.example"], origins: WebRoute.Origins("https://app.example")), 403)
        XCTAssertEqual(status(upgrade + ["Origin: https://c.example"], origins: WebRoute.Origins("*")), 101)
        XCTAssertEqual(status(upgrade), 101, "no Origin: not a browser")
    }

    func testWhichHostsAreLoopbackOrLiteral() {
        for host in ["127.0.0.1", "127.0.0.1:80", "10.0.0.5:7878", "[::1]", "[::1]:7878", "[fe80::1%25eth0]:1", "localhost", "localhost:7878"] {
            XCTAssertTrue(WebRoute.isLoopbackOrLiteral(host), host)
        }
        for host in ["example.com", "evil.localhost", "127.0.0.1.evil.example", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4:", "1.2.3.4:x",
                     "[::1", "[::1]x", "[::1]:", "", "0x7f.0.0.1"] {
            XCTAssertFalse(WebRoute.isLoopbackOrLiteral(host), host)
        }
    }

    func testDetectionByTheFirstBytes() {
        XCTAssertEqual(HTTPRequest.startsRequest(Array("GET / HTTP/1.1".utf8)), true)
        XCTAssertEqual(HTTPRequest.startsRequest(Array("POST /".utf8)), true)
        // Every method is HTTP (refused with 405), not an NDJSON line answered bad_frame.
        for m in ["TRACE", "CONNECT", "PROPFIND", "MKCALENDAR", "M-SEARCH", "BASELINE-CONTROL"] {
            XCTAssertEqual(HTTPRequest.startsRequest(Array((m + " /").utf8)), true, m)
            XCTAssertEqual(HTTPRequest.startsRequest(Array(m.utf8)), nil, "\(m): too few bytes to tell")
        }
        XCTAssertEqual(HTTPRequest.startsRequest(Array("GE".utf8)), nil, "too few bytes to tell")
        XCTAssertEqual(HTTPRequest.startsRequest(Array("{\"id\":1}".utf8)), false)
        XCTAssertEqual(HTTPRequest.startsRequest(Array("get / HTTP/1.1".utf8)), false, "methods are case-sensitive")
        XCTAssertEqual(HTTPRequest.startsRequest(Array(" GET /".utf8)), false)
        XCTAssertEqual(HTTPRequest.startsRequest(Array("-X /".utf8)), false)
        XCTAssertEqual(HTTPRequest.startsRequest(Array("PROXY TCP4 203.0.113.7 10.0.0.1 5000 7878\r\n".utf8)), false,
                       "a PROXY header where none is expected is NDJSON (bad_frame)")
        XCTAssertEqual(HTTPRequest.startsRequest(Array("GET{".utf8)), false)
        XCTAssertEqual(HTTPRequest.startsRequest(Array(String(repeating: "A", count: 21).utf8)), false, "no method is that long")
        for line in ["TRACE / HTTP/1.1", "CONNECT example.com:443 HTTP/1.1", "PROPFIND /dav HTTP/1.1", "OPTIONS * HTTP/1.1", "M-SEARCH * HTTP/1.1", "HEAD / HTTP/1.1"] {
            XCTAssertEqual(status([line, "Host: x"]), 405, line)
        }
        XCTAssertEqual(status(["GET * HTTP/1.1", "Host: x"]), 404)
        guard case .refused(400, _) = HTTPRequest.parse(head(["GET example.com:443 HTTP/1.1"])) else { return XCTFail("only CONNECT names host:port") }
    }

    func testBase64RoundTripsAndTheAcceptKeyOfTheRFC() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            XCTAssertEqual(Base64.decode(Base64.encode(bytes)), bytes)
        }
        XCTAssertEqual(Base64.encode(Array("the sample nonce".utf8)), "dGhlIHNhbXBsZSBub25jZQ==")
        XCTAssertNil(Base64.decode("abc"))
        XCTAssertNil(Base64.decode("a=bc"))
        XCTAssertNil(Base64.decode("dGhlIHNhbXBsZSBub2Q5jZ=="), "bits left over by the padding are not zero (found by the fuzzer)")
        XCTAssertEqual(Base64.decode("dGg="), Array("th".utf8))
        XCTAssertNil(Base64.decode("dGh="))
    }

    func testWholeFramesAreFoundAndAHugeOneIsNotWaitedFor() {
        let masked: [UInt8] = [0x81, 0x83, 1, 2, 3, 4, 9, 9, 9]  // 2 + 4 + 3
        let unmasked: [UInt8] = [0x89, 0x01, 7]
        let long: [UInt8] = [0x81, 0xFE, 0x01, 0x00] + [0, 0, 0, 0] + Array(repeating: 1, count: 256)
        let all = masked + unmasked + long
        XCTAssertEqual(WebSocketFrame.wholeFramesEnd(all, from: 0, maxPayload: 1 << 20), all.count)
        XCTAssertEqual(WebSocketFrame.wholeFramesEnd(Array(all.dropLast()), from: 0, maxPayload: 1 << 20), masked.count + unmasked.count)
        XCTAssertEqual(WebSocketFrame.wholeFramesEnd(Array(masked.prefix(5)), from: 0, maxPayload: 1 << 20), 0)
        XCTAssertEqual(WebSocketFrame.wholeFramesEnd(all, from: masked.count, maxPayload: 1 << 20), all.count)
        let huge: [UInt8] = [0x81, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2]
        XCTAssertEqual(WebSocketFrame.wholeFramesEnd(huge, from: 0, maxPayload: 1 << 20), huge.count, "refused at once, not waited for")
    }

    func testFrameHeadersUseTheShortestLength() {
        XCTAssertEqual(WebSocketFrame.header(.text, length: 125), [0x81, 125])
        XCTAssertEqual(WebSocketFrame.header(.text, length: 126), [0x81, 126, 0, 126])
        XCTAssertEqual(WebSocketFrame.header(.continuation, fin: false, length: 65_536), [0x00, 127, 0, 0, 0, 0, 0, 1, 0, 0])
        XCTAssertEqual(WebSocketFrame.closeCode(forBye: "shutdown"), 1001)
        XCTAssertEqual(WebSocketFrame.closeCode(forBye: "unauthorized"), 1008)
        XCTAssertEqual(WebSocketFrame.closeCode(forBye: "slow"), 1013)
        XCTAssertEqual(WebSocketFrame.closeCode(forBye: "replaced"), 1000)
    }
}
