import XCTest
@testable import RewindCore

final class FrameDecoderTests: XCTestCase {
    func feed(_ d: inout FrameDecoder, _ s: String) -> [FrameDecoder.Frame] {
        var out: [FrameDecoder.Frame] = []
        d.feed(Array(s.utf8)) { out.append($0) }
        return out
    }

    func testFramesSplitAcrossReadsAreReassembled() {
        var d = FrameDecoder()
        XCTAssertEqual(feed(&d, #"{"a":1}"# + "\n" + #"{"b""#), [.line(Array(#"{"a":1}"#.utf8))])
        XCTAssertEqual(d.bufferedBytes, 4)
        XCTAssertEqual(feed(&d, ":2}\r\n\n"), [.line(Array(#"{"b":2}"#.utf8))])
        XCTAssertEqual(d.bufferedBytes, 0)
    }

    func testALineOverTheLimitIsReportedOnceAndSkippedToItsNewline() {
        var d = FrameDecoder(maxFrameBytes: 10)
        XCTAssertEqual(feed(&d, "0123456789ABC"), [.tooLarge])
        XCTAssertEqual(feed(&d, "DEFGHIJKLMNOP"), [])
        XCTAssertEqual(feed(&d, "QRS\nok\n"), [.line(Array("ok".utf8))])
        XCTAssertEqual(feed(&d, "0123456789ABCDEF\nnext\n"), [.tooLarge, .line(Array("next".utf8))])
    }

    func testALineOfExactlyTheLimitIsAccepted() {
        var d = FrameDecoder(maxFrameBytes: 4)
        XCTAssertEqual(feed(&d, "ab"), [])
        XCTAssertEqual(feed(&d, "cd\n"), [.line(Array("abcd".utf8))])
    }

    func testByteAtATimeFeedingGivesTheSameFrames() {
        let input = "{\"x\":\"é\"}\n\n{\"y\":[1,2]}\n"
        var whole = FrameDecoder(), bytewise = FrameDecoder()
        let a = feed(&whole, input)
        var b: [FrameDecoder.Frame] = []
        for byte in Array(input.utf8) { bytewise.feed([byte]) { b.append($0) } }
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.count, 2)
    }
}
