import XCTest
@testable import RewindCore

/// Seeded fuzzing of the wire codec: whatever bytes arrive, the decoder never
/// crashes, and every line is either a request or a protocol error.
final class CodecFuzzTests: XCTestCase {
    let seeds: [String] = [
        #"{"id":1,"type":"hello","user":"alice","token":"abc","client":"t1"}"#,
        #"{"id":2,"type":"submit","doc":"d","tx":"x","base":3,"ops":[{"op":"insert","node":"t","pos":0,"text":"héllo 😀"}]}"#,
        #"{"id":3,"type":"submit","doc":"d","tx":"y","base":0,"ops":[{"op":"create","node":"n","parent":"root","kind":"view","frame":[0,0.5,1e3,-2],"props":{"a":[1,{"b":null}]}}]}"#,
        #"{"id":4,"type":"open","doc":"d","since":12}"#,
    ]

    func mutate(_ bytes: [UInt8], _ rng: inout SeededRandom) -> [UInt8] {
        var b = bytes
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            guard !b.isEmpty else { break }
            let i = Int.random(in: 0..<b.count, using: &rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: b[i] = UInt8.random(in: 0...255, using: &rng)
            case 1: b.remove(at: i)
            case 2: b.insert(Array("{}[]\",:\\0e-".utf8).randomElement(using: &rng)!, at: i)
            case 3: b.insert(contentsOf: b[i..<min(b.count, i + 8)], at: i)
            default: b = Array(b[..<i])
            }
        }
        return b
    }

    func testMutatedRequestsDecodeOrFailCleanly() {
        var rng = SeededRandom(seed: 7)
        var decoded = 0, failed = 0
        for _ in 0..<20_000 {
            let line = mutate(Array(seeds.randomElement(using: &rng)!.utf8), &rng)
            switch Request.decode(line, maxDepth: 64) {
            case let .success(r):
                decoded += 1
                if r.type == "submit" { _ = try? Op.parseList(r.body["ops"], limits: Limits()) }
            case let .failure(f):
                failed += 1
                XCTAssertTrue([.badFrame, .badRequest, .tooLarge].contains(f.error.code), "\(f.error)")
                XCTAssertFalse(f.error.message.isEmpty)
            }
        }
        XCTAssertGreaterThan(decoded, 100)
        XCTAssertGreaterThan(failed, 100)
    }

    func testRandomBytesThroughTheFrameDecoderNeverCrashOrExceedTheLimit() {
        var rng = SeededRandom(seed: 11)
        var decoder = FrameDecoder(maxFrameBytes: 256)
        for _ in 0..<5_000 {
            let chunk = (0..<Int.random(in: 0...300, using: &rng)).map { _ -> UInt8 in
                Int.random(in: 0..<20, using: &rng) == 0 ? 0x0A : UInt8.random(in: 0...255, using: &rng)
            }
            decoder.feed(chunk) { frame in
                if case let .line(l) = frame {
                    XCTAssertLessThanOrEqual(l.count, 256)
                    XCTAssertFalse(l.contains(0x0A))
                    _ = Request.decode(l, maxDepth: 64)
                }
            }
            XCTAssertLessThanOrEqual(decoder.bufferedBytes, 256)
        }
    }

    func testValuesSurviveEncodeThenParse() throws {
        var gen = OpGenerator(seed: 3)
        for _ in 0..<2_000 {
            let v: JSON = .array([gen.value(), .object(JSONObject([(key: "k\(gen.counter)", value: gen.value())]))])
            XCTAssertEqual(try JSONParser.parse(JSONWriter.encode(v)), v)
        }
    }
}
