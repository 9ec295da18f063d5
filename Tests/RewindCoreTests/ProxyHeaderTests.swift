import XCTest
@testable import RewindCore

final class ProxyHeaderTests: XCTestCase {
    private func v2(command: UInt8 = 1, family: UInt8 = 0x11, address: [UInt8], tlv: [UInt8] = []) -> [UInt8] {
        let body = address + tlv
        return ProxyHeader.signature + [0x20 | command, family, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    func testVersion1NamesTheClient() {
        let line = Array("PROXY TCP4 203.0.113.7 10.0.0.2 51234 7400\r\n".utf8)
        XCTAssertEqual(ProxyHeader.parse(line + Array("{\"id\":1}".utf8)), .header(source: "203.0.113.7:51234", length: line.count))
        XCTAssertEqual(ProxyHeader.parse(Array("PROXY TCP6 2001:db8::1 ::1 4000 7400\r\n".utf8)),
                       .header(source: "[2001:db8::1]:4000", length: 38))
        XCTAssertEqual(ProxyHeader.parse(Array("PROXY UNKNOWN\r\n".utf8)), .header(source: nil, length: 15))
    }

    func testVersion1InPiecesNeedsMoreUntilTheLineEnds() {
        let line = Array("PROXY TCP4 203.0.113.7 10.0.0.2 51234 7400\r\n".utf8)
        for n in 0..<line.count { XCTAssertEqual(ProxyHeader.parse(Array(line[0..<n])), .needMore, "after \(n) bytes") }
    }

    func testGarbageAndMalformedLinesAreRefused() {
        for bad in ["{\"id\":1,\"type\":\"hello\"}\n", "PROXX TCP4", "PROXY TCP4 1.2.3 10.0.0.2 1 2\r\n", "PROXY TCP4 1.2.3.4 10.0.0.2 99999 2\r\n",
                    "PROXY TCP4 1.2.3.4 10.0.0.2 1 2\n", "PROXY " + String(repeating: "x", count: 120)] {
            guard case .invalid = ProxyHeader.parse(Array(bad.utf8)) else { return XCTFail("accepted \(bad.debugDescription)") }
        }
    }

    func testVersion2IPv4AndIPv6AndLocal() {
        let ipv4 = v2(address: [198, 51, 100, 9, 10, 0, 0, 2, 0xC0, 0x01, 0x1C, 0xE8], tlv: [0x04, 0x00, 0x01, 0x00])
        XCTAssertEqual(ProxyHeader.parse(ipv4 + [0x7B]), .header(source: "198.51.100.9:49153", length: ipv4.count))
        var v6 = [UInt8](repeating: 0, count: 36)
        v6[0] = 0x20; v6[1] = 0x01; v6[2] = 0x0d; v6[3] = 0xb8; v6[15] = 0x05
        v6[32] = 0x12; v6[33] = 0x34
        XCTAssertEqual(ProxyHeader.parse(v2(family: 0x21, address: v6)), .header(source: "[2001:db8:0:0:0:0:0:5]:4660", length: 52))
        let local = v2(command: 0, family: 0x00, address: [])
        XCTAssertEqual(ProxyHeader.parse(local), .header(source: nil, length: 16))
        for n in 0..<ipv4.count { XCTAssertEqual(ProxyHeader.parse(Array(ipv4[0..<n])), .needMore, "after \(n) bytes") }
    }

    func testVersion2RefusesWrongVersionsAndOversizedHeaders() {
        var wrong = v2(address: [1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 0, 2])
        wrong[12] = 0x11
        guard case .invalid = ProxyHeader.parse(wrong) else { return XCTFail("version 1 in a v2 header accepted") }
        let huge = ProxyHeader.signature + [0x21, 0x11, 0xFF, 0xFF]
        guard case .invalid = ProxyHeader.parse(huge) else { return XCTFail("a 64 KiB header accepted") }
    }
}
